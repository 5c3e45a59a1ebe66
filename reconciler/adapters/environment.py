"""Settings that name an environment variable (`${VAR}`): the gateway's master key, its
scrape credentials, a hub token, the webhook URL, a seat's env. desired/ holds only the
reference; the value is read from the controller's environment when a command needs it
and never reaches an observation, a plan or a report.
"""

from __future__ import annotations

import os
import re

from fleet.errors import ApplyError, FleetError
from fleet.secrets import referenced_variables

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


def seat_secrets(text: str) -> dict[str, str]:
    """The values of the `${VAR}` interpolations in a seat's definition, by name (sorted),
    for the host runtime's private env file; ApplyError if one is unset (empty is a value)."""
    values = {}
    for name in referenced_variables(text):
        value = os.environ.get(name)
        if value is None:
            raise ApplyError(f"environment variable {name} (used by a seat's env) is not set")
        values[name] = value
    return values
