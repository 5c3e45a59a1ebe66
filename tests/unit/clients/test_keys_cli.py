"""`fleet keys rotate|confirm|revoke` on fake hosts: a rotation keeps the old key working
until the new one is delivered and verified; a manual client's key is shown once, on a
terminal only; revoking refuses at once."""

from __future__ import annotations

import io

import pytest

from fleet.facts.client_keys import hash_key
from reconciler.cli import run
from reconciler.cli.app import CliContext
from reconciler.cli.output import Output
from tests.unit.cli.fake_fleet import FakeFleet
from tests.unit.clients.test_client_apply import (
    ISSUED,
    KEY_FILE,
    apply,
    delivered,
    key_file,
)
from tests.unit.clients.test_client_apply import fake as fake

ENV = "/etc/environment"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def on_terminal(fake: FakeFleet, *args: str) -> tuple[int, str]:
    out = Terminal()
    err = io.StringIO()
    context = CliContext(Output(out, err), fake.sessions, fake.clock)
    code = run([*args, "--desired", str(fake.desired)], context)
    assert code == 0, out.getvalue() + err.getvalue()
    return code, out.getvalue()


def test_rotation_delivers_the_new_key_while_the_old_one_works(fake: FakeFleet) -> None:
    apply(fake)
    old = delivered(fake, "agent-box", ENV, "LITELLM_API_KEY")
    agent, gateway = fake.hosts["agent-box"], fake.hosts["gateway"]
    held_at_delivery: list[tuple[str, ...]] = []
    write = agent.write_file_atomic

    def watching(path: str, text: str, mode: int | None = None, **kw: str | None) -> None:
        held_at_delivery.append(key_file(fake).clients["tanko"].hashes)
        write(path, text, mode, **kw)

    agent.write_file_atomic = watching  # type: ignore[method-assign]
    result = fake.fleet("keys", "rotate", "tanko")
    assert result.returncode == 0, result.stdout + result.stderr
    new = delivered(fake, "agent-box", ENV, "LITELLM_API_KEY")
    assert new != old
    assert held_at_delivery == [(hash_key(old), hash_key(new))], "both work while it changes"
    assert key_file(fake).clients["tanko"].hashes == (hash_key(new),), "then the old is refused"
    assert old not in result.stdout + result.stderr and new not in result.stdout + result.stderr
    assert gateway.files[KEY_FILE].count("sha256:") == 2, "tanko and ci, one key each"


def test_a_manual_key_is_shown_once_on_a_terminal_and_never_elsewhere(fake: FakeFleet) -> None:
    apply(fake)
    piped = fake.fleet("keys", "rotate", "phone")
    assert "fleet keys rotate phone` in a terminal" in piped.stdout
    assert not ISSUED.search(piped.stdout + piped.stderr) and "phone" not in key_file(fake).clients
    code, shown = on_terminal(fake, "keys", "rotate", "phone")
    assert code == 0
    keys = ISSUED.findall(shown)
    assert len(keys) == 1 and "fleet keys confirm phone" in shown
    assert key_file(fake).clients["phone"].hashes == (hash_key(keys[0]),)
    again = on_terminal(fake, "keys", "rotate", "phone")[1]
    second = ISSUED.findall(again)[0]
    assert key_file(fake).clients["phone"].hashes == (hash_key(keys[0]), hash_key(second))
    assert fake.fleet("keys", "confirm", "phone").returncode == 0
    assert key_file(fake).clients["phone"].hashes == (hash_key(second),)


def test_revoke_refuses_at_once_and_the_plan_issues_anew(fake: FakeFleet) -> None:
    apply(fake)
    assert fake.fleet("keys", "revoke", "ci").returncode == 0
    assert "ci" not in key_file(fake).clients
    assert "+ client ci: key for every alias" in fake.fleet("plan").stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [(("rotate",), "name a client, or --all"), (("rotate", "nobody"), "no client 'nobody'")],
    ids=["nothing-named", "unknown-client"],
)
def test_a_rotation_of_nobody_is_one_clear_line(
    fake: FakeFleet, args: tuple[str, ...], message: str
) -> None:
    result = fake.fleet("keys", *args)
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_apply_on_a_terminal_shows_a_manual_key_once(fake: FakeFleet) -> None:
    code, shown = on_terminal(fake, "apply", "--auto-approve", "--timeout", "120")
    keys = ISSUED.findall(shown)
    assert code == 0 and len(keys) == 1, "only the manual client's key is shown"
    assert key_file(fake).clients["phone"].hashes == (hash_key(keys[0]),)
