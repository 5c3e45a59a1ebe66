"""The plan: ordered actions that would make the live fleet match desired/, as data.

`make_plan` is pure (desired/ + an `Observation` in, `Plan` out, its fingerprint
included). Waves follow from the action kinds (`fleet.plan.actions`): seats per host,
the gateway (alias changes, then its restart), removals (only with prune).
A seat in sync yields a no-op that says why. Blockers (a missing model, GPU memory that
will not fit, a flag the image's vLLM does not know, an unreachable host) stop apply.
The plan can be saved with the fingerprint of every fact it relied on (`fleet.plan.fingerprint`).
"""

from __future__ import annotations

from pydantic import Field

from fleet.base import CoreModel
from fleet.gc_pause import paused
from fleet.names import HASH_LABEL
from fleet.observed.findings import Finding, find_issues
from fleet.observed.models import Observation
from fleet.plan import blockers, clients, fetch, fit, served, strategy, targets
from fleet.plan.actions import (
    ALIAS_CHANGES,
    CLIENT_CHANGES,
    SEAT_CHANGES,
    Action,
    ActionKind,
    Blocker,
    NoOp,
    Wave,
)
from fleet.plan.adopt import adopt
from fleet.plan.aliases import alias_actions
from fleet.plan.diff import desired_shape, diff_seat, observed_shape
from fleet.plan.fingerprint import fingerprint
from fleet.plan.handoff import Untouchable
from fleet.plan.live_port import follow_live_ports
from fleet.spec.models import DesiredFleet, Seat
from fleet.units import format_bytes


class Plan(CoreModel):
    """Everything `fleet plan` found, and what `fleet apply` would do."""

    created_at: str
    desired_commit: str | None = None
    live_commit: str | None = Field(
        None, description="the desired/ commit the last finished apply made live (from hosts)"
    )
    actions: tuple[Action, ...] = ()
    noops: tuple[NoOp, ...] = ()
    blockers: tuple[Blocker, ...] = ()
    findings: tuple[Finding, ...] = ()
    drift: tuple[str, ...] = Field(
        (), description="live vs the committed inventory: one line per seat, alias or GPU"
    )
    drift_diff: tuple[str, ...] = Field(
        (), description="the same as changed lines of the inventory Markdown (plan --diff)"
    )
    only_seats: tuple[str, ...] = Field((), description="--seat: the seats this plan covers")
    live_on_second: tuple[str, ...] = Field(
        (), description="seats serving on their second port (a surge moved them) when planned"
    )
    fingerprint: dict[str, str] = Field(default_factory=dict)

    def count(self, kind: ActionKind) -> int:
        """How many actions of one kind."""
        return sum(1 for a in self.actions if a.kind is kind)

    def summary(self) -> str:
        """`N to create, N to replace, N to remove, N alias changes`."""
        aliases = sum(
            self.count(k)
            for k in (ActionKind.ADD_ALIAS, ActionKind.RETARGET_ALIAS, ActionKind.REMOVE_ALIAS)
        )
        fetches = self.count(ActionKind.FETCH_MODEL)
        keys = sum(1 for a in self.actions if a.kind in CLIENT_CHANGES)
        files = self.count(ActionKind.WRITE_TARGETS)
        return (
            (f"{fetches} model{'s' if fetches > 1 else ''} to fetch, " if fetches else "")
            + f"{self.count(ActionKind.CREATE_SEAT)} to create, "
            f"{self.count(ActionKind.REPLACE_SEAT)} to replace, "
            f"{self.count(ActionKind.REMOVE_SEAT)} to remove, {aliases} alias changes"
            + (f", {keys} client change{'s' if keys > 1 else ''}" if keys else "")
            + (f", {files} target file{'s' if files > 1 else ''} to write" if files else "")
        )

    @property
    def empty(self) -> bool:
        """True when there is nothing to do."""
        return not self.actions


def make_plan(
    desired: DesiredFleet,
    observation: Observation,
    *,
    prune: bool = False,
    only_seats: frozenset[str] = frozenset(),
    desired_commit: str | None = None,
    drift: tuple[str, ...] = (),
    drift_diff: tuple[str, ...] = (),
) -> Plan:
    """The plan for the observed fleet; `only_seats` limits seat actions to those named."""
    with paused():  # plan builds no cycles: the collector would only walk its inputs again
        return _plan(desired, observation, prune, only_seats, desired_commit, drift, drift_diff)


def _plan(
    desired: DesiredFleet,
    observation: Observation,
    prune: bool,
    only_seats: frozenset[str],
    desired_commit: str | None,
    drift: tuple[str, ...],
    drift_diff: tuple[str, ...],
) -> Plan:
    desired = follow_live_ports(desired, observation)
    seat_actions: list[Action] = []
    noops: list[NoOp] = []
    for name in sorted(desired.seats):
        if only_seats and name not in only_seats:
            continue
        found, noop = _seat_action(desired, observation, name)
        seat_actions += [_predicted(desired, observation, a) for a in found]
        noops += [noop] if noop else []
    others = fetch.fetch_actions(desired, observation, only_seats)
    others += alias_actions(desired, observation, only=only_seats)
    others += _removals(desired, observation, prune, only_seats)
    busy = _untouchable(seat_actions + others)
    actions = [_strategy(desired, observation, a, busy) for a in seat_actions] + others
    actions += served.copy_actions(desired, observation, only_seats)
    restart, front_blockers = served.gateway_actions(desired, observation, actions)
    actions += restart
    module = clients.module_restart(desired, observation)
    if module is not None and not any(a.kind is ActionKind.RESTART_GATEWAY for a in actions):
        actions.append(module)
    keyed, key_blockers = ([], []) if only_seats else clients.client_actions(desired, observation)
    actions += keyed
    writes, target_findings = targets.target_actions(desired, observation, actions)
    actions += writes
    if not any(a.wave is Wave.GATEWAY for a in actions) and observation.gateway is not None:
        noops.append(NoOp(target="gateway", reason="every alias routes as desired/ says"))
    actions.sort(key=lambda a: a.sort_key)
    return Plan(
        only_seats=tuple(sorted(only_seats)),
        live_on_second=tuple(sorted(desired.live_on_second)),
        created_at=observation.observed_at,
        desired_commit=desired_commit,
        live_commit=observation.live_commit,
        actions=tuple(actions),
        noops=tuple(noops),
        blockers=tuple(blockers.find_blockers(desired, observation, actions))
        + tuple(_surge_blockers(desired, actions))
        + tuple(front_blockers)
        + tuple(key_blockers),
        findings=tuple(
            sorted(
                [*find_issues(desired, observation), *target_findings],
                key=lambda f: (f.kind.value, f.target, f.message),
            )
        ),
        drift=drift,
        drift_diff=drift_diff,
        fingerprint=fingerprint(desired, observation, tuple(actions)),
    )


def _predicted(desired: DesiredFleet, observation: Observation, action: Action) -> Action:
    """A created or replaced seat's action with what its engine is predicted to get."""
    if action.kind not in SEAT_CHANGES or action.target not in desired.seats:
        return action
    prediction = fit.predict_seat(desired, observation, desired.seats[action.target])
    return action.model_copy(update={"prediction": prediction})


def _untouchable(actions: list[Action]) -> Untouchable:
    """The seats and aliases this plan changes: no handoff may lean on them."""
    return Untouchable(
        seats=frozenset(a.target for a in actions if a.wave in (Wave.SEATS, Wave.REMOVALS)),
        aliases=frozenset(a.target for a in actions if a.kind in ALIAS_CHANGES),
    )


def _strategy(
    desired: DesiredFleet, observation: Observation, action: Action, busy: Untouchable
) -> Action:
    """A replaced seat's action with how it is replaced (surge or recreate), why, and
    (recreate) which aliases its healthy fallbacks serve meanwhile."""
    found = observation.seat(action.target)
    if action.kind is not ActionKind.REPLACE_SEAT or found is None:
        return action
    if action.adopts is not None or not found[1].instance.running:
        why = "it takes over a hand-made container" if action.adopts else "nothing serves now"
        choice = strategy.Choice(strategy="recreate", why=why)
    else:
        seat = desired.seats[action.target]
        choice = strategy.choose(desired, observation, seat)
        choice = choice.handing_off(desired, observation, seat, busy)
    return action.model_copy(
        update={
            "strategy": choice.strategy,
            "downtime": choice.downtime,
            "handoffs": choice.handoffs,
            "strategy_line": choice.line(action.target),
        }
    )


def _surge_blockers(desired: DesiredFleet, actions: list[Action]) -> list[Blocker]:
    """A seat desired/ says to surge, where its host's runtime runs one copy only."""
    pinned = [a for a in actions if a.strategy == "surge" and a.target in desired.seats]
    unit = [a for a in pinned if not strategy.can_surge(desired, desired.seats[a.target])]
    return [
        Blocker(target=a.target, message=f"strategy: surge, but {strategy.ONE_COPY}") for a in unit
    ]


def describe(seat: Seat) -> str:
    """One line a reviewer reads for a new seat: where, what, how big."""
    gpus = f"GPU {', '.join(map(str, seat.gpus))}" if seat.gpus else "CPU"
    budget = (
        f"KV {format_bytes(seat.kv_cache_bytes)}"
        if seat.kv_cache_bytes is not None
        else f"gpu_memory_utilization {seat.gpu_memory_utilization}"
    )
    spec = seat.speculative
    drafting = f", {spec.method} k={spec.num_tokens}" if spec else ""
    return (
        f"{gpus}: {seat.model} as {seat.served_name}, context {seat.context:,}, "
        f"{budget}{drafting}, port {seat.port}, {seat.image}"
    )


def _seat_action(
    desired: DesiredFleet, observation: Observation, name: str
) -> tuple[list[Action], NoOp | None]:
    seat = desired.seats[name]
    host = desired.hosts[seat.host]
    found = observation.seat(name)
    if found is None and (adopted := adopt(desired, observation, name)) is not None:
        return adopted
    if found is None:
        return [
            Action(
                kind=ActionKind.CREATE_SEAT,
                target=name,
                host=seat.host,
                reasons=(f"no container for seat {name} on {seat.host}", describe(seat)),
            )
        ], None
    live_host, live = found
    if live_host.name != seat.host:
        return [
            Action(
                kind=ActionKind.CREATE_SEAT,
                target=name,
                host=seat.host,
                reasons=(f"moves from {live_host.name} to {seat.host}", describe(seat)),
            ),
            Action(
                kind=ActionKind.REMOVE_SEAT,
                target=name,
                host=live_host.name,
                reasons=(f"moved to {seat.host}",),
            ),
        ], None
    changes = diff_seat(desired_shape(seat, host), observed_shape(live))
    reasons = [] if live.instance.running else [f"container is {live.instance.state}"]
    if changes or reasons:
        reasons += [f"{c.field} changes" for c in changes]
        return [
            Action(
                kind=ActionKind.REPLACE_SEAT,
                target=name,
                host=seat.host,
                reasons=tuple(reasons),
                changes=tuple(changes),
            )
        ], None
    label = live.instance.labels.get(HASH_LABEL, "?")
    return [], NoOp(
        target=name,
        reason=f"in sync: running, spec hash {label} matches and "
        "its argv carries every flag desired/ implies",
    )


def _removals(
    desired: DesiredFleet, observation: Observation, prune: bool, only_seats: frozenset[str]
) -> list[Action]:
    if not prune:
        return []
    actions = []
    for host in sorted(observation.hosts.values(), key=lambda h: h.name):
        for seat in host.seats:
            if (
                seat.managed
                and seat.name not in desired.seats
                and (not only_seats or seat.name in only_seats)
            ):
                actions.append(
                    Action(
                        kind=ActionKind.REMOVE_SEAT,
                        target=seat.name,
                        host=host.name,
                        reasons=("not in desired/ (--prune)",),
                    )
                )
    return actions
