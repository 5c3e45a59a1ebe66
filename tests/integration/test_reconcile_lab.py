"""`fleet reconcile` against the lab, the fleet repository behind a bare remote.

One-shot cycles (--once) for what a cycle decides; then the loop as a service: a commit
pushed to the remote is applied within two intervals, a failing commit is rolled back
and retried with backoff then left, SIGTERM leaves no lock, the metrics show each state,
and a real Prometheus server (Debian's package) scrapes the loop and fires an alert rule
on a stopped seat. The watchdog reads the stand-in engine's /metrics and restarts it
once when it holds a request and generates nothing (the engine's stuck switch). The loop
measures a seat every few seconds through the gateway (`reconcile.bench`): slowed by the
engine's switch it raises the warning against the committed baseline within two
intervals, and clears it once the seat is fast again; while it warns, headless Chromium
renders the loop's dashboard page (GPU bars, the seat, its aliases, its bench chart, the
finding) and keeps a screenshot in the lab directory (`artifacts/dashboard.png`).
"""

from __future__ import annotations

import http.client
import json
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from tests.gitlog import last_commit
from tests.integration.helpers import FleetRepo, make_repo
from tests.lab.lab import Lab
from tests.waiting import wait_until

pytestmark = pytest.mark.lab
RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "fleet-rules.yml"
FAST = "reconcile: {backoff: 2, retries: 1}\n"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def remote_repo(clean_lab: Lab, tmp_path: Path) -> FleetRepo:
    """The coder seat's fleet repository, its branch tracking a bare remote."""
    repo = make_repo(tmp_path, clean_lab, seats=("coder",))
    fleet_yaml = repo.desired / "fleet.yaml"
    fleet_yaml.write_text(fleet_yaml.read_text() + FAST)
    repo.commit("reconcile quickly in tests")
    git.Repo.init(tmp_path / "remote.git", bare=True)
    clone = git.Repo(repo.root)
    clone.create_remote("origin", str(tmp_path / "remote.git")).push("HEAD:refs/heads/main")
    clone.git.branch("--set-upstream-to=origin/main")
    return repo


def container_id(lab: Lab, name: str) -> str:
    return lab.docker("tower", "inspect", "-f", "{{.Id}}", name).stdout.strip()


def state(lab: Lab, name: str) -> str:
    return lab.docker("tower", "inspect", "-f", "{{.State.Status}}", name).stdout.strip()


def test_one_cycle_applies_reports_heals_and_holds(remote_repo: FleetRepo, tmp_path: Path) -> None:
    repo, lab = remote_repo, remote_repo.lab
    coder = repo.desired / "seats" / "coder.yaml"
    coder.write_text(coder.read_text() + "env: {FLEET_LAB_TOKEN_RATE: '300'}\n")
    repo.commit("coder decodes at 300 tok/s: a bench of it takes seconds")
    applied = repo.fleet("reconcile", "--once", "--auto-apply")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert state(lab, "fleet-tower-coder-1") == "running"
    pushed = last_commit(tmp_path / "remote.git", "main")
    assert pushed.message.startswith("fleet apply: ")  # inventory pushed

    lab.docker("tower", "stop", "-t", "0", "fleet-tower-coder-1")
    reported = repo.fleet("reconcile", "--once", "--log-format", "json")
    assert reported.returncode == 2
    events = [json.loads(line) for line in reported.stdout.splitlines()]
    (plan,) = [e for e in events if e["event"] == "plan"]
    assert plan["move"] == "observe-only" and state(lab, "fleet-tower-coder-1") == "exited"

    healed = repo.fleet("reconcile", "--once", "--self-heal")
    assert healed.returncode == 0, healed.stdout + healed.stderr
    assert state(lab, "fleet-tower-coder-1") == "running"

    before = container_id(lab, "fleet-tower-coder-1")
    fleet_yaml = repo.desired / "fleet.yaml"
    fleet_yaml.write_text(fleet_yaml.read_text().replace(FAST, "reconcile: {suspend: true}\n"))
    repo.edit("seats/coder.yaml", "context: 2048", "context: 1024", "suspended change")
    held = repo.fleet("reconcile", "--once", "--auto-apply", "--self-heal")
    assert held.returncode == 2 and "suspended in fleet.yaml" in held.stdout
    assert container_id(lab, "fleet-tower-coder-1") == before
    # held, the loop still measures: a regression and its end, against the committed baseline
    measures_until_restored(repo, lab)


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """Where a Prometheus server's config goes, and its port (started by the test)."""
    if shutil.which("prometheus") is None:
        pytest.fail("prometheus not found: Debian's prometheus package (tests/lab/install.sh)")
    yield tmp_path / "prometheus", free_port()


def alerts(port: int) -> list[dict[str, object]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=5) as reply:
        return list(json.loads(reply.read())["data"]["alerts"])


def start_loop(repo: FleetRepo, *args: str) -> subprocess.Popen[str]:
    """`fleet reconcile` as a service in the fleet repository, its events as JSON lines."""
    return subprocess.Popen(
        [sys.executable, "-m", "reconciler", "reconcile", "--log-format", "json", *args],
        cwd=repo.root,
        env={**__import__("os").environ, **repo.lab.env()},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stop_loop(loop: subprocess.Popen[str]) -> None:
    if loop.poll() is None:
        loop.terminate()
        try:
            loop.wait(timeout=60)
        except subprocess.TimeoutExpired:
            loop.kill()
            loop.wait(timeout=30)
    if loop.stdout is not None:
        loop.stdout.close()


def hold_a_request(url: str) -> threading.Thread:
    """A streamed chat request that stays open while the engine generates nothing."""
    body = {"model": "coder", "stream": True, "max_tokens": 64, "messages": []}
    request = urllib.request.Request(
        f"{url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )

    def wait() -> None:
        try:
            with urllib.request.urlopen(request, timeout=90) as response:
                response.read()
        except (OSError, http.client.HTTPException):
            pass  # the watchdog's restart cuts it

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    return thread


def test_the_watchdog_restarts_an_engine_that_holds_requests_and_generates_nothing(
    remote_repo: FleetRepo,
) -> None:
    repo, lab = remote_repo, remote_repo.lab
    fleet_yaml = repo.desired / "fleet.yaml"
    stuck_after = FAST.replace("}", ", stuck_after: 10}")
    fleet_yaml.write_text(fleet_yaml.read_text().replace(FAST, stuck_after))
    repo.commit("the watchdog after 10 s")
    loop = start_loop(repo, "--interval", "2", "--auto-apply", "--timeout", "60")
    seat = "fleet-tower-coder-1"
    try:
        wait_until(
            lambda: loop_events(loop_log(loop), "applied"), 120, "the first apply", interval=0.5
        )
        started = lab.docker("tower", "inspect", "-f", "{{.State.StartedAt}}", seat).stdout
        lab.docker("tower", "exec", seat, "touch", "/tmp/fleet-lab-stuck")
        held = hold_a_request(f"http://{lab.address_of('tower')}:8030")
        (restart,) = wait_until(
            lambda: loop_events(loop_log(loop), "watchdog-restart", seat="coder"),
            60,
            "a watchdog restart",
            interval=0.5,
        )  # type: ignore[misc]
        assert restart["host"] == "tower" and "no token for 10s" in restart["reason"]
        held.join(timeout=30)
        assert not held.is_alive()  # the restart ended the request it held
        wait_until(
            lambda: (
                lab.docker("tower", "inspect", "-f", "{{.State.StartedAt}}", seat).stdout != started
                and state(lab, seat) == "running"
            ),
            60,
            "the engine started again",
            interval=0.5,
        )
        assert len(loop_events(loop_log(loop), "watchdog-restart")) == 1
    except AssertionError as failure:
        tail = "".join(loop_log(loop)[-40:])
        raise AssertionError(f"{failure}\n--- the loop said:\n{tail}") from failure
    finally:
        lab.docker("tower", "exec", seat, "rm", "-f", "/tmp/fleet-lab-stuck")
        stop_loop(loop)


def slow(lab: Lab, container: str, factor: str) -> None:
    lab.docker("tower", "exec", container, "sh", "-c", f"echo {factor} > /tmp/fleet-lab-slowdown")


def measures_until_restored(repo: FleetRepo, lab: Lab) -> None:
    """The loop measures coder every 5 s through the gateway: slowed 40% by the engine's
    switch it warns within two intervals, and clears the warning once coder is fast again."""
    fleet_yaml = repo.desired / "fleet.yaml"
    suspended = "reconcile: {suspend: true}\n"
    bench = "reconcile: {suspend: true, bench: {interval: 5s}}\n"
    fleet_yaml.write_text(fleet_yaml.read_text().replace(suspended, bench))
    repo.commit("the loop measures every 5 s")
    baseline = repo.fleet("bench", "--write", "--via", "gateway")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    git.Repo(repo.root).git.push("origin", "HEAD:main")  # the committed baseline
    listen = free_port()
    loop = start_loop(repo, "--interval", "2", "--listen", f"127.0.0.1:{listen}")
    seat = "fleet-tower-coder-1"
    try:
        (first, *_) = wait_until(
            lambda: loop_events(loop_log(loop), "bench", seat="coder"),
            60,
            "a measurement",
            interval=0.5,
        )  # type: ignore[misc]
        assert first["via"] == "gateway" and float(first["baseline_ratio"]) > 0.8, first
        seen = len(loop_events(loop_log(loop), "bench", seat="coder"))
        slow(lab, seat, "0.6")  # 40% slower: a warning
        (warned,) = wait_until(
            lambda: loop_events(loop_log(loop), "bench-regression", seat="coder"),
            40,  # two intervals, a sweep under way, the slowed one itself and the cycles
            "the warning within two intervals",
            interval=0.5,
        )  # type: ignore[misc]
        assert warned["level"] == "warning" and "below its baseline" in warned["message"]
        after = [e["regression"] for e in loop_events(loop_log(loop), "bench", seat="coder")]
        assert "warning" in after[seen : seen + 2], after  # the next or the one after
        with urllib.request.urlopen(f"http://127.0.0.1:{listen}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        assert 'fleet_findings{severity="warning"}' in text
        ratio = next(ln for ln in text.splitlines() if ln.startswith("fleet_bench_baseline_ratio{"))
        assert 'seat="coder"' in ratio and 0.5 < float(ratio.split()[-1]) <= 0.7, ratio
        the_page_in_a_browser(lab, listen)
        slow(lab, seat, "1")
        (restored,) = wait_until(
            lambda: loop_events(loop_log(loop), "bench-restored", seat="coder"),
            40,
            "the warning cleared",
            interval=0.5,
        )  # type: ignore[misc]
        assert restored["was"] == "warning"
        head = last_commit(repo.root).message
        assert head.startswith("fleet bench: ")  # the loop committed no measurement
    except AssertionError as failure:
        tail = "".join(loop_log(loop)[-40:])
        raise AssertionError(f"{failure}\n--- the loop said:\n{tail}") from failure
    finally:
        slow(lab, seat, "1")
        stop_loop(loop)


def chromium(*args: str) -> str:
    """Headless Chromium (Debian's package; as root it needs --no-sandbox): its stdout."""
    browser = shutil.which("chromium")
    if browser is None:
        pytest.fail("chromium not found: Debian's chromium package (tests/lab/install.sh)")
    done = subprocess.run(
        [browser, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def the_page_in_a_browser(lab: Lab, listen: int) -> None:
    """The loop's dashboard page, rendered by headless Chromium: GPU bars, the seat and its
    aliases, coder's bench chart drawn with its baseline and 30%/50% lines, the warning
    finding. The DOM and a screenshot stay in the lab directory's `artifacts/`."""
    url = f"http://127.0.0.1:{listen}/"
    artifacts = lab.root / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    dom = chromium("--dump-dom", url)
    (artifacts / "dashboard.html").write_text(dom)
    assert len(re.findall(r'<meter class="gpu-memory"[^>]*value="\d+"', dom)) >= 1
    row = re.search(r'<tr class="([^"]*)" data-seat="coder">(.*?)</tr>', dom, re.S)
    assert row is not None, dom[-3000:]
    cells = re.findall(r"<td>(.*?)</td>", row.group(2))
    assert cells[:2] == ["coder", "running"] and cells[3] == "8030", cells
    assert cells[-1] == "autocomplete, coder" and "warning" in cells[-2], cells
    assert 'data-alias="autocomplete"' in dom and 'data-alias="coder"' in dom
    canvas = re.search(r'<canvas class="bench-chart" data-seat="coder"[^>]*>', dom)
    assert canvas is not None, dom[-3000:]
    drawn = re.search(r'data-drawn="(\d+)"', canvas.group(0))
    assert drawn is not None and int(drawn.group(1)) >= 2, canvas.group(0)  # Chart.js drew it
    assert 'data-lines="4"' in canvas.group(0)  # decode, baseline, -30%, -50%
    assert 'data-kind="bench-regression"' in dom
    shot = artifacts / "dashboard.png"
    shot.unlink(missing_ok=True)
    chromium(f"--screenshot={shot}", "--window-size=1400,1800", url)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_the_loop_applies_pushed_commits_backs_off_and_is_scraped(
    remote_repo: FleetRepo, tmp_path: Path, prometheus: tuple[Path, int]
) -> None:
    repo, lab = remote_repo, remote_repo.lab
    listen = free_port()
    serve = ("--listen", f"127.0.0.1:{listen}")
    loop = start_loop(repo, "--interval", "2", "--auto-apply", *serve, "--timeout", "60")
    config_dir, port = prometheus
    config_dir.mkdir()
    rules = config_dir / "rules.yml"
    rules.write_text(RULES.read_text().replace("for: 2m", "for: 0s"))  # fire at once in a test
    (config_dir / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{rules}]\n"
        "scrape_configs:\n  - job_name: fleet\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{listen}']}}]\n"
    )
    server = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config_dir / 'prometheus.yml'}",
            f"--storage.tsdb.path={config_dir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        remote = tmp_path / "remote.git"
        wait_until(
            lambda: last_commit(remote, "main").message.startswith("fleet apply: "),
            120,
            "the first apply and its pushed inventory commit",
            interval=0.5,
        )
        # a commit pushed to the remote from elsewhere is applied within two intervals
        other = git.Repo.clone_from(
            str(tmp_path / "remote.git"), tmp_path / "elsewhere", branch="main"
        )
        with other.config_writer() as config:
            config.set_value("user", "name", "someone").set_value("user", "email", "s@x.invalid")
        seat = tmp_path / "elsewhere" / "desired" / "seats" / "coder.yaml"
        # coder recreates in place, as fleet-tower-coder-1, which this test watches (a
        # surge would move it to fleet-tower-coder-b-1: test_gateway_bluegreen_lab.py's)
        text = seat.read_text().replace("port: 8030", "port: 8030\nstrategy: recreate")
        seat.write_text(text.replace("context: 2048", "context: 1536"))
        other.git.commit("-am", "coder: 1536")
        other.git.push("origin", "HEAD:main")
        first = container_id(lab, "fleet-tower-coder-1")
        wait_until(
            lambda: container_id(lab, "fleet-tower-coder-1") not in ("", first),
            90,
            "the pushed commit applied",
            interval=0.5,
        )
        # a failing commit: rolled back, retried after the backoff, then left alone
        seat.write_text(
            seat.read_text().replace("port: 8030", "port: 8030\nenv: {FLEET_LAB_FAIL: crash}")
        )
        other.git.commit("-am", "coder: a start that fails")
        other.git.push("origin", "HEAD:main")
        wait_until(
            lambda: loop_events(loop_log(loop), "plan", move="give-up"),
            150,
            "give up",
            interval=0.5,
        )
        failures = loop_events(loop_log(loop), "apply-failed")
        assert len(failures) == 2 and failures[1]["failures"] == 2
        assert state(lab, "fleet-tower-coder-1") == "running"  # rolled back each time
        # a seat stopped by hand: fleet_seat_up 0, and the rule fires in a real Prometheus
        lab.docker("tower", "stop", "-t", "0", "fleet-tower-coder-1")
        firing = wait_until(
            lambda: [
                a
                for a in alerts(port)
                if a["labels"]["alertname"] == "FleetSeatDown" and a["state"] == "firing"
            ],  # type: ignore[index]
            60,
            "FleetSeatDown firing",
            interval=0.5,
        )
        assert firing[0]["labels"]["seat"] == "coder"  # type: ignore[index]
        with urllib.request.urlopen(f"http://127.0.0.1:{listen}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        assert 'fleet_seat_up{host="tower",seat="coder"} 0.0' in text
        assert 'fleet_apply_total{result="rolled-back"} 2.0' in text
        assert 'fleet_apply_total{result="succeeded"}' in text
        # SIGTERM while an apply runs: it finishes that step, releases the lock, exits 0
        text = seat.read_text().replace("\nenv: {FLEET_LAB_FAIL: crash}", "")
        seat.write_text(text.replace("context: 1536", "context: 1280"))  # a new revision
        other.git.commit("-am", "coder: start again, at 1280")
        other.git.push("origin", "HEAD:main")
        seen = len(loop_events(loop_log(loop), "apply-step"))
        wait_until(
            lambda: len(loop_events(loop_log(loop), "apply-step")) > seen,
            60,
            "an apply",
            interval=0.5,
        )
        loop.send_signal(signal.SIGTERM)
        assert loop.wait(timeout=180) == 0
        assert lab.run("tower", "test -e /srv/fleet/.fleet.lock").returncode != 0  # no lock
        assert state(lab, "fleet-tower-coder-1") == "running"
    except AssertionError as failure:
        tail = "".join(loop_log(loop)[-40:])
        raise AssertionError(f"{failure}\n--- the loop said:\n{tail}") from failure
    finally:
        server.terminate()
        server.wait(timeout=30)
        stop_loop(loop)


LOG: dict[int, list[str]] = {}


def loop_log(loop: subprocess.Popen[str]) -> list[str]:
    """Lines the loop printed so far (read without blocking)."""
    lines = LOG.setdefault(loop.pid, [])
    assert loop.stdout is not None
    while select.select([loop.stdout], [], [], 0)[0]:
        line = loop.stdout.readline()
        if not line:
            break
        lines.append(line)
    return lines


def loop_events(lines: list[str], event: str, **fields: object) -> list[dict[str, object]]:
    found = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if item.get("event") == event and all(item.get(k) == v for k, v in fields.items()):
            found.append(item)
    return found
