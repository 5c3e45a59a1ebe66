"""`fleet status` on fake hosts: what an operator reads at a glance, in one round trip per
host, changing nothing.

The engines' gauges are whatever the seat's port answers on /metrics (the fake host serves
a healthy idle engine's, or what a test `serve`s there), read inside the host's fact
script; the bench levels come from a committed BENCH.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.engines import llamacpp, sglang, vllm
from fleet.engines.base import MetricNames
from fleet.names import HASH_LABEL
from fleet.observed.bench import BenchRecord, BenchResult, DecodeStats, render_record
from fleet.report.schema import fleet_schema
from fleet.report.status import FleetStatus
from tests.fakes.channel import Reply
from tests.gitlog import last_commit
from tests.unit.cli.fake_fleet import MASTER_KEY, FakeFleet, make_fleet


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)


def deployed(tmp_path: Path) -> FakeFleet:
    fake = make_fleet(tmp_path)
    fake.deploy("tower")
    fake.deploy("rig")
    fake.route_gateway()
    return fake


def busy(names: MetricNames, running: float, waiting: float, kv: float) -> str:
    """/metrics of a busy engine, under that engine's own names (its oldest KV name)."""
    return (
        f'{names.running[0]}{{model_name="x"}} {running}\n'
        f'{names.waiting[0]}{{model_name="x"}} {waiting}\n'
        f'{names.kv_usage[-1]}{{model_name="x"}} {kv}\n'
    )


def seat_line(text: str, seat: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(seat + " "))
    return line.split()


def test_status_shows_gpus_seats_requests_kv_and_aliases(tmp_path: Path) -> None:
    fake = deployed(tmp_path)
    fake.hosts["tower"].serve(
        "127.0.0.11", 8015, "/metrics", Reply(200, busy(vllm.METRICS, 3, 2, 0.42))
    )
    result = fake.fleet("status")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "GPU 2 NVIDIA FAKE GPU [#####" in out and "20.0/95.6 GiB 21%" in out
    # seat, state, live port, running, waiting, KV in use, concurrency (band), bench, aliases
    assert seat_line(out, "reason")[:8] == [
        "reason",
        "running",
        "8015",
        "3",
        "2",
        "42%",
        "1.50x",
        "(1.2..2.5)",
    ]
    assert seat_line(out, "coder")[:6] == ["coder", "running", "8030", "0", "-", "-"]
    assert "reason -> reason" in out and "clients: none declared" in out
    head = last_commit(fake.root).hexsha[:12]
    assert out.splitlines()[0].startswith(f"lab-fleet  desired {head}  live -")


def test_status_is_one_round_trip_per_host_and_changes_nothing(tmp_path: Path) -> None:
    fake = deployed(tmp_path)
    for host in fake.hosts.values():
        host.journal.clear()
    assert fake.fleet("status").returncode == 0
    for name in ("tower", "rig"):
        journal = fake.hosts[name].journal
        assert journal == [("exec", "sh -s")], journal  # no HTTP of its own, no write
        script = fake.hosts[name].scripts[-1]
        assert "/metrics" in script  # the gauges came in the same round trip
    gateway = fake.hosts["gateway"].journal
    assert not [op for op in gateway if op[0] in ("sftp-write",) or "rm " in op[1]]


def test_status_json_follows_its_schema(tmp_path: Path) -> None:
    fake = deployed(tmp_path)
    result = fake.fleet("status", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    status = FleetStatus.model_validate(document)
    seats = {s.seat: s for h in status.hosts for s in h.seats}
    assert seats["reason"].port == 8015 and seats["reason"].aliases == (
        "assistant",
        "chat",
        "reason",
    )
    assert seats["reason"].running == 0 and seats["reason"].band == (1.2, 2.5)
    schema = fleet_schema("status")  # what `fleet schema status` prints
    assert set(document) == set(schema["properties"])
    assert {"hosts", "aliases", "clients", "findings", "live_commit"} <= set(document)


def commit_bench(fake: FakeFleet, seat: str, host: str, rates: list[float]) -> None:
    container = next(c for c in fake.hosts[host].containers.values() if c.seat() == seat)
    results = [
        BenchResult(
            seat=seat,
            host=host,
            spec_hash=container.labels[HASH_LABEL],
            date=f"2026-12-0{day + 1}T00:00:00Z",
            decode_tok_s=DecodeStats(median=rate, min=rate, max=rate, n=3),
        )
        for day, rate in enumerate(rates)
    ]
    path = fake.root / "inventory" / "BENCH.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_record(BenchRecord(results=tuple(results))))
    fake.commit("fleet bench")


@pytest.mark.parametrize(
    ("rates", "shown"),
    [
        ([100.0], "100.0 tok/s 1.00x baseline"),
        ([100.0, 90.0], "90.0 tok/s 0.90x ok"),
        ([100.0, 65.0], "65.0 tok/s 0.65x warning"),
        ([100.0, 40.0], "40.0 tok/s 0.40x critical"),
    ],
    ids=["baseline", "within-30%", "30%-below-warning", "50%-below-critical"],
)
def test_status_judges_the_last_bench_against_its_baseline(
    tmp_path: Path, rates: list[float], shown: str
) -> None:
    fake = deployed(tmp_path)
    commit_bench(fake, "reason", "tower", rates)
    out = fake.fleet("status").stdout
    line = " ".join(seat_line(out, "reason"))
    assert shown in line, line


@pytest.mark.parametrize(
    "names", [vllm.METRICS, llamacpp.METRICS, sglang.METRICS], ids=["vllm", "llama.cpp", "sglang"]
)
def test_kv_use_is_read_by_each_engines_own_name(names: MetricNames) -> None:
    from fleet.engines import engine_load

    load = engine_load(busy(names, 1, 0, 0.25))
    assert (load.running, load.waiting, load.kv_usage) == (1.0, 0.0, 0.25)


def test_kv_use_of_the_recorded_vllm_metrics() -> None:
    from fleet.engines import engine_load

    corpus = Path(__file__).parents[2] / "corpus" / "vllm-api"
    load = engine_load((corpus / "v0.32.0_cpu_tiny-llama_ngram.metrics.txt").read_text())
    assert load.kv_usage == 0.0 and load.running == 0.0  # present, idle


def test_an_unreachable_host_is_shown_and_exits_1(tmp_path: Path) -> None:
    fake = deployed(tmp_path)
    fake.unreachable["rig"] = "connection refused"
    result = fake.fleet("status")
    assert result.returncode == 1
    assert "rig: unreachable (connection refused)" in result.stdout
    assert "reason" in result.stdout  # the rest of the fleet is still shown


def test_watch_redraws_every_interval(tmp_path: Path) -> None:
    fake = deployed(tmp_path)
    start = fake.clock.now
    result = fake.fleet("status", "--watch", "--interval", "7", "--rounds", "3")
    assert result.returncode == 0, result.stderr
    assert "lab-fleet  desired" in result.stdout  # off a terminal, Live prints the last one
    assert fake.clock.now - start >= 14  # two waits between three rounds
    assert len(fake.hosts["tower"].scripts) == 3  # observed anew each round


def test_control_characters_from_a_host_never_reach_the_terminal(tmp_path: Path) -> None:
    from fleet.report.status_text import render_text

    fake = deployed(tmp_path)
    status = FleetStatus.model_validate(json.loads(fake.fleet("status", "--json").stdout))
    hostile = status.hosts[1].gpus[0].model_copy(update={"name": "GPU\x1b[2J\x1b]0;owned\x07"})
    host = status.hosts[1].model_copy(update={"gpus": (hostile,)})
    text = render_text(status.model_copy(update={"hosts": (host,)}))
    assert "\x1b" not in text and "\x07" not in text
    assert "GPU?[2J?]0;owned?" in text
