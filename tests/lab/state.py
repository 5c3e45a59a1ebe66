"""What a running (or crashed) lab left on this machine, recorded as it is created.

`<lab>/state.json` lists the processes started (pid + start time), the mount
namespaces of the hosts, bridges, mount-point directories created on the machine and
the hosts' folders, so that `down` can remove exactly these, even after a crash.
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
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, path: Path) -> LabState:
        """The recorded state, or an empty one."""
        if not path.is_file():
            return cls(path)
        data = json.loads(path.read_text())
        procs = [ProcRecord(**p) for p in data.get("procs", [])]
        return cls(
            path,
            procs,
            data.get("namespaces", []),
            data.get("bridges", []),
            data.get("created_dirs", []),
            data.get("hosts", {}),
        )

    def save(self) -> None:
        """Write the state file (atomically)."""
        data = {
            "procs": [p.to_json() for p in self.procs],
            "namespaces": self.namespaces,
            "bridges": self.bridges,
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
        """Record a bridge or a created directory."""
        with self.lock:
            target = self.bridges if kind == "bridge" else self.created_dirs
            if value not in target:
                target.append(value)
            self.save()
