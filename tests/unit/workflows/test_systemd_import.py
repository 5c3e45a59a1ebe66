"""`fleet import` of a hand-made llama-server unit on a fake systemd host, then what follows.

Import observes the host as `fleet import` does (a host where Docker does not answer is
observed again as a systemd host), writes desired/ for it, and plans 0 with the unit left
running at the same MainPID; the first change then takes it over: fleet's own unit
starts, and only once it is healthy is the hand-made one disabled and stopped.
watchdog restarts a stuck unit through the runtime adapter (`systemctl restart`).
"""

from __future__ import annotations

from pathlib import Path

import git

from fleet.render.desired_files import HostAccess, import_fleet
from reconciler.workflows.importer import _under_other_runtimes, errors, fleet_of, validate_files
from reconciler.workflows.observe import observe_fleet
from tests.fakes.host import FakeHost, FakeSessions
from tests.fakes.units import HAND_MADE, gguf_file, start
from tests.unit.cli.fake_fleet import FakeFleet
from tests.unit.workflows.test_systemd_seats import MEMINFO

UNIT = "/etc/systemd/system/llama-server.service"


def apu() -> FakeHost:
    """A CPU host without Docker, its llama-server.service made and started by hand."""
    model = "qwen3-0.6b-q4_k_m.gguf"
    host = FakeHost("apu", gpus=0, docker=False, ggufs={f"/models/{model}": gguf_file(model)})
    host.files |= {UNIT: HAND_MADE, "/proc/meminfo": MEMINFO}
    host.systemd.reload(host.files)
    assert start(host, "llama-server").exit_status == 0
    host.systemd.units["llama-server.service"].enabled = True
    return host


def imported(host: FakeHost, tmp_path: Path) -> FakeFleet:
    """What `fleet import --host apu` writes, committed as a fleet repository."""
    bare = fleet_of(["apu"], None)
    sessions = FakeSessions({"apu": host})
    observation = _under_other_runtimes(bare, sessions, observe_fleet(bare, sessions))  # type: ignore[arg-type]
    result = import_fleet(observation, {"apu": HostAccess(alias="apu", address="10.0.0.33")})
    assert errors(validate_files(result.files)) == []
    root = tmp_path / "fleet-repo"
    for rel, text in result.files.items():
        (root / "desired" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "desired" / rel).write_text(text)
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "fleet tests")
        config.set_value("user", "email", "tests@fleet.invalid")
    fake = FakeFleet(root=root, hosts={"apu": host})
    fake.commit("imported")
    return fake


def test_import_adopts_the_unit_in_place_then_a_change_takes_it_over(tmp_path: Path) -> None:
    host = apu()
    pid = host.systemd.units["llama-server.service"].pid
    fake = imported(host, tmp_path)
    assert 'runtime: "systemd"' in (fake.desired / "hosts" / "apu.yaml").read_text()
    (seat_file,) = (fake.desired / "seats").glob("*.yaml")
    assert "--port" not in seat_file.read_text() and "port: 8072" in seat_file.read_text()
    plan = fake.fleet("plan")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert host.systemd.units["llama-server.service"].pid == pid and host.started == [
        "llama-server.service"
    ], "adopted in place: nothing restarted"

    fake.edit(f"seats/{seat_file.name}", "context: 4096", "context: 2048")
    out = fake.fleet("apply", "--auto-approve", "--timeout", "60")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "remove hand-made container llama-server" in out.stdout
    mine = f"fleet-{seat_file.stem}.service"
    assert host.started[-1] == mine and host.systemd.units[mine].running
    hand = host.systemd.units["llama-server.service"]
    assert (hand.running, hand.enabled) == (False, False), "disabled and stopped"
    assert host.removed == ["llama-server.service"], "only once the new unit was healthy"
    assert fake.fleet("plan").returncode == 0


def test_import_keeps_the_hand_made_units_own_verbosity_and_flags(tmp_path: Path) -> None:
    # A hand-made server at a verbosity of its own and a flag fleet has no field for: the
    # imported seat keeps both as extra_args (fleet renders -lv 4 only where a seat sets
    # none), and the plan after import changes nothing.
    host = apu()
    made = HAND_MADE.replace("--metrics\n", "--metrics -lv 2 --batch-size 4096\n")
    host.files[UNIT] = made
    host.systemd.reload(host.files)
    assert start(host, "llama-server").exit_status == 0
    pid = host.systemd.units["llama-server.service"].pid
    fake = imported(host, tmp_path)
    (seat_file,) = (fake.desired / "seats").glob("*.yaml")
    text = seat_file.read_text()
    assert "extra_args:" in text, text
    extra = text.split("extra_args:", 1)[1]
    assert all(f'"{flag}"' in extra for flag in ("-lv", "2", "--batch-size", "4096")), text
    plan = fake.fleet("plan")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert host.systemd.units["llama-server.service"].pid == pid, "adopted in place"
