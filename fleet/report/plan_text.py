"""Print a `Plan` for people: terminal lines (Terraform-like) and a PR comment in Markdown.

Pure: returns text (terminal lines come with a style name the CLI maps to colours).
The Markdown is kept under `MARKDOWN_LIMIT` characters, long parts truncated with a note.
A created or replaced seat shows its prediction beside its action: KV tokens and
concurrency against the band, where the figure came from, its GPUs' memory, and what
could not be read.
"""

from __future__ import annotations

import json

from fleet.base import Severity
from fleet.plan.actions import Action, ActionKind, Wave
from fleet.plan.plan import Plan
from fleet.plan.predict import Prediction

STYLE_OF = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "dim"}

STYLE_OF = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "dim"}

MARKDOWN_LIMIT = 60_000
SYMBOL = {
    ActionKind.FETCH_MODEL: ("+", "green"),
    ActionKind.CREATE_SEAT: ("+", "green"),
    ActionKind.ADD_ALIAS: ("+", "green"),
    ActionKind.REPLACE_SEAT: ("~", "yellow"),
    ActionKind.RETARGET_ALIAS: ("~", "yellow"),
    ActionKind.RESTART_GATEWAY: ("~", "yellow"),
    ActionKind.REMOVE_SEAT: ("-", "red"),
    ActionKind.REMOVE_COPY: ("-", "red"),
    ActionKind.REMOVE_ALIAS: ("-", "red"),
    ActionKind.ADD_CLIENT: ("+", "green"),
    ActionKind.UPDATE_CLIENT: ("~", "yellow"),
    ActionKind.REKEY_CLIENT: ("~", "yellow"),
    ActionKind.REVOKE_CLIENT: ("-", "red"),
    ActionKind.WRITE_TARGETS: ("~", "yellow"),
}
Line = tuple[str, str]  # (style, text)


def title(action: Action) -> str:
    """`seat sec on tower`, `alias chat`, `gateway restart`."""
    noun = action.kind.value.split("-", 1)[1]
    if noun == "client":  # `client tanko: key for coder, chat -> host:file VARIABLE`
        return f"client {action.target}: {action.reasons[0] if action.reasons else ''}"
    if noun == "gateway":
        return f"restart gateway on {action.host}"
    if noun == "targets":
        return f"targets {action.target} on {action.host}"
    if noun == "model":
        return f"model {action.target.rstrip('/').rsplit('/', 1)[-1]} on {action.host}"
    return f"{noun} {action.target}" + (f" on {action.host}" if noun == "seat" else "")


def _value(value: object) -> str:
    return json.dumps(value, sort_keys=True) if not isinstance(value, str) else value


def live_line(commit: str | None) -> str:
    """Which desired/ revision the hosts run, as the last finished apply recorded it."""
    if not commit:
        return "no finished apply recorded on the hosts"
    sha, dirty, _ = commit.partition("+")
    return f"desired/ at {sha[:12]}{' with uncommitted changes' if dirty else ''} (last apply)"


def plan_lines(plan: Plan, *, diff: bool = False) -> list[Line]:
    """The plan as styled terminal lines; `diff` adds the inventory diff under the drift."""
    lines: list[Line] = [("bold", f"Plan: {plan.summary()}")]
    lines.append(("dim", f"Live: {live_line(plan.live_commit)}"))
    for wave in Wave:
        actions = [a for a in plan.actions if a.wave is wave]
        if actions:
            lines.append(("bold", f"\nWave {wave.value}: {wave.title}"))
        for action in actions:
            symbol, style = SYMBOL[action.kind]
            lines.append((style, f"  {symbol} {title(action)}"))
            lines += [
                ("dim", f"      {reason}")
                for reason in action.reasons[1 if action.wave is Wave.CLIENTS else 0 :]
                if not reason.endswith(" changes")
            ]
            lines += [
                ("yellow", f"      ~ {c.field}: {_value(c.old)} -> {_value(c.new)}")
                for c in action.changes
            ]
            if action.prediction is not None:
                lines += prediction_lines(action.prediction)
            if action.strategy_line is not None:
                lines.append(
                    (
                        "cyan" if action.strategy == "surge" else "yellow",
                        f"      {symbol} {action.strategy_line}",
                    )
                )
    if plan.noops:
        lines.append(("bold", "\nIn sync"))
        lines += [("dim", f"  = {n.target}: {n.reason}") for n in plan.noops]
    lines += _tail_lines(plan, diff)
    return lines


def prediction_lines(prediction: Prediction) -> list[Line]:
    """`= KV 10GiB -> ~109,000 tokens, max concurrency 1.67x at 65,536 (band 1.2x..2.5x),
    estimate`, its GPUs, gaps."""
    band = prediction.band
    concurrency = prediction.band_concurrency
    inside = concurrency is None or band.min <= concurrency <= band.max
    lines: list[Line] = [("cyan" if inside else "red", f"      = {prediction.describe()}")]
    if prediction.memory is not None:
        lines.append(("cyan", f"      = {prediction.memory.describe()}"))
    if prediction.ram is not None:
        lines.append(("cyan", f"      = {prediction.ram}"))
    lines += [
        ("dim", f"      = GPU {gpu}: {m.used_mib:,} of {m.total_mib:,} MiB with every seat on it")
        for gpu, m in sorted(prediction.gpu_memory.items())
    ]
    return lines + [("dim", f"      ? {note}") for note in prediction.unknown]


def _tail_lines(plan: Plan, diff: bool) -> list[Line]:
    lines: list[Line] = []
    if plan.blockers:
        lines.append(("bold red", "\nBlockers (apply refuses this plan)"))
        lines += [("red", f"  ! {b.target}: {b.message}") for b in plan.blockers]
    if plan.findings:
        lines.append(("bold", "\nFindings"))
        lines += [
            (STYLE_OF[f.severity], f"  {f.severity.value} {f.kind.value} {f.target}: {f.message}")
            for f in plan.findings
        ]
    if plan.drift:
        lines.append(("bold", "\nDrift (the live fleet differs from the committed inventory)"))
        lines += [("magenta", f"  {d}") for d in plan.drift]
        if diff:
            lines += [("magenta", f"  {d}") for d in plan.drift_diff]
    return lines


def plan_markdown(plan: Plan) -> str:
    """A PR comment: summary table, per-seat details collapsed, findings; size-bounded."""
    head = [
        "## fleet plan",
        "",
        f"**{plan.summary()}**"
        + (f" at `{plan.desired_commit[:12]}`" if plan.desired_commit else ""),
        "",
        f"Live: {live_line(plan.live_commit)}",
        "",
    ]
    if plan.blockers:
        head += ["> [!CAUTION]", "> Apply refuses this plan:"]
        head += [f"> - `{b.target}`: {b.message}" for b in plan.blockers] + [""]
    head += ["| | action | target | why |", "|---|---|---|---|"]
    head += [
        f"| {SYMBOL[a.kind][0]} | {a.kind.value} | `{a.target}` | "
        f"{'; '.join(_why(a)).replace('|', '/')} |"
        for a in plan.actions
    ]
    if not plan.actions:
        head.append("| = | none | | everything is in sync |")
    body = [_details(a) for a in plan.actions if a.changes]
    tail = _markdown_tail(plan)
    return _fit("\n".join(head) + "\n", body, tail)


def _why(action: Action) -> list[str]:
    """An action's reasons, and its prediction when it has one."""
    prediction = action.prediction
    line = action.strategy_line
    return [
        *action.reasons,
        *([prediction.describe()] if prediction else []),
        *([line] if line else []),
    ]


def _details(action: Action) -> str:
    rows = "\n".join(
        f"| `{c.field}` | `{_value(c.old)}` | `{_value(c.new)}` |" for c in action.changes
    )
    return (
        f"\n<details><summary>{title(action)}: {len(action.changes)} field(s)</summary>\n\n"
        f"| field | now | desired |\n|---|---|---|\n{rows}\n\n</details>\n"
    )


def _markdown_tail(plan: Plan) -> str:
    parts = []
    if plan.findings:
        parts += ["\n### Findings\n"] + [
            f"- **{f.kind.value}** `{f.target}`: {f.message}" for f in plan.findings
        ]
    if plan.drift:
        parts += ["\n### Drift from the committed inventory\n", *(f"- {d}" for d in plan.drift)]
        if plan.drift_diff:
            parts += ["\n<details><summary>Inventory diff</summary>\n", "```diff"]
            parts += [*plan.drift_diff, "```", "</details>"]
    if plan.noops:
        parts += ["\n<details><summary>In sync</summary>\n"]
        parts += [f"- `{n.target}`: {n.reason}" for n in plan.noops] + ["\n</details>"]
    return "\n".join(parts) + "\n"


def _fit(head: str, body: list[str], tail: str) -> str:
    """Join the parts, dropping details and then cutting the tail to stay under the limit."""
    note = "\n_Truncated to stay under GitHub's comment limit; run `fleet plan` for all._\n"
    text = head
    for index, part in enumerate(body):
        if len(text) + len(part) + len(tail) + len(note) > MARKDOWN_LIMIT:
            return _cut(
                text + f"\n_{len(body) - index} more detail section(s) left out._\n" + tail, note
            )
        text += part
    return _cut(text + tail, note)


def _cut(text: str, note: str) -> str:
    if len(text) <= MARKDOWN_LIMIT:
        return text
    return text[: MARKDOWN_LIMIT - len(note)] + note
