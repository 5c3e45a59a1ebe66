"""desired/fleet.yaml: the fleet-wide settings and defaults (`FleetSettings`).

Part of the desired-state model (`fleet.spec.models`, which re-exports it): the default
concurrency band, where the inventory goes, image pinning, SSH, the reconcile loop and the
model stores. Strict (`extra="forbid"`) and frozen; field descriptions feed `fleet schema`.
"""

from typing import Literal

from pydantic import Field

from fleet.base import CoreModel
from fleet.spec.model_origin import ModelStore
from fleet.spec.monitoring import Monitoring
from fleet.units import Seconds


class ConcurrencyBand(CoreModel):
    """Accepted range of KV-cache tokens / context length for a seat."""

    min: float = Field(description="Lowest acceptable concurrency, e.g. 1.2 (x).")
    max: float = Field(description="Highest acceptable concurrency, e.g. 2.5 (x).")


class InventorySettings(CoreModel):
    """Where the generated inventory goes."""

    path: str = Field("inventory/INVENTORY.md", description="Markdown path, repo-relative.")


class ComposeSettings(CoreModel):
    """How compose projects are named on the hosts."""

    project_prefix: str = Field(
        "fleet",
        pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$",
        description="Project name is <prefix>-<host>: lowercase letters, digits, '_' and '-'.",
    )


class ImagePolicy(CoreModel):
    """Image pinning policy."""

    floating_tags: tuple[str, ...] = Field(
        ("latest",), description="Tags that float and are therefore errors."
    )
    digest: Literal["error", "warn", "ignore"] = Field(
        "warn", description="What a tag without @sha256 digest is."
    )


class SshSettings(CoreModel):
    """SSH client settings shared by all hosts."""

    config_file: str | None = Field(
        None,
        description="Only ~/.ssh/config, the default: the ssh_config comes from the "
        "operator's environment ($FLEET_SSH_CONFIG, else ~/.ssh/config), never desired/.",
    )


class DenyWindow(CoreModel):
    """A time the reconcile loop changes nothing (UTC): `{days: [sat, sun], start: "00:00",
    end: "23:59"}`; `end` before `start` runs past midnight."""

    days: tuple[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"], ...] = Field(
        ("mon", "tue", "wed", "thu", "fri", "sat", "sun"), description="Days it applies on."
    )
    start: str = Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM, UTC.")
    end: str = Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM, UTC.")


class BenchSettings(CoreModel):
    """The loop's `fleet bench` of each seat, judged against BENCH.json, never committed."""

    interval: Seconds = Field(300.0, ge=1, description="How often: 30s, 5m, 1h or seconds.")
    via: Literal["seat", "gateway"] = Field("gateway", description="By first alias, or port.")
    depth: bool = Field(False, description="Also the deep prefill probe (~0.97x the context).")


class ReconcileSettings(CoreModel):
    """How `fleet reconcile` behaves (the GitOps loop)."""

    suspend: bool = Field(False, description="Observe and report, change nothing.")
    deny_windows: tuple[DenyWindow, ...] = Field((), description="Times it changes nothing.")
    webhook_url: str | None = Field(None, description="A ${ENV_VAR} URL for JSON events.")
    stuck_after: int = Field(
        120, ge=10, description="Seconds with requests but no token before a restart."
    )
    retries: int = Field(3, ge=0, description="Apply retries of a failing commit.")
    backoff: float = Field(
        30.0, ge=1, description="Seconds before the first retry; doubled each time, 30 min at most."
    )
    bench: BenchSettings | None = Field(None, description="Measure every seat on a schedule.")


class FleetSettings(CoreModel):
    """desired/fleet.yaml: fleet-wide defaults."""

    name: str = Field("fleet", description="A name for this fleet, used in commit messages.")
    concurrency_band: ConcurrencyBand = Field(
        ConcurrencyBand(min=1.2, max=2.5), description="Default band for every seat."
    )
    inventory: InventorySettings = InventorySettings()
    compose: ComposeSettings = ComposeSettings()
    images: ImagePolicy = ImagePolicy()
    ssh: SshSettings = SshSettings()
    reconcile: ReconcileSettings = ReconcileSettings()
    stores: dict[str, ModelStore] = Field(
        default_factory=dict, description="Model stores seats' `model.source` names."
    )
    monitoring: Monitoring | None = Field(
        None, description="Where apply keeps Prometheus's scrape targets of the fleet."
    )
