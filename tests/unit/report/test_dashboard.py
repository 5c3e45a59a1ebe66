"""The dashboard page: what it shows, that host strings stay text and secrets never show,
what its server answers (read-only, its own assets only), and the vendored Chart.js.

The page is rendered from the fake fleet's real status (`fleet status`'s data) and served
by the real HTTP server on a loopback port; the rendering in a browser is the lab's test
(tests/integration/test_reconcile_lab.py, headless Chromium).
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleet.observed.bench import BenchRecord, BenchResult, DecodeStats
from fleet.observed.findings import Finding, FindingKind
from fleet.report.dashboard import History, Run, bench_series, render_page
from fleet.report.status import FleetStatus
from reconciler.adapters.dashboard import ASSET_DIR, Dashboard
from reconciler.adapters.metrics import FleetMetrics, serve
from reconciler.workflows.status import refresh
from tests.unit.cli.fake_fleet import MASTER_KEY, FakeFleet, make_fleet
from tests.unit.report.test_status import commit_bench

CHART_JS_SHA256 = "48444a82d4edcb5bec0f1965faacdde18d9c17db3063d042abada2f705c9f54a"
HOSTILE = '</script><script>alert("owned")</script><img src=x onerror=alert(1)>'


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def fake(tmp_path: Path) -> FakeFleet:
    fake = make_fleet(tmp_path)
    fake.deploy("tower")
    fake.deploy("rig")
    fake.route_gateway()
    commit_bench(fake, "reason", "tower", [100.0, 90.0, 60.0])
    return fake


def shown(fake: FakeFleet) -> Dashboard:
    dashboard = Dashboard(refresh=30)
    refresh(fake.desired, lambda fleet: fake.sessions(fleet), dashboard)
    return dashboard


def test_the_page_shows_gpu_bars_seats_aliases_bench_and_findings(fake: FakeFleet) -> None:
    reply = shown(fake).answer("/")
    assert reply is not None and reply.status == 200
    page = reply.body.decode()
    assert page.count('<meter class="gpu-memory"') == 10  # tower 4, rig 2, gateway 4 (fake)
    assert 'max="97887" value="20480"' in page
    row = re.search(r'<tr class="[^"]*" data-seat="reason">(.*?)</tr>', page)
    assert row is not None
    cells = re.findall(r"<td>(.*?)</td>", row.group(1))
    assert cells[:4] == ["reason", "running", "2,3", "8015"]
    assert cells[-2:] == ["60.0 tok/s (0.60x) warning", "assistant, chat, reason"]
    assert 'data-alias="chat"' in page and 'class="finding error" data-kind="dead-alias"' in page
    assert '<canvas class="bench-chart" data-seat="reason"' in page
    data = json.loads(re.findall(r'id="bench-data">(.*?)</script>', page)[0])
    assert data == [
        {
            "seat": "reason",
            "dates": ["2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z", "2026-12-03T00:00:00Z"],
            "decode": [100.0, 90.0, 60.0],
            "baseline": 100.0,
            "warning": 70.0,
            "critical": 50.0,
        }
    ]
    assert '<tr class="run plan">' in page  # the plan it was read with
    assert re.findall(r'(?:src|href)="([^"]+)"', page) == [
        "/assets/dashboard.css",
        "/assets/chart.umd.min.js",
        "/assets/dashboard.js",
    ]  # nothing from another host


def test_what_a_host_returned_stays_text(fake: FakeFleet) -> None:
    status = shown(fake).status
    assert status is not None
    host = status.hosts[2]
    seat = host.seats[0].model_copy(update={"model": HOSTILE, "seat": HOSTILE})
    finding = Finding(kind=FindingKind.DEAD_ALIAS, target=HOSTILE, message=HOSTILE)
    hostile = status.model_copy(
        update={
            "hosts": (host.model_copy(update={"seats": (seat,)}),),
            "findings": (finding,),
        }
    )
    record = BenchRecord(
        results=(
            BenchResult(
                seat=HOSTILE,
                host="tower",
                date=HOSTILE,
                decode_tok_s=DecodeStats(median=1.0, min=1.0, max=1.0, n=1),
            ),
        )
    )
    page = render_page(hostile, bench_series(record), History(), 30)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert page.count("<script") == 3  # Chart.js, the page's script, the data block
    assert "&lt;/script&gt;&lt;script&gt;alert(&quot;owned&quot;)" in page
    block = re.findall(r'id="bench-data">(.*?)</script>', page, re.S)[0]
    assert json.loads(block)[0]["seat"] == HOSTILE  # intact as data, inert as markup


def test_no_secret_reaches_the_page(fake: FakeFleet) -> None:
    dashboard = shown(fake)
    assert dashboard.status is not None
    key = MASTER_KEY["LITELLM_MASTER_KEY"]
    leak = Finding(kind=FindingKind.DEAD_ALIAS, target="chat", message=f"proxy said {key}")
    dashboard.status = dashboard.status.model_copy(update={"findings": (leak,)})
    for path in ("/", "/status.json"):
        reply = dashboard.answer(path)
        assert reply is not None and key not in reply.body.decode()
        assert "proxy said ***" in reply.body.decode()


@pytest.fixture
def served(fake: FakeFleet) -> Iterator[str]:
    server = serve(FleetMetrics(), "127.0.0.1:0", 30, shown(fake))
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.mark.parametrize(
    ("path", "status", "kind"),
    [
        ("/", 200, "text/html; charset=utf-8"),
        ("/status.json", 200, "application/json"),
        ("/assets/chart.umd.min.js", 200, "text/javascript; charset=utf-8"),
        ("/assets/dashboard.js", 200, "text/javascript; charset=utf-8"),
        ("/assets/dashboard.css", 200, "text/css; charset=utf-8"),
        ("/assets/../metrics.py", 404, "text/plain"),
        ("/assets/README.md", 404, "text/plain"),
        ("/metrics", 200, "text/plain"),
    ],
    ids=["page", "json", "chart.js", "script", "style", "traversal", "not-an-asset", "metrics"],
)
def test_the_server_answers_its_paths_only(served: str, path: str, status: int, kind: str) -> None:
    code, headers, _body = get(served + path)
    assert code == status and headers["Content-Type"].startswith(kind)
    if path != "/metrics" and status == 200:
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_the_json_is_the_pages_data(served: str) -> None:
    _, _, body = get(served + "/status.json")
    document = json.loads(body)
    status = FleetStatus.model_validate(document["status"])
    assert {h.name for h in status.hosts} == {"gateway", "rig", "tower"}
    assert document["bench"][0]["seat"] == "reason"
    assert document["history"]["plans"][0]["result"] == "in sync"


def test_history_lists_an_apply_once_and_keeps_the_newest() -> None:
    history = History()
    apply = Run(at="2026-12-05T01:00:00Z", kind="apply", summary="applied", desired_commit="a")
    for _ in range(3):
        history = history.add(apply)
    for n in range(25):
        history = history.add(Run(at=f"2026-12-05T02:{n:02d}:00Z", kind="plan", summary="p"))
    assert history.applies == (apply,)
    assert len(history.plans) == 20 and history.plans[0].at == "2026-12-05T02:24:00Z"


def test_fleet_serve_listens_where_told_and_stops(fake: FakeFleet) -> None:
    result = fake.fleet("serve", "--listen", "127.0.0.1:0", "--rounds", "2", "--interval", "5")
    assert result.returncode == 0, result.stderr
    assert "serving the dashboard on http://127.0.0.1:0/" in result.stderr
    assert len(fake.hosts["tower"].scripts) == 2  # refreshed, then stopped


def test_fleet_serve_refuses_an_address_it_cannot_listen_on(fake: FakeFleet) -> None:
    result = fake.fleet("serve", "--listen", "nowhere")
    assert result.returncode == 1
    assert "--listen takes HOST:PORT, not 'nowhere'" in result.stderr


def test_the_vendored_chart_js_is_the_pinned_release() -> None:
    script = (ASSET_DIR / "chart.umd.min.js").read_bytes()
    assert hashlib.sha256(script).hexdigest() == CHART_JS_SHA256
    assert script.startswith(b"/*!\n * Chart.js v4.5.1")
    assert "MIT License" in (ASSET_DIR / "chart.js-LICENSE.md").read_text()
    assert "chart.js@4.5.1" in (ASSET_DIR / "README.md").read_text()
