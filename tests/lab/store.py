"""A model store host for the lab: sshd and rsync over a models directory, nothing else.

Started for the test module that copies models (`model_store` in tests/lab/fixtures.py),
not by `up`: the other modules have no use for it. Like every lab host it runs in a mount
namespace of its own (its `models/` folder is its /models) and its sshd listens on port
2222 of its slot address (nominal 127.0.0.15). It accepts its own key, which the GPU hosts
use (`<lab>/ssh/store_key`, with `<lab>/ssh/store_known_hosts` pinning its host key), and
the lab's client key, so tests can look at it. Its models are small: a real config.json
beside sparse shards (`tests.lab.models.write_shards`) of a few dozen MiB, so copies over
loopback take a second; `huge` is one whose shard claims 10 TiB (sparse: a few KiB of disk),
more than any lab filesystem holds. `slow(mbps)` makes the store send at most that rate
(its `rsync` is a wrapper that adds `--bwlimit`), so a test can stop a copy midway.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import models, procs, sshcfg
from .bringup import port_open, procs_path, wait_for
from .hosts import LabHost, write_script
from .spec import SSH_PORT, HostSpec

if TYPE_CHECKING:
    from .lab import Lab

SPEC = HostSpec("store", "127.0.0.15", 5, image_tags=())
SMALL = ("TinyLlama-1.1B-Chat-FP8", 48 * 2**20, 2)  # (name, bytes of weights, shards)
HUGE = ("Qwen3-32B", 10 * 2**40, 1)
MiB = 2**20


@dataclass
class ModelStore:
    """A running store: where it is, the key and known_hosts the GPU hosts use."""

    host: LabHost
    key: Path
    known_hosts: Path
    proc: subprocess.Popen[bytes]
    record: procs.ProcRecord

    @property
    def address(self) -> str:
        """Its address in this lab."""
        return self.host.address

    def slow(self, mbps: float | None) -> None:
        """Send at most `mbps` MB/s from now on (None: as fast as it can)."""
        limit = self.host.root / "bwlimit"
        if mbps is None:
            limit.unlink(missing_ok=True)
        else:
            limit.write_text(f"{int(mbps * 1000)}\n")

    def stop(self, lab: Lab) -> None:
        """Stop its sshd (the process this module started) and take it out of the lab's
        state file, which lists only what still runs (the lab's own checks rely on it)."""
        self.proc.terminate()
        self.proc.wait(timeout=10)
        with lab.state.lock:
            lab.state.procs = [r for r in lab.state.procs if r != self.record]
            lab.state.save()
        if self.proc in lab.children:
            lab.children.remove(self.proc)
        shutil.rmtree(self.host.run_dir, ignore_errors=True)  # what start() made, by its path


def write_models(models_dir: Path, corpus: Path) -> None:
    """The store's models: TinyLlama's config.json with small shards, and a huge one."""
    entries = models.catalog()
    for name, weights, shards in (SMALL, HUGE):
        target = models_dir / name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        config = models.config_source(str(entries[SMALL[0]]["config"]), corpus)
        shutil.copyfile(config, target / "config.json")
        models.write_shards(target, weights, shards)


def start(lab: Lab) -> ModelStore:
    """Bring the store up in `lab`: folders, models, keys, its sshd; wait for it."""
    host = LabHost(SPEC, lab.root / "hosts" / SPEC.name, lab.slot)
    for sub in ("models", "srv-fleet", "logs", "bin"):
        (host.root / sub).mkdir(parents=True, exist_ok=True)
    host.run_dir.mkdir(parents=True, exist_ok=True)
    (host.root / "bashrc").write_text("# ~/.bashrc of root on the lab's model store\n")
    write_models(host.models_dir, lab.corpus)
    write_script(
        host.bin_dir / "rsync",
        f"#!/bin/sh\nlimit=$(cat {host.root / 'bwlimit'} 2>/dev/null)\n"
        'exec /usr/bin/rsync ${limit:+--bwlimit=$limit} "$@"\n',
    )
    pub = sshcfg.keygen(host.root / "ssh_host_ed25519_key", "root@store")
    key = lab.ssh_dir / "store_key"
    store_pub = sshcfg.keygen(key, "fleet-hosts-to-store")
    authorized = host.root / "authorized_keys"
    authorized.write_text(f"{store_pub}\n{(lab.ssh_dir / 'authorized_keys').read_text()}")
    known = lab.ssh_dir / "store_known_hosts"
    known.write_text(sshcfg.known_hosts_line(host, pub) + "\n")
    config = host.root / "sshd_config"
    config.write_text(sshcfg.sshd_config(host, authorized))
    command = ["/usr/sbin/sshd", "-D", "-e", "-f", str(config)]
    record, proc = procs.spawn(
        "sshd",
        host.name,
        procs.in_host_namespace(host.root, command),
        host.root / "logs" / "sshd.log",
        {"PATH": procs_path(), "LANG": "C.UTF-8"},
    )
    lab.children.append(proc)
    lab.state.add_proc(record)
    wait_for(
        f"sshd of the store (see {host.root}/logs/sshd.log)",
        lambda: port_open(host.address, SSH_PORT),
        30,
    )
    return ModelStore(host=host, key=key, known_hosts=known, proc=proc, record=record)
