"""The speculative-decoding methods a seat may declare, taken from vLLM's source.

The speculative-decoding methods are vLLM's `SpeculativeMethod` literal (vllm/config/
speculative.py): the plain methods, the EAGLE family, the model-specific MTP heads, DFlash,
DSpark and the GPU n-gram. Methods that draft with a separate model need `draft_model`;
n-gram, suffix and MTP heads draft from the prompt or the model itself and must not have one.
Whether a model has MTP layers an MTP method can draft with: config.json says (its count of
them), else vLLM's model families and architectures that carry them may (`has_mtp_layers`).
"""

from __future__ import annotations

MTP_METHODS = frozenset(
    {
        "deepseek_mtp",
        "dots3_note_mtp",
        "mimo_mtp",
        "mimo_v2_mtp",
        "glm4_moe_mtp",
        "glm4_moe_lite_mtp",
        "glm_ocr_mtp",
        "ernie_mtp",
        "nemotron_h_mtp",
        "exaone_moe_mtp",
        "exaone4_5_mtp",
        "qwen3_next_mtp",
        "qwen4_exp_mtp",
        "qwen3_5_mtp",
        "longcat_flash_mtp",
        "bailing_hybrid_v3_mtp",
        "minimax_m3_mtp",
        "bailing_hybrid_mtp",
        "mtp",
        "kimi_k3_mtp",
        "pangu_ultra_moe_mtp",
        "step3p5_mtp",
        "hy_v3_mtp",
        "hy_v4_mtp",
        "gemma4_mtp",
        "inkling_mtp",
        "glm5_next_mtp",
    }
)
DRAFTER_METHODS = frozenset(
    {
        "draft_model",
        "eagle",
        "eagle3",
        "medusa",
        "mlp_speculator",
        "dflash",
        "dspark",
    }
)
DRAFTLESS_METHODS = frozenset({"ngram", "ngram_gpu", "suffix"}) | MTP_METHODS
OPEN_METHODS = frozenset({"custom_class", "extract_hidden_states"})
SPECULATIVE_METHODS = DRAFTER_METHODS | DRAFTLESS_METHODS | OPEN_METHODS


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


def lacks_mtp_layers(
    method: str,
    model_types: tuple[str | None, ...],
    architecture: str | None,
    layers: int | None,
) -> bool:
    """Whether an MTP method is asked of a model that has no MTP layers to draft with."""
    return method in MTP_METHODS and has_mtp_layers(model_types, architecture, layers) is False


def needs_drafter(method: str) -> bool | None:
    """True if the method needs a draft model, False if it must not have one, None if open."""
    if method in DRAFTER_METHODS:
        return True
    if method in DRAFTLESS_METHODS:
        return False
    return None
