"""What a running (or crashed) lab left on this machine, recorded as it is created.

`<lab>/state.json` names the lab's slot and lists the processes started (pid + start
time), the mount namespaces of the hosts, bridges, the address pools of the hosts'
engines, mount-point directories created on the machine and the hosts' folders, so
that `down` can remove exactly these, even after a crash, and nothing of another lab.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .procs import ProcRecord


@dataclass
class LabState:
    """The lab's footprint on the machine."""

    path: Path
    procs: list[ProcRecord] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    bridges: list[str] = field(default_factory=list)
    created_dirs: list[str] = field(default_factory=list)
    hosts: dict[str, dict[str, str]] = field(default_factory=dict)
    slot: int | None = None  # None: nothing claimed (or a state from before slots)
    pools: list[str] = field(default_factory=list)  # CIDRs whose br-* bridges are ours
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def root(self) -> Path:
        """The lab directory this state belongs to."""
        return self.path.parent

    @classmethod
    def load(cls, path: Path) -> LabState:
        """The recorded state, or an empty one."""
        if not path.is_file():
            return cls(path)
        data = json.loads(path.read_text())
        slot = data.get("slot")
        return cls(
            path,
            procs=[ProcRecord(**p) for p in data.get("procs", [])],
            namespaces=data.get("namespaces", []),
            bridges=data.get("bridges", []),
            created_dirs=data.get("created_dirs", []),
            hosts=data.get("hosts", {}),
            slot=slot if isinstance(slot, int) else None,
            pools=data.get("pools", []),
        )

    def save(self) -> None:
        """Write the state file (atomically)."""
        data = {
            "slot": self.slot,
            "procs": [p.to_json() for p in self.procs],
            "namespaces": self.namespaces,
            "bridges": self.bridges,
            "pools": self.pools,
            "created_dirs": self.created_dirs,
            "hosts": self.hosts,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)  # any entry point may be first
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.rename(self.path)

    def add_proc(self, record: ProcRecord, namespace: str | None = None) -> None:
        """Record a started process (and its mount namespace) right away."""
        with self.lock:
            if record not in self.procs:
                self.procs.append(record)
            if namespace and namespace not in self.namespaces:
                self.namespaces.append(namespace)
            self.save()

    def add(self, kind: str, value: str) -> None:
        """Record a bridge, an address pool or a created directory."""
        targets = {"bridge": self.bridges, "pool": self.pools, "dir": self.created_dirs}
        with self.lock:
            target = targets[kind]
            if value not in target:
                target.append(value)
            self.save()
