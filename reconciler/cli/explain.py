"""`fleet explain`: print the facts fleet reads off an engine log or a model config.

Mounted by the main command line (`app.add_typer(explain_app, name="explain")`). This is
the shell side: it reads the files, hands the text to the pure parsers in `fleet.facts`
and prints a table, or JSON with `--json`. A file that cannot be read raises `FactError`,
which the main command line prints as one red line. `explain log FILE --model CONFIG`
shows what plan predicts from the config (KV tokens and maximum concurrency, the KV cache
laid out as vLLM lays it out) beside what the engine logged.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import output_of
from reconciler.cli.output import Output

if TYPE_CHECKING:
    from fleet.engines.base import Engine
    from fleet.engines.report import EngineReport
    from fleet.facts.kv_estimate import KvLayout
    from fleet.facts.model_config import ModelFacts

explain_app = typer.Typer(
    help="Explain the facts fleet reads off an engine log or a model config.",
    no_args_is_help=True,
)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@explain_app.command("log")
def explain_log(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="An engine's log (vLLM, llama-server, SGLang).")],
    model: Annotated[
        Path | None,
        typer.Option("--model", help="A config.json (or model directory) to estimate KV from."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """The facts an engine's startup log states (vLLM, llama-server or SGLang)."""
    from fleet.engines import explain_log as explain_engine_log

    output = output_of(ctx)
    engine, data, report = explain_engine_log(read_text(file))
    if model is not None and engine.ESTIMATES_KV:
        data["kv_estimate"] = kv_estimate(report, load_model_facts(model), engine)
    _print(output, data, as_json, title=f"{engine.LABEL} log {file}")


@explain_app.command("model")
def explain_model(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A config.json or a model directory.")],
    as_json: JsonOption = False,
) -> None:
    """The facts a model's config.json states, and its KV bytes per token."""
    facts = load_model_facts(path)
    data = facts.to_explain_json()
    if not as_json:
        data["attention"] = f"{data['attention']}{attention_detail(facts)}"
    _print(output_of(ctx), data, as_json, title=f"model {path}")


def read_text(path: Path) -> str:
    """A file's text (undecodable bytes replaced), or FactError naming the file."""
    from fleet.errors import FactError

    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise FactError(f"cannot read {path}: {err.strerror or err}") from err


def load_model_facts(path: Path) -> ModelFacts:
    """Model facts from a config.json, or from a model directory's config.json.

    A ModelOpt `hf_quant_config.json` beside the config is read too.
    """
    from fleet.errors import FactError
    from fleet.facts.model_config import ModelFacts, parse_model_config

    config = path / "config.json" if path.is_dir() else path
    quant = config.with_name("hf_quant_config.json")
    facts = parse_model_config(
        read_text(config), hf_quant_config=read_text(quant) if quant.is_file() else None
    )
    if facts == ModelFacts():
        raise FactError(f"{config} is not a model config.json (no model facts found)")
    return facts


def kv_estimate(report: EngineReport, facts: ModelFacts, engine: Engine) -> dict[str, object]:
    """What plan predicts from the config for the log's configuration (the KV cache laid out
    as vLLM lays it out on the log's release and platform) beside what the engine logged;
    each `ratio` is logged / estimated; `assumptions` (when any) the defaults of the log's
    release and platform that moved the estimate, and where the two differ by more than
    1%, `differs` names the inputs known to differ."""
    from fleet.facts.kv_estimate import GIB, estimate_kv_bytes_per_token
    from fleet.plan.seat_layout import log_layout

    layout = log_layout(facts, report, engine)
    tokens = most = None
    context = report.max_model_len
    if layout is not None and report.kv_cache_gib is not None:
        budget = int(report.kv_cache_gib * GIB)
        tokens = layout.tokens(budget, context)
        most = round(layout.max_concurrency(budget, context), 2) if context else None
    logged, logged_most = report.kv_cache_tokens, report.max_concurrency
    ratio = round(logged / tokens, 4) if logged is not None and tokens else None
    most_ratio = round(logged_most / most, 4) if logged_most is not None and most else None
    data: dict[str, object] = {
        "bytes_per_token_per_gpu": estimate_kv_bytes_per_token(
            facts, report.kv_cache_dtype or "auto", report.tensor_parallel_size or 1
        ),
        "block_size": layout.block_size if layout else None,
        "groups": [str(kind) for kind in layout.groups] if layout else [],
        "layers_per_group": layout.layers_per_group if layout else None,
        "estimated_tokens": tokens,
        "logged_tokens": logged,
        "ratio": ratio,
        "estimated_max_concurrency": most,
        "logged_max_concurrency": logged_most,
        "max_concurrency_ratio": most_ratio,
    }
    if layout is not None and layout.assumptions:
        data["assumptions"] = list(layout.assumptions)
    if any(r is not None and abs(r - 1) > 0.01 for r in (ratio, most_ratio)):
        data["differs"] = differing_inputs(report, layout)
    return data


def differing_inputs(report: EngineReport, layout: KvLayout | None) -> list[str]:
    """The inputs of an estimate the log shows to differ from the estimate's own."""
    if layout is None:
        return ["no layout could be estimated from the config"]
    found = []
    block = report.attention_block_size
    if block is not None and block != layout.block_size:
        found.append(f"attention block: log {block}, estimate {layout.block_size}")
    if report.platform is None:
        found.append("platform: the log names none (a GPU assumed)")
    if not found:
        found.append(
            "no input the log states differs: the model's layer kinds or a default "
            "the log does not state (prefill chunk, state blocks) may"
        )
    return found


def attention_detail(facts: ModelFacts) -> str:
    """What the attention kind means for this model, for the table: window, latent, layers."""
    attention = facts.attention
    parts = []
    if attention.sliding_window:
        parts.append(f"window {attention.sliding_window}")
    if attention.sliding_window_pattern:
        parts.append(f"1 full layer in {attention.sliding_window_pattern}")
    if attention.full_attention_layers:
        layers = ", ".join(str(layer) for layer in attention.full_attention_layers)
        parts.append(f"full layers {layers}")
    if attention.kv_lora_rank:
        parts.append(f"latent rank {attention.kv_lora_rank} + rope {attention.qk_rope_head_dim}")
    if attention.cross_attention_layers:
        parts.append(f"{len(attention.cross_attention_layers)} cross-attention layers")
    return f" ({'; '.join(parts)})" if parts else ""


def _print(output: Output, data: dict[str, object], as_json: bool, title: str) -> None:
    """JSON (sorted keys, indent 2) or a two-column table; None shows as `-`."""
    if as_json:
        output.json(data)
        return
    from rich.table import Table

    table = Table(title=title, show_header=True)
    table.add_column("fact", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in _rows(data):
        table.add_row(key, value)
    output.out.print(table)


def _rows(data: dict[str, object], prefix: str = "") -> list[tuple[str, str]]:
    """Flatten nested facts into `speculative.method`-style rows, in key order."""
    rows: list[tuple[str, str]] = []
    for key in sorted(data):
        value = data[key]
        if isinstance(value, dict) and value:
            rows.extend(_rows(value, f"{prefix}{key}."))
        elif isinstance(value, list):
            rows.append((f"{prefix}{key}", "\n".join(str(item) for item in value) or "-"))
        else:
            rows.append((f"{prefix}{key}", "-" if value is None else str(value)))
    return rows
