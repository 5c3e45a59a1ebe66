"""The one exception tree of fleet, raised by the core and by every adapter.

    FleetError                      anything fleet reports as a user-facing error
    ├── SpecError                   desired/ cannot be loaded (YAML, schema); carries file:line
    ├── ValidationFailed            desired/ loaded but breaks a rule; carries the problems
    ├── FactError                   a fact could not be gathered or makes no sense
    ├── HostError                   a host could not be reached or refused a command
    │   ├── HostUnreachable         (temporary) the network or sshd did not answer
    │   └── HostAuthError           (permanent) a host key or a client key was refused
    ├── GatewayError                the LiteLLM gateway config or proxy misbehaved
    ├── PlanError                   a plan cannot be made or applied (blocking problems, stale plan)
    ├── ApplyError                  an apply step failed; `rolled_back` says what was restored
    ├── LockError                   a host is locked by another apply
    └── GitError                    the desired/ or inventory repository misbehaved

Adapters map library errors at their edge with `raise FleetError(...) from err`; the
command line is the one place that prints them and picks exit codes.
"""

from __future__ import annotations

from collections.abc import Sequence


class FleetError(Exception):
    """Base of every error fleet reports to a user as one line."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class SpecError(FleetError):
    """desired/ could not be read: bad YAML, an unknown key, a wrong type."""


class ValidationFailed(FleetError):
    """desired/ was read but breaks one or more rules; `problems` holds them all."""

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


class GatewayError(FleetError):
    """The gateway config could not be read or written, or the proxy misbehaved."""


class PlanError(FleetError):
    """A plan cannot be made, or a saved plan no longer matches the live fleet."""


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
