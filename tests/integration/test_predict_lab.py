"""Plan foresees, against the lab: what cannot work is refused before anything starts, and a
budget `fleet fit` chooses applies and lands in band."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.gitlog import last_commit
from tests.integration.helpers import FleetRepo, make_repo
from tests.lab.lab import Lab
from tests.waiting import wait_until

pytestmark = pytest.mark.lab
GEMMA3 = "gemma-3-27b-it_sliding-window_nested-text_config.config.json"


@pytest.fixture
def running(clean_lab: Lab, tmp_path: Path) -> FleetRepo:
    """coder, flash and char-rp running on tower (started by compose from fleet's files)."""
    repo = make_repo(tmp_path, clean_lab, seats=("coder", "flash", "char-rp"))
    repo.deploy("tower")
    return repo


def ids(lab: Lab) -> list[str]:
    return sorted(lab.docker("tower", "ps", "-aq", "--no-trunc").stdout.split())


def test_plan_refuses_what_cannot_work_and_touches_nothing(
    running: FleetRepo, tmp_path: Path
) -> None:
    repo, lab = running, running.lab
    before = ids(lab)
    repo.edit("seats/coder.yaml", "context: 2048", "context: 4096")
    longer = repo.fleet("plan")
    assert longer.returncode == 1, longer.stdout + longer.stderr
    assert "context 4,096 is above the 2,048 tokens" in longer.stdout
    repo.edit(
        "seats/coder.yaml", "port: 8030", "port: 8030\nenv: {VLLM_ALLOW_LONG_MAX_MODEL_LEN: '1'}"
    )
    allowed = repo.fleet("plan")
    assert "is above the 2,048 tokens" not in allowed.stdout
    repo.edit("seats/coder.yaml", "context: 4096", "context: 2048")
    repo.edit("seats/coder.yaml", "\nenv: {VLLM_ALLOW_LONG_MAX_MODEL_LEN: '1'}", "")

    repo.edit("seats/flash.yaml", "context: 65536", "context: 32768")
    narrow = repo.fleet("plan", "--json")
    assert narrow.returncode == 1
    plan = json.loads(narrow.stdout)
    (flash,) = [b["message"] for b in plan["blockers"] if b["target"] == "flash"]
    assert "outside its band 1.2x..2.5x" in flash and "fleet fit flash" in flash
    (action,) = [a for a in plan["actions"] if a["target"] == "flash" and a["wave"] == 1]
    assert action["prediction"]["source"] == "exact"  # the running flash logged this budget
    assert action["prediction"]["concurrency"] > 2.5

    big = repo.desired / "seats" / "big.yaml"
    big.write_text(
        "host: tower\ngpus: [1]\nimage: vllm/vllm-openai:v0.18.0\n"
        "model: /models/Qwen3-32B\nserved_name: big\ncontext: 8192\nkv_cache_bytes: 40GiB\n"
        "port: 8090\nconcurrency_band: {min: 1, max: 1000}\n"
    )
    repo.commit("a seat beside char-rp")
    crowded = repo.fleet("plan")
    assert crowded.returncode == 1
    assert any(
        line.startswith("  ! big:") and "char-rp" in line for line in crowded.stdout.splitlines()
    )
    assert ids(lab) == before  # plan started, stopped and recreated nothing
    check_the_labs_log_is_what_plan_predicts(running, tmp_path)


def engine_log(lab: Lab, service: str) -> str:
    """A seat's startup log once it states its KV cache (the stand-in prints it at start)."""
    (container,) = lab.docker(
        "tower", "ps", "-q", "--filter", f"label=com.docker.compose.service={service}"
    ).stdout.split()

    def logged() -> str:
        text = lab.docker("tower", "logs", container).stdout
        return text if "Maximum concurrency" in text else ""

    return wait_until(logged, 60, f"{service} to log its Maximum concurrency", interval=0.5)


def check_the_labs_log_is_what_plan_predicts(running: FleetRepo, tmp_path: Path) -> None:
    """char-rp (Gemma 3: 10 full + 52 sliding-window layers in 7 groups): what its engine
    logged is what plan's model predicts from config.json for that configuration."""
    log = tmp_path / "char-rp.log"
    log.write_text(engine_log(running.lab, "char-rp"))
    config = CORPUS / "model-configs" / GEMMA3
    shown = running.fleet("explain", "log", str(log), "--model", str(config), "--json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    estimate = json.loads(shown.stdout)["kv_estimate"]
    assert estimate["groups"] == ["full"] + ["sliding"] * 6
    assert estimate["ratio"] == pytest.approx(1.0, abs=0.005)
    assert estimate["max_concurrency_ratio"] == pytest.approx(1.0, abs=0.01)
    # and not tokens / context: vLLM's figure for a sliding-window model
    assert estimate["logged_max_concurrency"] > 3 * estimate["logged_tokens"] / 131_072


def test_a_budget_fit_chooses_applies_in_band(running: FleetRepo) -> None:
    repo = running
    repo.edit("seats/flash.yaml", "context: 65536", "context: 32768")
    seat = repo.desired / "seats" / "flash.yaml"
    before = seat.read_text()
    fitted = repo.fleet("fit", "flash", "--write")
    assert fitted.returncode == 0, fitted.stdout + fitted.stderr
    after = seat.read_text()
    changed = [
        (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert len(changed) == 1 and changed[0][0].startswith("kv_cache_bytes:")
    repo.commit("flash: the budget fleet fit chose")
    plan = repo.fleet("plan", "--json")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert json.loads(plan.stdout)["blockers"] == []
    applied = repo.fleet("apply", "--auto-approve", "--seat", "flash", "--timeout", "120")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "tower: seat flash healthy" in applied.stdout
    assert last_commit(repo.root).message.startswith("fleet apply: ")
