"""A fleet of real engines on the lab's devbox (tests/lab/devbox.py: Docker, no GPU): the
real vLLM CPU build and the real llama-server, each in its real image, serving tiny models.

fleet treats them as any seat: a llama-server seat applied behind the health gate, changed
(recreated: a CPU seat) and benched through the gateway; a vLLM container started by hand
(`--ipc host`, as vLLM's docs run it; ngram speculative decoding), held first to the
log/API contract (tests/integration/real_vllm_checks.py: /health silent until ready,
bench's acceptance off the real counters), adopted by `fleet import` in place (plan 0,
the same container), then changed (context, no drafting) and routed: taken over under
fleet's project behind the health gate; the inventory's facts as the engines' own APIs
state them (vLLM's /v1/models and cache_config_info, llama-server's /props, /slots and
/v1/models). Then what the loop's bench (`reconcile.bench`) needs of a real engine: a CPU
quota on the llama-server seat's container (`docker update --cpus`) slows it to a
regression against the committed baseline, and lifting it clears it (the tiny Llama's
random tokens are mostly bytes its detokenizer holds back, so a vLLM stream's pace swings
tenfold: no baseline to hold it to); the loop's events and posts for it are proven on the
fake host and with the stand-in. Last both seats are drained and removed, one apply each.

vLLM starts twice (a minute of CPU each here): the hand-made container loads while the
llama-server seat (up in a second) is applied and changed. Skipped, with the reason,
unless both real engines are installed (tests.lab.real.require, FLEET_REAL_ENGINES=0).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git
import pytest

from fleet.errors import FleetError
from tests.gitlog import last_commit
from tests.integration import real_vllm_checks
from tests.integration.helpers import FleetRepo, make_repo, request_url
from tests.lab.devbox import Devbox
from tests.lab.lab import Lab
from tests.waiting import poll, wait_until

pytestmark = pytest.mark.lab

VLLM_PORT, GGUF_PORT = 8090, 8091
BY_HAND = "tiny-by-hand"  # the hand-made vLLM container, and the seat import names after it
GGUF = "real-gguf"
NGRAM = {"method": "ngram", "num_speculative_tokens": 3}  # drafts from the prompt: no drafter


def engines() -> tuple[Any, Any]:
    from tests.lab.real import llamacpp, vllm

    return vllm, llamacpp


def get(url: str) -> Any:
    reply = request_url(url, timeout=10)
    assert reply.status == 200, (url, reply.status, reply.body)
    return reply.json()


def container_id(lab: Lab, name: str) -> str:
    return lab.docker("devbox", "inspect", "-f", "{{.Id}}", name).stdout.strip()


def start_vllm_by_hand(lab: Lab, devbox: Devbox) -> None:
    """`docker run` of the real vLLM image, as an operator starts one (not yet ready)."""
    vllm, _ = engines()
    model = devbox.models["vllm"]
    run = lab.docker(
        "devbox",
        "run",
        "-d",
        "--name",
        BY_HAND,
        "--ipc",
        "host",
        "-p",
        f"{devbox.address}:{VLLM_PORT}:{VLLM_PORT}",
        "-v",
        f"{model}:{model}:ro",
        f"{vllm.IMAGE}:{vllm.TAG}",
        model,
        "--served-model-name",
        vllm.SERVED_NAME,
        "--host",
        "0.0.0.0",
        "--port",
        str(VLLM_PORT),
        "--max-model-len",
        "2048",
        "--kv-cache-memory-bytes",
        str(vllm.KV_CACHE_BYTES),
        "--speculative-config",
        json.dumps(NGRAM, separators=(",", ":"), sort_keys=True),
        *vllm.SEAT_ARGS,
    )
    assert run.returncode == 0, run.stderr


def wait_healthy(lab: Lab, url: str, seconds: float) -> None:
    """Until `url` answers 200; fails with the hand-made container's log tail."""

    def healthy() -> bool:
        try:
            return request_url(url, timeout=5).status == 200
        except FleetError:  # not listening yet
            return False

    def log() -> str:
        tail = lab.docker("devbox", "logs", "--tail", "30", BY_HAND)
        return tail.stdout + tail.stderr

    wait_until(healthy, seconds, f"{url} to be healthy", interval=2, detail=log)


@dataclass
class HealthWatch:
    """/health of the hand-made vLLM, polled from its start until it answers 200: what it
    answered before (a status, or `no answer` while nothing listens behind the port)."""

    url: str
    answers: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)

    def run(self, seconds: float = 420.0) -> None:
        if poll(self.answered, seconds, interval=0.5):
            self.ready.set()

    def answered(self) -> bool:
        """200 at last, else one more answer recorded."""
        try:
            status: int | None = request_url(self.url, timeout=5).status
        except FleetError:
            status = None
        if status != 200:
            self.answers.append("no answer" if status is None else str(status))
        return status == 200


VLLM_HEALTH: list[HealthWatch] = []  # the module's one watch, started with the container


def gguf_seat(devbox: Devbox) -> str:
    _, llamacpp = engines()
    args = ", ".join(json.dumps(a) for a in llamacpp.SEAT_ARGS)
    return (
        f"host: devbox\ngpus: []\nengine: llama.cpp\nimage: {llamacpp.IMAGE}:{llamacpp.TAG}\n"
        f"model: {devbox.models['gguf']}\nserved_name: {GGUF}\ncontext: 1024\nparallel: 2\n"
        f"port: {GGUF_PORT}\nextra_args: [{args}]\naliases: [{GGUF}]\n"
    )


@pytest.fixture(scope="module")
def real_fleet(
    devbox: Devbox, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> FleetRepo:
    """The vLLM container started by hand (it loads while the llama-server seat is
    applied), and a fleet repository with the devbox, its branch behind a bare remote.
    (The lab is asked for once the devbox is: a skip costs no bring-up.)"""
    lab: Lab = request.getfixturevalue("lab")
    lab.reset()
    start_vllm_by_hand(lab, devbox)
    watch = HealthWatch(f"http://{devbox.address}:{VLLM_PORT}/health")
    threading.Thread(target=watch.run, daemon=True).start()
    VLLM_HEALTH[:] = [watch]
    tmp = tmp_path_factory.mktemp("real-fleet")
    repo = make_repo(tmp, lab, seats=())
    address = devbox.address
    (repo.desired / "hosts" / "devbox.yaml").write_text(
        f"ssh: {{alias: devbox}}\naddress: {address}\npublish_address: {address}\ngpus: []\n"
    )
    fleet_yaml = repo.desired / "fleet.yaml"
    text = fleet_yaml.read_text().replace("  min: 1.2\n  max: 2.5\n", "  min: 1\n  max: 1000\n")
    fleet_yaml.write_text(text)  # a tiny model's KV holds hundreds of requests
    (repo.desired / "seats" / f"{GGUF}.yaml").write_text(gguf_seat(devbox))
    repo.commit("the devbox and a llama-server seat on its CPU")
    git.Repo.init(tmp / "remote.git", bare=True)
    clone = git.Repo(repo.root)
    clone.create_remote("origin", str(tmp / "remote.git")).push("HEAD:refs/heads/main")
    clone.git.branch("--set-upstream-to=origin/main")
    return repo


def apply(repo: FleetRepo, *args: str) -> str:
    result = repo.fleet("apply", "--auto-approve", "--timeout", "240", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def rows(repo: FleetRepo) -> dict[str, dict[str, Any]]:
    listed = repo.fleet("inventory", "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    data = json.loads(listed.stdout)
    return {row["seat"]: row for host in data["hosts"] for row in host["seats"]}


def cache_config(base: str) -> dict[str, str]:
    """The labels of vLLM's `vllm:cache_config_info` gauge (its KV cache as it built it)."""
    reply = request_url(f"{base}/metrics", timeout=10)
    line = next(ln for ln in reply.body.splitlines() if ln.startswith("vllm:cache_config_info{"))
    inner = line[line.index("{") + 1 : line.rindex("}")]
    return {k: v.strip('"') for k, v in (item.split("=", 1) for item in inner.split('",'))}


def test_real_engines_apply_adopt_observe_bench_and_change(
    real_fleet: FleetRepo, devbox: Devbox, tmp_path: Path
) -> None:
    repo, lab = real_fleet, real_fleet.lab
    vllm, _ = engines()
    assert repo.fleet("validate").returncode == 0
    created = apply(repo)  # while the hand-made vLLM still loads
    assert f"devbox: seat {GGUF} healthy: serves {GGUF}" in created
    gguf_id = container_id(lab, f"fleet-devbox-{GGUF}-1")
    repo.edit(f"seats/{GGUF}.yaml", "context: 1024", "context: 512")
    assert f"devbox: seat {GGUF} healthy" in apply(repo)
    assert container_id(lab, f"fleet-devbox-{GGUF}-1") not in ("", gguf_id)  # recreated

    base = f"http://{devbox.address}:{VLLM_PORT}"
    (watch,) = VLLM_HEALTH
    watch.ready.wait(420)
    wait_healthy(lab, f"{base}/health", 1)  # with the engine's log if it is not
    assert watch.answers, "the engine was ready at once: nothing was observed"
    assert set(watch.answers) == {"no answer"}  # no 503 phase: nothing listens until ready
    logs = lab.docker("devbox", "logs", BY_HAND)
    real_vllm_checks.check_contract(base, logs.stdout + logs.stderr)
    real_vllm_checks.check_acceptance(base, real_vllm_checks.seat(VLLM_PORT))
    by_hand = container_id(lab, BY_HAND)
    out = tmp_path / "imported"
    imported = repo.fleet("import", "--host", "devbox", "--out", str(out))
    assert imported.returncode == 0, imported.stdout + imported.stderr
    seat_text = (out / "seats" / f"{BY_HAND}.yaml").read_text()
    assert "gpus: []" in seat_text and f"kv_cache_bytes: {vllm.KV_CACHE_BYTES}" in seat_text
    assert 'speculative: {"method": "ngram", "num_tokens": 3}' in seat_text, seat_text
    (repo.desired / "seats" / f"{BY_HAND}.yaml").write_text(seat_text)
    repo.commit("adopt the hand-made vLLM seat")
    assert repo.fleet("validate").returncode == 0
    planned = repo.fleet("plan", "--json")
    assert planned.returncode == 0, planned.stdout + planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["actions"] == []  # adopted as it runs: plan 0
    noops = {n["target"]: n["reason"] for n in plan["noops"]}
    assert noops[BY_HAND].startswith("adopted")
    assert container_id(lab, BY_HAND) == by_hand

    found = rows(repo)
    models = get(f"{base}/v1/models")["data"]
    assert found[BY_HAND]["served_names"] == [m["id"] for m in models] == [vllm.SERVED_NAME]
    assert found[BY_HAND]["context"] == models[0]["max_model_len"] == 2048
    cache = cache_config(base)
    assert found[BY_HAND]["kv_cache_tokens"] == int(cache["kv_cache_size_tokens"])
    assert found[BY_HAND]["concurrency"] == float(cache["kv_cache_max_concurrency"])
    assert found[BY_HAND]["gpus"] == [] and found[BY_HAND]["architecture"] == "LlamaForCausalLM"
    assert (found[BY_HAND]["speculative"] or "").startswith("ngram"), found[BY_HAND]
    gguf = f"http://{devbox.address}:{GGUF_PORT}"
    props, slots = get(f"{gguf}/props"), get(f"{gguf}/slots")
    assert found[GGUF]["concurrency"] == props["total_slots"] == len(slots) == 2
    assert found[GGUF]["served_names"] == [m["id"] for m in get(f"{gguf}/v1/models")["data"]]
    assert found[GGUF]["kv_cache_tokens"] == sum(slot["n_ctx"] for slot in slots)

    benched = repo.fleet(
        "bench", "--json", "--via", "gateway", "--seat", GGUF, "--runs", "1", "--max-tokens", "32"
    )
    assert benched.returncode == 0, benched.stdout + benched.stderr
    (measured,) = json.loads(benched.stdout)["seats"]
    assert measured["seat"] == GGUF and float(measured["decode_tok_s"]["median"]) > 0, measured

    # one commit: the vLLM seat changed (taken over under fleet's project, behind the health
    # gate) and routed: one gateway change
    path = repo.desired / "seats" / f"{BY_HAND}.yaml"
    lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("speculative:")]
    text = "\n".join(lines).replace("context: 2048", "context: 1024")
    path.write_text(text + "\naliases: [real-vllm]\n")
    repo.commit("tiny-by-hand: 1,024 tokens, no drafting, routed")
    changed = apply(repo)
    assert f"devbox: seat {BY_HAND} healthy: serves {vllm.SERVED_NAME}" in changed
    assert "on the CPU" in changed
    names = lab.docker("devbox", "ps", "-a", "--format", "{{.Names}}").stdout.split()
    assert sorted(names) == sorted([f"fleet-devbox-{BY_HAND}-1", f"fleet-devbox-{GGUF}-1"])
    assert get(f"{base}/v1/models")["data"][0]["max_model_len"] == 1024
    assert repo.fleet("plan").returncode == 0  # in sync


def quota(lab: Lab, cpus: float) -> None:
    """A CPU quota on the llama-server seat's container, live (`docker update --cpus`)."""
    done = lab.docker("devbox", "update", "--cpus", f"{cpus:g}", f"fleet-devbox-{GGUF}-1")
    assert done.returncode == 0, done.stderr


def bench_gguf(
    repo: FleetRepo, *args: str, runs: int = 3, tokens: int = 64
) -> tuple[int, dict[str, Any]]:
    """`fleet bench` of the llama-server seat on its port (exit code, its JSON result):
    `runs` requests of `tokens` tokens, a fraction of a second at full speed."""
    benched = repo.fleet(
        "bench",
        "--json",
        "--via",
        "seat",
        "--seat",
        GGUF,
        "--runs",
        str(runs),
        "--max-tokens",
        str(tokens),
        *args,
    )
    assert benched.returncode in (0, 2), benched.stdout + benched.stderr
    (measured,) = json.loads(benched.stdout)["seats"]
    return benched.returncode, measured


def test_a_cpu_quota_on_a_real_seat_is_a_regression_until_lifted(real_fleet: FleetRepo) -> None:
    """The real engine's part of the loop's bench: a CPU quota on the real llama-server's
    container slows its decode, which is judged against the committed baseline (critical,
    or at least a warning, exit 2), and lifting it clears the verdict. The loop raising and
    clearing it as events and posts is proven on the fake host (tests/unit/workflows/
    test_loop_bench.py) and in the lab (test_reconcile_lab.py, the engine's slow switch)."""
    repo, lab = real_fleet, real_fleet.lab
    code, baseline = bench_gguf(repo, "--write")
    assert code == 0 and baseline["baseline_ratio"] == 1.0, baseline
    assert "fleet bench: " in last_commit(repo.root).message  # the committed baseline
    unlimited = float(os.cpu_count() or 1)  # `--cpus 0` leaves the quota as it was
    try:
        # The tiny model decodes ~1,300 tok/s on a core; under a quota its spinning threads
        # are throttled (a tenth of a core: ~12 tok/s). A twentieth stays far below what
        # the seat gets unlimited even on a machine busy enough to slow the baseline to
        # ~10 tok/s; one request of 16 tokens at it takes seconds.
        quota(lab, 0.05)
        code, slowed = bench_gguf(repo, runs=1, tokens=16)
        assert code == 2 and slowed["regression"] in ("warning", "critical"), slowed
        assert float(slowed["baseline_ratio"]) <= 0.7, slowed
        quota(lab, unlimited)
        # Lifted: fast again (a busy machine may slow one measurement: measure again).
        results: list[dict[str, Any]] = []

        def cleared() -> bool:
            code, measured = bench_gguf(repo)
            results.append(measured)
            return code == 0

        wait_until(cleared, 300, "the regression cleared", interval=1, detail=lambda: f"{results}")
        assert results[-1]["regression"] is None and float(results[-1]["baseline_ratio"]) > 0.7
    finally:
        quota(lab, unlimited)


def test_the_real_seats_drain_and_go(real_fleet: FleetRepo) -> None:
    repo, lab = real_fleet, real_fleet.lab
    repo.remove(f"seats/{GGUF}.yaml")
    removed = apply(repo, "--prune")
    assert f"drain seat {GGUF}" in removed
    names = lab.docker("devbox", "ps", "-a", "--format", "{{.Names}}").stdout.split()
    assert names == [f"fleet-devbox-{BY_HAND}-1"]
    repo.remove(f"seats/{BY_HAND}.yaml")
    removed = apply(repo, "--prune")
    assert f"drain seat {BY_HAND}" in removed
    assert lab.docker("devbox", "ps", "-a", "--format", "{{.Names}}").stdout.split() == []
    assert repo.fleet("plan").returncode == 0  # in sync
