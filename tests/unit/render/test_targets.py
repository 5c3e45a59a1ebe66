"""The target files apply writes for Prometheus (fleet.render.targets): each seat's engine
on its live port with its labels, the gateway, the declared exporters, fleet itself; and
the scrape configs that read them, which Prometheus 2.42's promtool accepts."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fleet.render import targets
from fleet.spec.load import load_fleet
from fleet.spec.models import DesiredFleet
from tests.unit.spec.test_validate import example_files

MONITORING = (
    "monitoring:\n  host: gateway\n  targets_dir: /etc/prometheus/fleet/\n"
    "  fleet_target: 127.0.0.13:9464\n"
)
EXPORTERS = "exporters:\n  node: {port: 9100}\n  dcgm: {port: 9400, path: /gpu/metrics}\n"


def example(monitoring: str = MONITORING) -> DesiredFleet:
    files = example_files()
    files["fleet.yaml"] += monitoring
    files["hosts/tower.yaml"] += EXPORTERS
    loaded = load_fleet(files)
    assert loaded.fleet is not None, loaded.problems
    return loaded.fleet


def groups(desired: DesiredFleet, name: str) -> dict[str, tuple[list[str], dict[str, str]]]:
    out = {}
    for group in json.loads(targets.render_targets(desired)[name]):
        labels = group["labels"]
        key = labels.get("seat") or labels.get("exporter") or labels.get("gateway") or "fleet"
        out[key] = (group["targets"], labels)
    return out


def test_every_seat_is_a_target_with_its_labels() -> None:
    seats = groups(example(), targets.SEATS)
    assert seats["sec"] == (
        ["127.0.0.11:8025"],
        {
            "alias": "sec,sec-reasoning",
            "engine": "vllm",
            "gpu": "0",
            "host": "tower",
            "seat": "sec",
        },
    )
    assert seats["reason"][1]["gpu"] == "2,3"  # tensor parallel: both GPUs
    assert set(seats) == set(example().seats)


def test_a_seat_on_its_second_port_is_scraped_there() -> None:
    desired = example().flipped("sec")
    assert groups(desired, targets.SEATS)["sec"][0] == ["127.0.0.11:9025"]


@pytest.mark.parametrize(
    ("name", "key", "expected"),
    [
        (targets.EXPORTERS, "node", (["127.0.0.11:9100"], {"exporter": "node", "host": "tower"})),
        (
            targets.EXPORTERS,
            "dcgm",
            (
                ["127.0.0.11:9400"],
                {"__metrics_path__": "/gpu/metrics", "exporter": "dcgm", "host": "tower"},
            ),
        ),
        (
            targets.GATEWAY,
            "litellm",
            (
                ["127.0.0.13:4000"],
                {"__metrics_path__": "/metrics/", "gateway": "litellm", "host": "gateway"},
            ),
        ),
        (targets.SELF, "fleet", (["127.0.0.13:9464"], {"fleet": "lab-fleet"})),
    ],
    ids=["node-exporter", "dcgm-exporter-own-path", "gateway", "fleet-itself"],
)
def test_the_other_targets(name: str, key: str, expected: tuple[list[str], dict[str, str]]) -> None:
    assert groups(example(), name)[key] == expected


def test_no_monitoring_no_files_and_no_credentials_are_rendered() -> None:
    files = example_files()
    loaded = load_fleet(files)
    assert loaded.fleet is not None
    assert targets.render_targets(loaded.fleet) == {}
    rendered = targets.render_targets(example())
    assert targets.CREDENTIALS not in rendered
    assert all("LITELLM_MASTER_KEY" not in text for text in rendered.values())


def test_the_scrape_configs_pass_promtool(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: Debian's prometheus package (tests/lab/install.sh)"
    folder = tmp_path / "fleet"
    desired = example(MONITORING.replace("/etc/prometheus/fleet/", str(folder)))
    folder.mkdir()
    for name, text in targets.render_targets(desired).items():
        (folder / name).write_text(text)
    (folder / targets.CREDENTIALS).write_text("token\n")
    config = tmp_path / "prometheus.yml"
    config.write_text("global: {scrape_interval: 15s}\n" + (folder / targets.SCRAPE).read_text())
    result = subprocess.run(
        [promtool, "check", "config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
    text = (folder / targets.SCRAPE).read_text()
    assert f"credentials_file: {folder}/{targets.CREDENTIALS}" in text
    assert text.count("job_name:") == 4


def test_a_gateway_behind_https_is_scraped_over_https() -> None:
    desired = example()
    assert desired.gateway is not None
    gateway = desired.gateway.model_copy(update={"url": "https://llm.example.org:8443/v1"})
    served = groups(desired.model_copy(update={"gateway": gateway}), targets.GATEWAY)["litellm"]
    assert served[0] == ["llm.example.org:8443"]
    assert served[1]["__scheme__"] == "https"
