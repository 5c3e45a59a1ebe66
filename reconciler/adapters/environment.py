"""Settings that name an environment variable (`${VAR}`): the gateway's master key, its
scrape credentials, a hub token, the webhook URL. desired/ holds only the reference; the
value is read from the controller's environment when a command needs it and never reaches
an observation, a plan or a report.
"""

from __future__ import annotations

import os
import re

from fleet.errors import FleetError

_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def resolve(reference: str, field: str, what: str, error: type[FleetError]) -> str:
    """The value of the variable `reference` (`${VAR}`) names. `error` if the setting is
    not such a reference (naming its `field`) or the variable is unset or empty (naming
    `what` it holds)."""
    match = _REFERENCE.match(reference.strip())
    if match is None:
        raise error(f"{field} must be a ${{ENV_VAR}} reference")
    value = os.environ.get(match.group(1))
    if not value:
        raise error(f"environment variable {match.group(1)} ({what}) is not set")
    return value
