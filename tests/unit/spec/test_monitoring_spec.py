"""fleet.yaml's `monitoring:` and a host file's `exporters:`: what is accepted, and each
mistake as one line at its file and line."""

from __future__ import annotations

import pytest

from tests.unit.spec.test_validate import problems_after

MONITORING = "monitoring:\n  host: gateway\n  targets_dir: /etc/prometheus/fleet\n"
EXPORTERS = "exporters:\n  node: {port: 9100}\n  dcgm: {port: 9400, path: /metrics}\n"


def test_a_declared_monitoring_host_and_exporters_are_valid() -> None:
    more = MONITORING + "  fleet_target: 127.0.0.13:9464\n  gateway_credentials: ${PROM_KEY}\n"
    edits = [("fleet.yaml", "", more), ("hosts/tower.yaml", "", EXPORTERS)]
    assert [str(p) for p in problems_after(edits)] == []


CASES = [
    (
        "unknown-host",
        [("fleet.yaml", "", MONITORING.replace("host: gateway", "host: gatewy"))],
        "desired/fleet.yaml:27: error: host 'gatewy' is not in desired/hosts (known: gateway, "
        "rig, tower)",
    ),
    (
        "relative-folder",
        [("fleet.yaml", "", MONITORING.replace("/etc/prometheus/fleet", "prometheus"))],
        "desired/fleet.yaml:28: error: monitoring.targets_dir: String should match pattern",
    ),
    (
        "literal-credentials",
        [("fleet.yaml", "", MONITORING + "  gateway_credentials: hunter2hunter2\n")],
        "desired/fleet.yaml:29: error: 'gateway_credentials' holds a literal value",
    ),
    (
        "fleet-target-without-port",
        [("fleet.yaml", "", MONITORING + "  fleet_target: 127.0.0.13\n")],
        "desired/fleet.yaml:29: error: monitoring.fleet_target: String should match pattern",
    ),
    (
        "unknown-key",
        [("fleet.yaml", "", MONITORING + "  target_dir: /x\n")],
        "desired/fleet.yaml:29: error: unknown key 'target_dir' in monitoring",
    ),
    (
        "exporter-on-a-seat-port",
        [("hosts/tower.yaml", "", "exporters:\n  node: {port: 8030}\n")],
        "desired/hosts/tower.yaml:15: error: port 8030 is a seat's port",
    ),
    (
        "exporter-on-a-surge-port",
        [("hosts/tower.yaml", "", "exporters:\n  node: {port: 9030}\n")],
        "desired/hosts/tower.yaml:15: error: port 9030 is a seat's port",
    ),
    (
        "two-exporters-one-port",
        [("hosts/tower.yaml", "", "exporters:\n  node: {port: 9100}\n  dcgm: {port: 9100}\n")],
        "desired/hosts/tower.yaml:15: error: exporter 'dcgm' has port 9100 too",
    ),
    (
        "exporter-name",
        [("hosts/tower.yaml", "", "exporters:\n  Node: {port: 9100}\n")],
        "desired/hosts/tower.yaml:15: error: exporters.Node.[key]: String should match pattern",
    ),
    (
        "exporter-path",
        [("hosts/tower.yaml", "", "exporters:\n  node: {port: 9100, path: metrics}\n")],
        "desired/hosts/tower.yaml:15: error: exporters.node.path: String should match pattern",
    ),
]


@pytest.mark.parametrize(("edits", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_mistake_is_one_line_at_its_file_and_line(
    edits: list[tuple[str, str, str]], expected: str
) -> None:
    lines = [str(p) for p in problems_after(edits)]
    assert any(line.startswith(expected) for line in lines), "\n".join(lines)
