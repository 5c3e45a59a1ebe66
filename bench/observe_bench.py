"""Benchmark `fleet inventory` on K lab hosts against the SSH floors (issue: observe).

For each K (default 1, 4, 8) it brings up a lab of K GPU hosts with two engine seats each
plus the gateway, then prints the median wall time (and min-max) over R rounds, each
round running each of these once (so that a noisy machine slows all of them alike):
- K parallel `ssh HOST true`: the connection floor;
- K parallel `ssh HOST sh -s < fact-script`: the honest floor for the same facts;
- `fleet inventory --json` as a user runs it (interpreter start-up included);
- `observe_fleet` in-process (the observation alone), with its round trips per host;
and each one's ratio to the floors and to the in-process figure (target: the CLI within
1.2x of it).

usage: .venv/bin/python -m bench.observe_bench [--hosts 1,4,8] [--runs 5]
Takes the lab over (it is brought down at the end). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from fleet.runtimes import host_script
from fleet.runtimes.compose import render_compose
from fleet.spec.models import DesiredFleet
from reconciler.adapters.connections import Connections
from reconciler.workflows.desired import require_valid
from reconciler.workflows.observe import observe_fleet
from tests.lab.lab import Lab

SEATS = (
    ("coder", 0, "/models/TinyLlama-1.1B-Chat-FP8", 2048, "0.02"),
    ("embed", 1, "/models/stories42M-embed", 1024, "0.01"),
)


def write_desired(root: Path, lab: Lab, seated: list[str]) -> Path:
    """A desired/ of every lab host, two seats on each `seated` host, and the gateway."""
    desired = root / "desired"
    (desired / "hosts").mkdir(parents=True)
    (desired / "seats").mkdir()
    (desired / "fleet.yaml").write_text(
        "name: bench\nimages: {digest: ignore}\nconcurrency_band: {min: 0.5, max: 500}\n"
    )
    for host in lab.hosts.values():
        gpus = "".join(
            f"\n  - {{index: {g.index}, name: {g.name}, memory: {g.memory_mib}MiB}}"
            for g in host.spec.gpus
        )
        (desired / "hosts" / f"{host.name}.yaml").write_text(
            f"ssh: {{alias: {host.name}}}\naddress: {host.address}\n"
            f"publish_address: {host.address}\ngpus:{gpus or ' []'}\n"
        )
        if host.name not in seated:
            continue
        for name, gpu, model, context, fraction in SEATS:
            port = 8000 + 10 * (seated.index(host.name) + 1) + gpu
            (desired / "seats" / f"{name}-{host.name}.yaml").write_text(
                f"host: {host.name}\ngpus: [{gpu}]\nimage: vllm/vllm-openai:v0.18.0\n"
                f"model: {model}\nserved_name: {name}-{host.name}\ncontext: {context}\n"
                f"gpu_memory_utilization: {fraction}\nport: {port}\n"
            )
    gateway = lab.gateway_host
    assert gateway is not None
    (desired / "gateway.yaml").write_text(
        f"host: {gateway.name}\nconfig_path: /etc/litellm/config.yaml\nurl: {lab.gateway_url}\n"
        "master_key: ${LITELLM_MASTER_KEY}\nrestart: {command: fleet-gateway-restart}\n"
    )
    return desired


def parallel(commands: list[list[str]], stdin: list[str | None]) -> None:
    """Run commands at once and wait for all; fail loudly if one fails."""
    procs = [
        subprocess.Popen(
            c, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        for c in commands
    ]
    for proc, text in zip(procs, stdin, strict=True):
        _, err = proc.communicate(text)
        if proc.returncode != 0:
            raise SystemExit(f"{proc.args}: exit {proc.returncode}: {err.strip()}")


def timed_rounds(actions: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Wall seconds of each action, run in rounds (one of each per round) so that a machine
    that slows down or speeds up meanwhile weighs on every figure alike."""
    times: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(runs):
        for name, action in actions.items():
            start = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - start)
    return times


def bench(k: int, runs: int) -> list[tuple[str, list[float], str]]:
    """Every measurement for K hosts."""
    lab = Lab(gpu_hosts=k)
    with lab.locked():  # a test session using the lab waits, and so does this
        lab.up()
        try:
            with tempfile.TemporaryDirectory() as scratch:
                seated = [h.name for h in lab.hosts.values() if not h.spec.gateway]
                return on_lab(lab, Path(scratch), seated, runs)
        finally:
            lab.down()


def on_lab(
    lab: Lab, scratch: Path, seated: list[str], runs: int
) -> list[tuple[str, list[float], str]]:
    """Every measurement on a lab that is up, with two seats on each `seated` host (the
    suite's smoke run: its own lab's tower, one round)."""
    os.environ.update(lab.env())
    desired = write_desired(scratch, lab, seated)
    fleet, _ = require_valid(desired)
    for name in seated:
        lab.compose_up(name, f"fleet-{name}", render_compose(fleet, name))
    return measure(lab, desired, fleet, seated, runs)


def measure(
    lab: Lab, desired: Path, fleet: object, seated: list[str], runs: int
) -> list[tuple[str, list[float], str]]:
    """The four timings for one lab."""

    assert isinstance(fleet, DesiredFleet)
    gpu_hosts = [lab.hosts[name] for name in seated]
    k = len(gpu_hosts)
    ssh = ["ssh", "-F", str(lab.ssh_config)]
    script = {
        h.name: host_script(fleet.hosts[h.name], [s.model for s in fleet.seats_on(h.name)])
        for h in gpu_hosts
    }
    trips: Counter[str] = Counter()

    def observe() -> None:
        with Connections(fleet, lab.ssh_config) as connections:
            observe_fleet(fleet, connections)
            trips.clear()
            # one exec, SFTP read or channel is one round trip; an http entry rides on its
            # tcp channel and the connect is the floor's too
            trips.update(
                h for h, kind, _ in connections.operations() if kind not in ("connect", "http")
            )

    cli = [sys.executable, "-m", "reconciler", "inventory", "--json", "-d", str(desired)]
    times = timed_rounds(
        {
            "parallel ssh HOST true": lambda: parallel(
                [[*ssh, h.name, "true"] for h in gpu_hosts], [None] * k
            ),
            "parallel ssh, fact script": lambda: parallel(
                [[*ssh, h.name, "sh -s"] for h in gpu_hosts], [script[h.name] for h in gpu_hosts]
            ),
            "fleet inventory --json (CLI)": lambda: subprocess.run(
                cli, capture_output=True, check=False
            ),
            "observe_fleet in-process": observe,
        },
        runs,
    )
    per_host = ", ".join(f"{h}={n}" for h, n in sorted(trips.items()))
    notes = {"observe_fleet in-process": f"round trips: {per_host}"}
    return [(name, values, notes.get(name, "")) for name, values in times.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="1,4,8")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for k in [int(x) for x in args.hosts.split(",")]:
        rows = bench(k, args.runs)
        floor = statistics.median(rows[0][1])
        script_floor = statistics.median(rows[1][1])
        in_process = statistics.median(rows[3][1])
        print(f"\n== {k} GPU host(s), 2 seats each, median of {args.runs} rounds")
        for name, times, note in rows:
            median = statistics.median(times)
            print(
                f"{name:32} {median:6.2f}s [{min(times):.2f}-{max(times):.2f}]  "
                f"{median / floor:4.1f}x ssh-true  {median / script_floor:4.2f}x fact-script  "
                f"{median / in_process:4.2f}x in-process" + (f"  {note}" if note else "")
            )


if __name__ == "__main__":
    main()
