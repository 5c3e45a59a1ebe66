"""Prometheus's scrape targets of the fleet, as the files apply writes (pure).

`render_targets` turns desired/ (its seats on the ports they serve on, as
`fleet.plan.live_port` or a surge leaves them) into the files of the monitoring host's
`targets_dir`: file-based service discovery (`file_sd_configs`, JSON) per job, and the
scrape configs that read them. A file_sd target carries its address and labels, and the
`__scheme__` / `__metrics_path__` meta labels, but no credentials (Prometheus 2.42: the
authorization of a scrape is the job's), so the gateway job reads its bearer token from
a credentials file apply writes beside them from a `${VAR}` (never rendered here).
Called by `fleet.plan.targets` (what would change) and `reconciler.workflows.targets`.
"""

from __future__ import annotations

import json
import re

from fleet.gateways import kind_of
from fleet.spec.models import DesiredFleet
from fleet.spec.monitoring import Monitoring

SEATS = "fleet-seats.json"
GATEWAY = "fleet-gateway.json"
EXPORTERS = "fleet-exporters.json"
SELF = "fleet-self.json"
SCRAPE = "fleet-scrape-configs.yml"
CREDENTIALS = "fleet-gateway.credentials"
JOBS = (("fleet-seats", SEATS), ("fleet-gateway", GATEWAY), ("fleet-exporters", EXPORTERS))
Group = dict[str, object]
_URL = re.compile(r"^(?P<scheme>[a-z]+)://(?:[^@/]*@)?(?P<netloc>[^/?#]+)")


def seat_groups(desired: DesiredFleet) -> list[Group]:
    """One target per seat: its engine's /metrics on its live port."""
    groups: list[Group] = []
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        host = desired.hosts.get(seat.host)
        if host is None:
            continue
        labels = {
            "seat": seat.name,
            "host": seat.host,
            "engine": seat.engine,
            "gpu": ",".join(str(g) for g in seat.gpus) or "cpu",
            "alias": ",".join(seat.aliases),
        }
        groups.append(_group(f"{host.address}:{seat.port}", labels))
    return groups


def gateway_groups(desired: DesiredFleet) -> list[Group]:
    """The gateway's /metrics at the URL clients use."""
    gateway = desired.gateway
    if gateway is None:
        return []
    url = _URL.match(gateway.url)
    if url is None:
        return []
    labels = {"host": gateway.host, "gateway": gateway.kind}
    if url["scheme"] == "https":
        labels["__scheme__"] = "https"
    path = kind_of(gateway).metrics_path
    if path != "/metrics":
        labels["__metrics_path__"] = path
    return [_group(url["netloc"], labels)]


def exporter_groups(desired: DesiredFleet) -> list[Group]:
    """Every exporter a host declares, at the host's address."""
    groups: list[Group] = []
    for host in sorted(desired.hosts.values(), key=lambda h: h.name):
        for name, exporter in sorted(host.exporters.items()):
            labels = {"host": host.name, "exporter": name}
            if exporter.path != "/metrics":
                labels["__metrics_path__"] = exporter.path
            groups.append(_group(f"{host.address}:{exporter.port}", labels))
    return groups


def self_groups(desired: DesiredFleet, monitoring: Monitoring) -> list[Group]:
    """fleet's own `--listen` endpoint, if declared."""
    if monitoring.fleet_target is None:
        return []
    return [_group(monitoring.fleet_target, {"fleet": desired.settings.name})]


def _group(target: str, labels: dict[str, str]) -> Group:
    return {"targets": [target], "labels": dict(sorted(labels.items()))}


def as_json(groups: list[Group]) -> str:
    """A file_sd file: a JSON list of target groups, stable for Git and for comparing."""
    return json.dumps(groups, indent=2, sort_keys=True) + "\n"


def scrape_configs(desired: DesiredFleet, monitoring: Monitoring, authorized: bool) -> str:
    """The scrape configs that read the files (YAML, for prometheus.yml's scrape_configs
    or, from Prometheus 2.43, `scrape_config_files`); `authorized`: the gateway job sends
    the bearer token of the credentials file."""
    folder = monitoring.targets_dir.rstrip("/")
    jobs = [*JOBS, *((("fleet", SELF),) if monitoring.fleet_target else ())]
    lines = [
        "# Written by fleet apply from desired/: the jobs that scrape the fleet, each",
        "# reading its targets from a file fleet keeps in step with the seats.",
        "scrape_configs:",
    ]
    for job, file in jobs:
        lines.append(f"  - job_name: {job}")
        if job == "fleet-gateway" and authorized:
            lines += [
                "    authorization:",
                "      type: Bearer",
                f"      credentials_file: {folder}/{CREDENTIALS}",
            ]
        lines += ["    file_sd_configs:", f"      - files: [{folder}/{file}]"]
    return "\n".join(lines) + "\n"


def credentials_reference(desired: DesiredFleet) -> str | None:
    """The `${VAR}` (or LiteLLM's `os.environ/NAME`) holding the gateway's token, if any."""
    monitoring = desired.settings.monitoring
    if monitoring is not None and monitoring.gateway_credentials is not None:
        return monitoring.gateway_credentials
    return desired.gateway.master_key if desired.gateway is not None else None


def render_targets(desired: DesiredFleet) -> dict[str, str]:
    """File name -> text of every file fleet keeps in targets_dir ({} without monitoring)."""
    monitoring = desired.settings.monitoring
    if monitoring is None:
        return {}
    files = {
        SEATS: as_json(seat_groups(desired)),
        GATEWAY: as_json(gateway_groups(desired)),
        EXPORTERS: as_json(exporter_groups(desired)),
        SCRAPE: scrape_configs(desired, monitoring, credentials_reference(desired) is not None),
    }
    if monitoring.fleet_target is not None:
        files[SELF] = as_json(self_groups(desired, monitoring))
    return files


def describe(text: str | None) -> dict[str, str]:
    """A file_sd file as `job key -> target and labels`, for plan's changes (unreadable or
    absent: empty)."""
    try:
        groups = json.loads(text) if text else []
    except ValueError:
        return {}
    out: dict[str, str] = {}
    for group in groups if isinstance(groups, list) else []:
        labels = group.get("labels", {}) if isinstance(group, dict) else {}
        targets = group.get("targets", []) if isinstance(group, dict) else []
        if not isinstance(labels, dict) or not isinstance(targets, list):
            continue
        key = next((f"{k} {labels[k]}" for k in ("seat", "gateway", "fleet") if k in labels), "")
        if "exporter" in labels:
            key = f"exporter {labels.get('host')}/{labels['exporter']}"
        out[key or ",".join(map(str, targets))] = ",".join(map(str, targets))
    return out
