"""An SGLang seat end to end against the lab (the SGLang stand-in on rig's second card):
apply behind the health gate, observe (inventory), plan in sync, bench, import from the
running container, and drain before removal, in one bring-up."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.gitlog import last_commit
from tests.integration.helpers import make_repo
from tests.lab.lab import Lab
from tests.waiting import poll

pytestmark = pytest.mark.lab
SEAT, RATE = "llama8b-sgl", 40.0


def stream(lab: Lab, port: int, tokens: int, answer: list[str]) -> threading.Thread:
    """A streamed chat of `tokens` tokens to the seat, in the background; the text it got
    (or the error) lands in `answer`."""
    body = {"model": SEAT, "messages": [{"role": "user", "content": "hi"}]}
    data = json.dumps({**body, "max_tokens": tokens, "stream": True}).encode()
    url = f"http://{lab.address_of('rig')}:{port}/v1/chat/completions"
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})

    def run() -> None:
        try:
            with urllib.request.urlopen(request, timeout=120) as reply:
                answer.append(reply.read().decode())
        except OSError as err:
            answer.append(f"failed: {err}")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def metrics_polls(lab: Lab, container: str) -> int:
    """How many times /metrics was asked for (the engine's access log)."""
    logs = lab.docker("rig", "logs", container)
    return (logs.stdout + logs.stderr).count('"GET /metrics')


def release_once_draining(lab: Lab, container: str, hold: float) -> threading.Thread:
    """Un-stick the engine `hold` seconds after drain first asked its /metrics: the held
    request then finishes, and drain with it."""
    before = metrics_polls(lab, container)

    def run() -> None:
        poll(lambda: metrics_polls(lab, container) != before, 180, interval=0.5)
        time.sleep(hold)  # the engine stays stuck that long: what drain waits through
        lab.docker("rig", "exec", container, "rm", "-f", "/tmp/fleet-lab-stuck")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_sglang_seat_applies_observes_plans_benches_imports_and_drains(
    clean_lab: Lab, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path, clean_lab, seats=(SEAT,))
    seat_file = repo.desired / "seats" / f"{SEAT}.yaml"
    text = seat_file.read_text().replace(f"aliases: [{SEAT}]", "aliases: []")  # no proxy restarts
    seat_file.write_text(text + f"env: {{FLEET_LAB_TOKEN_RATE: '{RATE:g}'}}\n")
    repo.commit("an SGLang seat")
    assert repo.fleet("validate").returncode == 0
    applied = repo.fleet("apply", "--auto-approve", "--timeout", "120")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert (
        f"rig: seat {SEAT} healthy: serves {SEAT}" in applied.stdout
        and "on GPU 1" in applied.stdout
    )
    assert repo.fleet("plan").returncode == 0  # in sync right after apply

    inventory = json.loads(repo.fleet("inventory", "--json").stdout)
    (row,) = [r for host in inventory["hosts"] for r in host["seats"] if r["seat"] == SEAT]
    assert row["gpus"] == [1]
    assert row["kv_cache_tokens"] > 16384 and 1.2 <= row["concurrency"] <= 2.5

    benched = repo.fleet("bench", "--json", "--seat", SEAT, "--runs", "2", "--max-tokens", "40")
    assert benched.returncode == 0, benched.stdout + benched.stderr
    decode = json.loads(benched.stdout)["seats"][0]["decode_tok_s"]
    assert abs(float(decode["median"]) - RATE) <= 0.15 * RATE, decode

    out = tmp_path / "imported"
    imported = repo.fleet("import", "--host", "rig", "--out", str(out))
    assert imported.returncode == 0, imported.stdout + imported.stderr
    text = (out / "seats" / f"{SEAT}.yaml").read_text()
    assert 'engine: "sglang"' in text and "gpu_memory_utilization: 0.8" in text
    assert "context: 16384" in text and "port: 8062" in text

    container = f"fleet-rig-{SEAT}-1"
    clean_lab.docker("rig", "exec", container, "touch", "/tmp/fleet-lab-stuck")
    answer: list[str] = []
    request = stream(clean_lab, 8062, 20, answer)  # held in flight by the stuck switch
    seat_file.unlink()
    repo.commit("retire the SGLang seat")
    release = release_once_draining(clean_lab, container, hold=11.0)  # a progress line at 10 s
    removed = repo.fleet("apply", "--auto-approve", "--prune", "--timeout", "120")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert f"drain seat {SEAT}" in removed.stdout
    assert f"{SEAT} still runs 1 request(s)" in removed.stdout  # SGLang's own gauge, read
    request.join(timeout=30)
    release.join(timeout=5)
    assert answer and answer[0].endswith("data: [DONE]\n\n"), answer  # finished, not cut off
    assert SEAT not in clean_lab.docker("rig", "ps", "--format", "{{.Names}}").stdout
    assert last_commit(repo.root).message.startswith("fleet apply")
