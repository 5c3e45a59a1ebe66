"""Whether a seat's speculative decoding can start: its drafter is on the host, and a
method that drafts with the model's own MTP layers has a model that carries them.

Called by `fleet.plan.blockers` for the seats a plan creates or replaces. Whether a model
has MTP layers comes from config.json (`ModelFacts.mtp_layers`), else from the model
families and architectures vLLM drafts MTP tokens for; when neither tells, nothing is
refused. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleet.engines.vllm.speculative import MTP_METHODS
from fleet.observed.models import ObservedHost
from fleet.plan import predict
from fleet.plan.actions import Blocker
from fleet.spec.models import Seat


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Model families vLLM drafts MTP tokens for (SpeculativeConfig.hf_config_override).
MTP_MODEL_TYPES = (
    _names(
        "deepseek_v3 deepseek_v32 deepseek_v4 deepseek_mtp glm_moe_dsa dots3_note pangu_ultra_moe "
        "kimi_k3 ernie4_5_moe nemotron_h nemotron_h_puzzle qwen3_next qwen4_exp qwen4_exp_text "
        "qwen3_5 qwen3_5_moe qwen3_5_text qwen3_5_moe_text intern_s2_preview interns2_mobius "
        "bailing_hybrid exaone_moe exaone4_5 longcat_flash longcat_flash_ngram step3p5 step3p7 "
        "hy_v3 hy_v4 inkling_model inkling_mm_model minimax_m3_vl glm5_next"
    )
    | MTP_METHODS
)
MTP_ARCHITECTURES = _names(
    "MiMoForCausalLM MiMoV2ForCausalLM MiMoV2OmniForCausalLM MiMoV2FlashForCausalLM "
    "Glm4MoeForCausalLM Glm4MoeLiteForCausalLM GlmOcrForConditionalGeneration "
    "BailingMoeV2_5ForCausalLM BailingMoeV3ForCausalLM Step3p5ForCausalLM "
    "MiniMaxM3SparseForConditionalGeneration"
)


def has_mtp_layers(
    model_types: tuple[str | None, ...], architecture: str | None, layers: int | None
) -> bool | None:
    """Whether a model carries MTP layers vLLM can draft with (None: cannot tell)."""
    if layers is not None:
        return layers > 0
    if architecture in MTP_ARCHITECTURES or any(t in MTP_MODEL_TYPES for t in model_types):
        return None
    return False if architecture or any(model_types) else None


def speculative_blockers(host: ObservedHost, seat: Seat) -> Iterator[Blocker]:
    """A drafter that is not on the host, or an MTP method on a model with no MTP layers."""
    spec = seat.speculative
    if spec is None:
        return
    if spec.draft_model:
        if spec.draft_model.rstrip("/") in host.missing_paths:
            yield Blocker(
                target=seat.name,
                message=f"draft model {spec.draft_model} ({spec.method}) does not exist on "
                f"{seat.host}",
            )
        return
    info = host.models.get(seat.model.rstrip("/"))
    if spec.method not in MTP_METHODS or info is None or info.config_error:
        return
    facts = predict.model_facts(info)
    types = (info.model_type, facts.text_model_type if facts else None)
    layers = facts.mtp_layers if facts else None
    if has_mtp_layers(types, info.architecture, layers) is False:
        kind = ", ".join(t for t in (*types, info.architecture) if t)
        yield Blocker(
            target=seat.name,
            message=f"speculative method {spec.method} drafts with the model's own MTP "
            f"layers, but config.json of {seat.model} ({kind}) has none: drop speculative, "
            "or draft with a separate model (eagle3, draft_model) named in draft_model",
        )
