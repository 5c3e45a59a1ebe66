"""Generate the fleet's Grafana dashboard and its provisioning file, from code.

    python deploy/grafana/generate.py          # rewrite dashboards/fleet.json and
                                               # provisioning/dashboards/fleet.yaml
    python deploy/grafana/generate.py --check  # exit 1 if they differ from what it makes

The panels are the table `PANELS` (title, kind, unit, queries), built with Grafana's own
Foundation SDK (PyPI `grafana-foundation-sdk`, pinned in pyproject.toml's dev extra).
Every query reads what the fleet's Prometheus scrapes from the target files `fleet
apply` writes (README, Monitoring): the engines' vLLM metrics (job fleet-seats, labelled
seat, host, engine, gpu, alias), LiteLLM's (fleet-gateway), the DCGM exporter's
(fleet-exporters) and `fleet reconcile --listen`'s own (fleet). The queries use plain
ranges, no Grafana macros, so promtool parses each as it is
(tests/unit/test_grafana_dashboard.py) and the lab's Prometheus answers each
(tests/integration/test_gateway_bluegreen_lab.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from grafana_foundation_sdk.builders import common, dashboard, prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as options
from grafana_foundation_sdk.models.dashboard import DataSourceRef, GridPos

HERE = Path(__file__).resolve().parent
DASHBOARD = HERE / "dashboards" / "fleet.json"
PROVISIONING = HERE / "provisioning" / "dashboards" / "fleet.yaml"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
SEATS = 'job="fleet-seats"'


@dataclass(frozen=True)
class Panel:
    """One panel: its title, kind (stat or timeseries), unit and (query, legend) pairs."""

    title: str
    queries: tuple[tuple[str, str], ...]
    kind: str = "timeseries"
    unit: str = "short"
    width: int = 12


ROWS: tuple[tuple[str, tuple[Panel, ...]], ...] = (
    (
        "Fleet at a glance",
        (
            Panel("Seats running", (("sum(fleet_seat_up)", "seats"),), "stat", width=4),
            Panel("Seat targets up", ((f"sum(up{{{SEATS}}})", "targets"),), "stat", width=4),
            Panel("Hosts answering", (("sum(fleet_host_up)", "hosts"),), "stat", width=4),
            Panel("Aliases answering", (("sum(fleet_alias_up)", "aliases"),), "stat", width=4),
            Panel(
                "Pending changes", (("sum(fleet_drift) or vector(0)", "changes"),), "stat", width=4
            ),
            Panel(
                "Targets down",
                (('count(up{job=~"fleet.*"} == 0) or vector(0)', "down"),),
                "stat",
                width=4,
            ),
        ),
    ),
    (
        "GPUs",
        (
            Panel(
                "GPU memory per GPU",
                (
                    ("DCGM_FI_DEV_FB_USED", "{{host}} GPU {{gpu}} used"),
                    ("DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE", "{{host}} GPU {{gpu}} total"),
                ),
                unit="decmbytes",
                width=24,
            ),
        ),
    ),
    (
        "Seats",
        (
            Panel(
                "Decode tokens/s per seat, against its baseline",
                (
                    (
                        f"sum by (seat) (rate(vllm:generation_tokens_total{{{SEATS}}}[5m]))",
                        "{{seat}} served",
                    ),
                    ("max by (seat) (fleet_bench_decode_tokens_per_second)", "{{seat}} bench"),
                    (
                        "max by (seat) (fleet_bench_baseline_decode_tokens_per_second)",
                        "{{seat}} baseline",
                    ),
                ),
                unit="short",
            ),
            Panel(
                "Running and waiting requests",
                (
                    (f"sum by (seat) (vllm:num_requests_running{{{SEATS}}})", "{{seat}} running"),
                    (f"sum by (seat) (vllm:num_requests_waiting{{{SEATS}}})", "{{seat}} waiting"),
                ),
            ),
            Panel(
                "KV cache use",
                ((f"max by (seat) (vllm:kv_cache_usage_perc{{{SEATS}}})", "{{seat}}"),),
                unit="percentunit",
            ),
            Panel(
                "Speculative decoding: accepted / drafted tokens",
                (
                    (
                        "sum by (seat) (rate(vllm:spec_decode_num_accepted_tokens_total"
                        f"{{{SEATS}}}[5m])) / sum by (seat) "
                        f"(rate(vllm:spec_decode_num_draft_tokens_total{{{SEATS}}}[5m]))",
                        "{{seat}}",
                    ),
                ),
                unit="percentunit",
            ),
        ),
    ),
    (
        "Gateway",
        (
            Panel(
                "Gateway requests per alias",
                (
                    (
                        "sum by (requested_model) "
                        "(rate(litellm_proxy_total_requests_metric_total[5m]))",
                        "{{requested_model}}",
                    ),
                ),
                unit="reqps",
            ),
            Panel(
                "Gateway errors per alias",
                (
                    (
                        "sum by (requested_model) "
                        "(rate(litellm_proxy_failed_requests_metric_total[5m])) or "
                        "sum by (requested_model) "
                        "(rate(litellm_proxy_total_requests_metric_total[5m])) * 0",
                        "{{requested_model}}",
                    ),
                ),
                unit="reqps",
            ),
        ),
    ),
    (
        "Apply and drift",
        (
            Panel(
                "Applies by result",
                (("sum by (result) (increase(fleet_apply_total[1h]))", "{{result}}"),),
                width=8,
            ),
            Panel(
                "Pending changes by kind", (("sum by (kind) (fleet_drift)", "{{kind}}"),), width=8
            ),
            Panel(
                "Findings by severity",
                (("sum by (severity) (fleet_findings)", "{{severity}}"),),
                width=8,
            ),
        ),
    ),
)


def queries() -> list[tuple[str, str]]:
    """(panel title, query) of every panel, in order."""
    return [(p.title, q) for _, panels in ROWS for p in panels for q, _ in p.queries]


def _panel(panel: Panel, ident: int, x: int, y: int) -> stat.Panel | timeseries.Panel:
    builder: stat.Panel | timeseries.Panel
    if panel.kind == "stat":
        last = common.ReduceDataOptions().calcs(["lastNotNull"]).values(False)
        builder = stat.Panel().reduce_options(last).graph_mode(options.BigValueGraphMode.AREA)
    else:
        legend = (
            common.VizLegendOptions()
            .show_legend(True)
            .display_mode(options.LegendDisplayMode.LIST)
            .placement(options.LegendPlacement.BOTTOM)
        )
        tooltip = common.VizTooltipOptions().mode(options.TooltipDisplayMode.MULTI)
        builder = timeseries.Panel().legend(legend).tooltip(tooltip)
    builder = builder.id(ident).title(panel.title).unit(panel.unit).datasource(DATASOURCE)
    height = 4 if panel.kind == "stat" else 8
    builder = builder.grid_pos(GridPos(h=height, w=panel.width, x=x, y=y))
    for ref, (query, legend_format) in zip("ABCDEFGH", panel.queries, strict=False):
        builder = builder.with_target(
            prometheus.Dataquery().expr(query).legend_format(legend_format).ref_id(ref)
        )
    return builder


def build() -> dashboard.Dashboard:
    """The dashboard: a row per topic, its panels laid out left to right."""
    board = (
        dashboard.Dashboard("Fleet")
        .uid("fleet")
        .tags(["fleet", "llm-inference"])
        .refresh("30s")
        .time("now-6h", "now")
        .with_variable(
            dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
        )
    )
    ident, y = 1, 0
    for title, panels in ROWS:
        board = board.with_row(
            dashboard.Row(title).id(ident).grid_pos(GridPos(h=1, w=24, x=0, y=y))
        )
        ident, y, x, tallest = ident + 1, y + 1, 0, 0
        for panel in panels:
            if x + panel.width > 24:
                x, y, tallest = 0, y + tallest, 0
            board = board.with_panel(_panel(panel, ident, x, y))
            tallest = max(tallest, 4 if panel.kind == "stat" else 8)
            ident, x = ident + 1, x + panel.width
        y += tallest
    return board


def dashboard_json() -> str:
    """The dashboard as Grafana provisions it (stable: keys sorted)."""
    return JSONEncoder(sort_keys=True, indent=2).encode(build().build()) + "\n"


def provisioning_yaml() -> str:
    """Grafana's dashboard provider, reading the folder the JSON is copied to."""
    return (
        "# Written by deploy/grafana/generate.py: Grafana loads fleet.json from this folder.\n"
        "apiVersion: 1\n"
        "providers:\n"
        "  - name: fleet\n"
        "    folder: Fleet\n"
        "    type: file\n"
        "    disableDeletion: true\n"
        "    allowUiUpdates: false\n"
        "    options:\n"
        "      path: /var/lib/grafana/dashboards/fleet\n"
        "      foldersFromFilesStructure: false\n"
    )


def main(argv: list[str]) -> int:
    wanted = {DASHBOARD: dashboard_json(), PROVISIONING: provisioning_yaml()}
    if "--check" in argv:
        stale = [str(p) for p, text in wanted.items() if not p.exists() or p.read_text() != text]
        for path in stale:
            print(f"{path} differs from what deploy/grafana/generate.py makes", file=sys.stderr)
        return 1 if stale else 0
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
