"""parse_cgroup on each /proc/<pid>/cgroup shape of FACTS.md §5 (Docker's documented paths),
and parse_cgroup_unit on systemd services' paths.

The Docker lines follow cgroups(7) (`ID:controllers:path`) and the container locations in
Docker's runmetrics docs, with a made-up container id; one service file is recorded on a
lab systemd host (tests/corpus/systemd, see SOURCES.md).
"""

from __future__ import annotations

import pytest

from fleet.facts.cgroup import parse_cgroup, parse_cgroup_unit
from tests.conftest import CORPUS

CORPUS_SYSTEMD = CORPUS / "systemd"

ID = "f66f3e77" + "0123456789abcdef" * 3 + "01234567"
OTHER = "a" * 64

CASES = [
    (
        "v1-cgroupfs",
        f"12:pids:/docker/{ID}\n11:memory:/docker/{ID}\n1:name=systemd:/docker/{ID}\n",
        ID,
    ),
    (
        "v1-cgroupfs-hybrid",
        f"12:pids:/docker/{ID}\n1:name=systemd:/docker/{ID}\n0::/docker/{ID}\n",
        ID,
    ),
    ("v1-systemd", f"10:memory:/system.slice/docker-{ID}.scope\n", ID),
    ("v2-cgroupfs", f"0::/docker/{ID}\n", ID),
    ("v2-systemd", f"0::/system.slice/docker-{ID}.scope\n", ID),
    (
        "v2-systemd-rootless",
        f"0::/user.slice/user-1000.slice/user@1000.service/docker-{ID}.scope\n",
        ID,
    ),
    ("docker-in-docker-outermost", f"0::/docker/{ID}/docker/{OTHER}\n", ID),
    ("inside-private-namespace", "0::/\n", None),
    ("host-process", "0::/user.slice/user-1000.slice/session-3.scope\n", None),
    ("systemd-service", "0::/system.slice/containerd.service\n", None),
    ("podman", f"0::/machine.slice/libpod-{ID}.scope\n", None),
    (
        "kubernetes-containerd",
        f"0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-{ID}.scope\n",
        None,
    ),
    ("short-id", "0::/docker/f66f3e77\n", None),
    ("uppercase-id", f"0::/docker/{ID.upper()}\n", None),
    ("empty", "", None),
    ("garbage", "docker docker/\n::\n", None),
]


@pytest.mark.parametrize(
    ("text", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_container_id(text: str, expected: str | None) -> None:
    assert parse_cgroup(text) == expected


SERVICE_CASES = [
    (
        "v1-nspawn-recorded",
        (CORPUS_SYSTEMD / "cgroup-v1-service-in-nspawn.txt").read_text(),
        "rec-demo.service",
    ),
    ("v2-system-service", "0::/system.slice/fleet-coder.service\n", "fleet-coder.service"),
    (
        "v2-template-instance-in-own-slice",
        "0::/system.slice/system-fleet.slice/fleet-coder@8081.service\n",
        "fleet-coder@8081.service",
    ),
    (
        "v1-named-hierarchy",
        "1:name=systemd:/system.slice/llama-server.service\n",
        "llama-server.service",
    ),
    ("docker-container-systemd-driver", f"0::/system.slice/docker-{ID}.scope\n", None),
    ("docker-container-cgroupfs", f"12:pids:/docker/{ID}\n0::/docker/{ID}\n", None),
    (
        "user-service",
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.service\n",
        None,
    ),
    ("session-scope", "0::/user.slice/user-1000.slice/session-3.scope\n", None),
    ("init-scope", "0::/init.scope\n", None),
    ("inside-private-namespace", "0::/\n", None),
    ("empty", "", None),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [case[1:] for case in SERVICE_CASES],
    ids=[case[0] for case in SERVICE_CASES],
)
def test_service_unit(text: str, expected: str | None) -> None:
    assert parse_cgroup_unit(text) == expected
