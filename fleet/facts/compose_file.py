"""The services of the compose file fleet last wrote on a host, as plain data.

Read by the fact script (`cat <compose_dir>/compose.yaml`, read-only) so that plan can
say which keys of a service changed (an environment variable, a mount, the health check)
when only the spec-hash label tells the running container from desired/. Total: text
that is no compose file gives no services. libyaml reads it (`fleet.yaml_reader`)
wherever it can promise ruamel.yaml's reading, which is every file fleet renders;
ruamel.yaml reads the rest.
"""

from __future__ import annotations

from io import StringIO
from typing import Any

from fleet.yaml_reader import read_yaml


def parse_compose_services(text: str) -> dict[str, dict[str, Any]]:
    """`services:` of a compose file, by name; {} for anything else."""
    doc = read_yaml(text)
    tree = doc.data if doc is not None else _read_with_ruamel(text)
    services = tree.get("services") if isinstance(tree, dict) else None
    if not isinstance(services, dict):
        return {}
    return {str(k): dict(v) for k, v in services.items() if isinstance(v, dict)}


def _read_with_ruamel(text: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="safe", pure=True).load(StringIO(text))
    except (YAMLError, ValueError, RecursionError, TypeError, AttributeError):
        return None
