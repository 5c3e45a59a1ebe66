"""The speculative-decoding methods a seat may declare, taken from vLLM's source.

The speculative-decoding methods are vLLM's `SpeculativeMethod` literal (vllm/config/
speculative.py): the plain methods, the EAGLE family, the model-specific MTP heads, DFlash,
DSpark and the GPU n-gram. Methods that draft with a separate model need `draft_model`;
n-gram, suffix and MTP heads draft from the prompt or the model itself and must not have one.
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


def needs_drafter(method: str) -> bool | None:
    """True if the method needs a draft model, False if it must not have one, None if open."""
    if method in DRAFTER_METHODS:
        return True
    if method in DRAFTLESS_METHODS:
        return False
    return None
