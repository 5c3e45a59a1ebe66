"""Every value that reaches a host's shell is one argument: quoted, never spliced.

Two nets. A lint over the source: each f-string handed to a session's `run`/`check` (and
each f-string a command builder returns) interpolates only quoted values (`shlex.quote`,
`shlex.join`, a builder that quotes), module constants, ints, or locals assigned from
those. A table: hostile names go through every command builder and come back, parsed by
`shlex.split` as the shell would, as one word.
"""

from __future__ import annotations

import ast
import shlex
from pathlib import Path

import pytest

from fleet.facts.instance import Instance
from fleet.names import SEAT_LABEL
from fleet.observed.assemble import observed_seat
from fleet.render import model_fetch
from fleet.runtimes.systemd import SystemdHostSettings
from fleet.spec.model_origin import ModelOrigin
from fleet.spec.models import Host, HostSsh
from reconciler.runtimes import compose as compose_runtime
from reconciler.runtimes import systemd as systemd_runtime
from tests.fakes.host import FakeHost
from tests.unit.render.test_compose import example

ROOT = Path(__file__).resolve().parents[2]
QUOTING = {  # calls that quote what they are given (each is in the table below, or quote())
    "quote",
    "join",
    "systemctl",
    "compose",
    "restart_command",
    "_with_port",
    "_own_temporary",
    "temporary_glob",
}
SAFE_TYPES = {"int", "float"}
HOSTILE = "x;touch${IFS}pwned;#$(id)`id` 'q\"\n"  # a name: no slash


def _safe(node: ast.expr, local: dict[str, ast.expr], ints: set[str], seen: set[str]) -> bool:
    """Whether an interpolated expression is quoted, a constant, an int or built of them."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in QUOTING or name == "int"
    if isinstance(node, ast.Attribute):
        return node.attr.isupper()
    if isinstance(node, ast.Name):
        if node.id.isupper() or node.id in ints:
            return True
        if node.id in local and node.id not in seen:
            return _safe(local[node.id], local, ints, seen | {node.id})
        return False
    if isinstance(node, ast.IfExp):
        return _safe(node.body, local, ints, seen) and _safe(node.orelse, local, ints, seen)
    if isinstance(node, ast.JoinedStr):
        return all(
            _safe(v.value, local, ints, seen)
            for v in node.values
            if isinstance(v, ast.FormattedValue)
        )
    return isinstance(node, ast.Constant)


def _unquoted(function: ast.FunctionDef) -> list[str]:
    local = {
        t.id: n.value
        for n in ast.walk(function)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    args = [*function.args.args, *function.args.kwonlyargs]
    ints = {
        a.arg for a in args if a.annotation is not None and ast.unparse(a.annotation) in SAFE_TYPES
    }
    commands: list[ast.expr] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            if node.func.attr in ("run", "check") and getattr(receiver, "id", "") == "conn":
                commands += node.args[:1]
        if isinstance(node, ast.Return) and function.name.endswith(("command", "listing")):
            commands += [node.value] if node.value is not None else []
    return [
        f"{function.name}: {{{ast.unparse(v)}}}" for c in commands for v in _spliced(c, local, ints)
    ]


def _spliced(command: ast.expr, local: dict[str, ast.expr], ints: set[str]) -> list[ast.expr]:
    """The values a command string splices in unquoted (a string built by `+` or an
    f-string; a builder's result, passed whole, is checked where it is built)."""
    if isinstance(command, ast.BinOp):
        return _spliced(command.left, local, ints) + _spliced(command.right, local, ints)
    if not isinstance(command, ast.JoinedStr):
        return []
    values = [v.value for v in command.values if isinstance(v, ast.FormattedValue)]
    return [v for v in values if not _safe(v, local, ints, set())]


def test_no_command_interpolates_an_unquoted_value() -> None:
    found = []
    for path in sorted([*ROOT.glob("reconciler/**/*.py"), *ROOT.glob("fleet/render/*.py")]):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                found += [f"{path.relative_to(ROOT)}: {b}" for b in _unquoted(node)]
    assert found == []


def test_the_lint_sees_an_unquoted_seat() -> None:
    source = "def port_of(conn, seat):\n    conn.run(f'docker ps --filter label=x={seat}')\n"
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    assert _unquoted(function) == ["port_of: {seat}"]


class Recorder(FakeHost):
    """A fake host that keeps the commands it was sent."""

    def __init__(self) -> None:
        super().__init__("tower")
        self.sent: list[str] = []

    def run(self, command: str, *, stdin: str | None = None, timeout: float | None = None):  # type: ignore[no-untyped-def]
        self.sent.append(command)
        return super().run(command, stdin=stdin, timeout=timeout)


def test_a_seat_name_from_a_host_reaches_docker_ps_as_one_argument() -> None:
    host = Recorder()
    fleet = example()
    compose_runtime.ComposeAdapter().port_of(host, fleet.hosts["tower"], HOSTILE)
    assert shlex.split(host.sent[-1])[:4] == [
        "docker",
        "ps",
        "--filter",
        f"label={SEAT_LABEL}={HOSTILE}",
    ]


def tmp(name: str) -> str:
    """A fetch's temporary directory for /models/<name>."""
    return model_fetch.temporary_prefix(f"/models/{name}") + "AbCdE01234"


def test_restoring_units_removes_the_unit_file_listed_and_no_other() -> None:
    """A unit file named with a space is one name: restore, which removes fleet's units
    that the snapshot did not have, never takes a word of it for another unit's file."""
    units = "/etc/systemd/system"
    host = FakeHost("rtx3090", docker=False)
    host.files[f"{units}/fleet-zz sshd.service"] = "[Service]\nExecStart=/bin/true\n"
    host.files[f"{units}/sshd.service"] = "[Service]\nExecStart=/usr/sbin/sshd -D\n"
    spec = Host(name="rtx3090", ssh=HostSsh(alias="rtx3090"), address="10.0.0.2", runtime="systemd")
    assert "fleet-zz sshd.service" in systemd_runtime.SystemdAdapter().snapshot(host, spec) or ""
    systemd_runtime.SystemdAdapter().restore(host, spec, None)
    assert sorted(p for p in host.files if p.startswith(units)) == [f"{units}/sshd.service"]


BUILDERS = [
    (
        "systemctl",
        lambda v: systemd_runtime.systemctl("restart", v),
        ["systemctl", "restart", HOSTILE],
    ),
    (
        "restart",
        lambda v: compose_runtime.ComposeAdapter().restart_command(v),
        ["docker", "restart", HOSTILE],
    ),
    ("unused-env", lambda v: systemd_runtime.unused_env_files(v, SystemdHostSettings()), None),
    ("finish", lambda v: model_fetch.finish_command(f"/models/{v}", tmp(v)), None),
    ("finish-file", lambda v: model_fetch.finish_command(f"/models/{v}.gguf", tmp(v)), None),
    ("digest", lambda v: model_fetch.digest_command("/models/m", [v], tmp("m")), None),
    ("installed-digest", lambda v: model_fetch.installed_digest_command(f"/models/{v}", [v]), None),
    ("landed", lambda v: model_fetch.landed_listing(f"/models/{v}", tmp(v)), None),
    ("temporary", lambda v: model_fetch.temporary_command(f"/models/{v}"), None),
    (
        "copy",
        lambda v: model_fetch.copy_command(
            ModelOrigin(source="hf://a/b"), {}, f"/models/{v}", tmp(v)
        ),
        None,
    ),
]


@pytest.mark.parametrize(
    ("build", "expected"), [b[1:] for b in BUILDERS], ids=[b[0] for b in BUILDERS]
)
def test_builders_keep_a_hostile_value_in_one_word(build, expected) -> None:  # type: ignore[no-untyped-def]
    words = shlex.split(build(HOSTILE))
    if expected is not None:
        assert words == expected
    assert any(HOSTILE in w for w in words)
    assert not any(w.startswith(("touch", "pwned", "'q")) for w in words)


def test_a_label_not_shaped_like_a_seat_name_is_not_a_managed_seat() -> None:
    labels = {SEAT_LABEL: "x;touch /tmp/pwned;#", "fleet.managed": "true"}
    container = Instance(id="f" * 64, name="evil", state="running", image="i", labels=labels)
    seat = observed_seat(container, engine=None, gpus=(), vram_mib=0)
    assert (seat.name, seat.managed) == ("evil", False)
    fine = observed_seat(
        container.model_copy(update={"labels": {**labels, SEAT_LABEL: "char-rp_2.b"}}),
        engine=None,
        gpus=(),
        vram_mib=0,
    )
    assert (fine.name, fine.managed) == ("char-rp_2.b", True)
