"""Every runtime a host can name has its pure module and its adapter, under one name."""

from __future__ import annotations

import pytest

from fleet.runtimes import RUNTIMES, runtime_for
from fleet.spec.host_settings import RUNTIME_SETTINGS
from fleet.spec.models import DesiredFleet, Gateway, Host, HostSsh
from reconciler.runtimes import ADAPTERS
from reconciler.workflows.gateway import restart_command


def test_the_names_a_host_may_give_are_the_runtimes_there_are() -> None:
    assert set(RUNTIME_SETTINGS) == set(RUNTIMES) == set(ADAPTERS)


@pytest.mark.parametrize("name", sorted(RUNTIMES), ids=sorted(RUNTIMES))
def test_each_adapter_runs_the_runtime_of_its_name(name: str) -> None:
    assert ADAPTERS[name].runtime is runtime_for(name)
    assert name == runtime_for(name).NAME


@pytest.mark.parametrize(
    ("runtime", "restart", "command"),
    [
        ("compose", {"container": "litellm"}, "docker restart litellm"),
        ("compose", {"instance": "litellm"}, "docker restart litellm"),
        ("systemd", {"instance": "litellm.service"}, "systemctl restart litellm.service"),
        ("systemd", {"command": "systemctl restart litellm"}, "systemctl restart litellm"),
    ],
    ids=["compose-container", "compose-instance", "systemd-unit", "command"],
)
def test_a_gateway_restarts_its_instance_the_way_its_hosts_runtime_does(
    runtime: str, restart: dict[str, str], command: str
) -> None:
    host = Host(name="gw", ssh=HostSsh(alias="gw"), address="10.0.0.9", runtime=runtime)
    gateway = Gateway(
        host="gw", config_path="/etc/litellm/config.yaml", url="http://gw:4000", restart=restart
    )
    fleet = DesiredFleet(hosts={"gw": host}, gateway=gateway)
    assert restart_command(fleet, gateway) == command
