"""Model facts for the in-sync fake: what observation reads off each model's config.json.

`in_sync` knows only each model's size on disk; the predictions need config.json. `summary`
sets the fields `ModelInfo` carries today (KV bytes per token, attention kind, max
positions, model type); `parsed` also hands over the whole parsed config.json, as a
`ModelInfo` with a `facts` field will (the planner reads it where it is there).
"""

from __future__ import annotations

from pathlib import Path

from fleet.facts.kv_estimate import estimate_kv_bytes_per_token
from fleet.facts.model_config import ModelFacts, parse_model_config
from fleet.observed.models import ModelInfo, Observation
from tests.conftest import CORPUS

GIB = 1024**3
CONFIGS = CORPUS / "model-configs"
LAB_MODELS = CORPUS.parent / "lab" / "models"

# model directory of the example fleet -> (config.json, checkpoint GiB), as the lab has them
EXAMPLE_MODELS: dict[str, tuple[Path, float]] = {
    "/models/TinyLlama-1.1B-Chat-FP8": (
        CONFIGS / "tinyllama-1.1b-chat_compressed-tensors_fp8_kv_cache_scheme-fp8.config.json",
        1.05,
    ),
    "/models/Qwen3-30B-A3B-NVFP4": (LAB_MODELS / "Qwen3-30B-A3B-NVFP4.config.json", 17.0),
    "/models/Qwen3.5-27B": (
        CONFIGS / "qwen3.5-27b_hybrid-linear-attention_nested-text_config.config.json",
        50.1,
    ),
    "/models/gemma-3-27b-it": (
        CONFIGS / "gemma-3-27b-it_sliding-window_nested-text_config.config.json",
        51.0,
    ),
    "/models/Qwen3-32B": (CONFIGS / "qwen3-32b_dense.config.json", 61.0),
    "/models/Llama-3.1-8B-Instruct": (CONFIGS / "llama-3.1-8b-instruct_dense.config.json", 14.96),
    "/models/stories42M-embed": (
        CONFIGS / "llama2.c-stories42m-pruned2.4_compressed-tensors_sparse-24-bitmask.config.json",
        0.08,
    ),
    "/models/stories42M-rerank": (
        CONFIGS / "llama2.c-stories42m-pruned2.4_compressed-tensors_sparse-24-bitmask.config.json",
        0.08,
    ),
}


class ParsedModelInfo(ModelInfo):
    """A ModelInfo that also carries the parsed config.json."""

    facts: ModelFacts | None = None


def info(path: str, facts: ModelFacts, gib: float, parsed: bool = False) -> ModelInfo:
    """The ModelInfo observation builds for a model directory."""
    fields = {
        "path": path,
        "size_bytes": int(gib * GIB),
        "architecture": facts.architecture,
        "model_type": facts.model_type,
        "num_layers": facts.num_layers,
        "attention": facts.attention.kind.value if facts.attention.kind else None,
        "max_position_embeddings": facts.max_position_embeddings,
        "kv_bytes_per_token": estimate_kv_bytes_per_token(facts),
    }
    return ParsedModelInfo(**fields, facts=facts) if parsed else ModelInfo(**fields)


def with_models(
    observation: Observation, parsed: bool = False, only: tuple[str, ...] = ()
) -> Observation:
    """Every example model's facts (or only those named) on every host that has it."""
    hosts = {}
    for name, host in observation.hosts.items():
        models = dict(host.models)
        for path in models:
            if path in EXAMPLE_MODELS and (not only or path in only):
                config, gib = EXAMPLE_MODELS[path]
                models[path] = info(path, parse_model_config(config.read_text()), gib, parsed)
        hosts[name] = host.model_copy(update={"models": models})
    return observation.model_copy(update={"hosts": hosts})


def engines_as_logged(observation: Observation, weights_gib: dict[str, float]) -> Observation:
    """The seats' logs stating the weights each model really has (the fake says 15 GiB)."""
    hosts = {}
    for name, host in observation.hosts.items():
        seats = tuple(
            s.model_copy(
                update={"engine": s.engine.model_copy(update={"weights_gib": weights_gib[s.name]})}
            )
            if s.engine and s.name in weights_gib
            else s
            for s in host.seats
        )
        hosts[name] = host.model_copy(update={"seats": seats})
    return observation.model_copy(update={"hosts": hosts})
