"""The one exception tree of fleet, raised by the core and by every adapter.

    FleetError                      anything fleet reports as a user-facing error
    ├── SpecError                   (permanent) desired/ cannot be loaded; carries file:line
    ├── ValidationFailed            (permanent) desired/ loaded but breaks a rule
    ├── FactError                   (temporary) a fact could not be gathered or makes no sense
    ├── HostError                   (temporary) a host refused a command
    │   ├── HostUnreachable         (temporary) the network or sshd did not answer
    │   └── HostAuthError           (permanent) a host key or a client key was refused
    ├── GatewayError                (temporary) the gateway config or proxy misbehaved
    ├── PlanError                   (permanent) a plan cannot be made or applied (blockers)
    ├── ApplyError                  (temporary) an apply step failed; `rolled_back` says what
    ├── LockError                   (temporary) a host is locked by another apply
    └── GitError                    (temporary) the desired/ or inventory repository misbehaved

Adapters map library errors at their edge with `raise FleetError(...) from err`; the
command line is the one place that prints them and picks exit codes. `temporary` says
what kopf's TemporaryError and PermanentError say: whether trying again later may work
(the reconcile loop backs off exponentially) or not until a person changes something
(the loop reports it once and stops retrying until desired/ moves).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar


class FleetError(Exception):
    """Base of every error fleet reports to a user as one line."""

    temporary: ClassVar[bool] = True  # may work if tried again later (see the tree above)

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class SpecError(FleetError):
    """desired/ could not be read: bad YAML, an unknown key, a wrong type."""

    temporary = False


class ValidationFailed(FleetError):
    """desired/ was read but breaks one or more rules; `problems` holds them all."""

    temporary = False

    def __init__(self, message: str, problems: Sequence[object]) -> None:
        super().__init__(message)
        self.problems = list(problems)


class FactError(FleetError):
    """A fact could not be gathered or parsed."""


class HostError(FleetError):
    """A host could not be reached, or a command on it failed."""


class HostUnreachable(HostError):
    """The host or its sshd did not answer; trying again later may work."""


class HostAuthError(HostError):
    """A host key was unknown or changed, or the client key was refused."""

    temporary = False


class GatewayError(FleetError):
    """The gateway config could not be read or written, or the proxy misbehaved."""


class PlanError(FleetError):
    """A plan cannot be made, or a saved plan no longer matches the live fleet."""

    temporary = False


class ApplyError(FleetError):
    """An apply step failed; `rolled_back` lists what was put back."""

    def __init__(self, message: str, *, rolled_back: list[str] | None = None) -> None:
        super().__init__(message)
        self.rolled_back = rolled_back or []


class Interrupted(ApplyError):
    """An apply stopped on SIGTERM or SIGINT: `done` stayed changed, `rolled_back` was put
    back; `signal_number` picks the exit code (128 + it)."""

    def __init__(
        self,
        message: str,
        *,
        signal_number: int,
        done: list[str] | None = None,
        rolled_back: list[str] | None = None,
    ) -> None:
        super().__init__(message, rolled_back=rolled_back)
        self.signal_number = signal_number
        self.done = done or []


class LockError(FleetError):
    """A host is locked by another apply."""


class GitError(FleetError):
    """A Git operation on the fleet repository failed."""
