"""What the monitoring host's target folder holds: the files fleet keeps there, read
by `reconciler.workflows.observe` (a file absent is None) and compared by
`fleet.plan.targets` with what desired/ renders. The gateway's credentials file is only
known to exist or not: its text, a secret, is never read into an observation."""

from __future__ import annotations

from pydantic import Field

from fleet.base import CoreModel


class ObservedTargets(CoreModel):
    """The files of `monitoring.targets_dir` on `monitoring.host`, as read."""

    host: str
    folder: str
    files: dict[str, str | None] = Field(default_factory=dict, description="name -> text")
    credentials: bool = Field(False, description="the gateway's credentials file exists")
    error: str | None = Field(None, description="why the folder could not be read")
