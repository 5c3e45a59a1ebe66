"""Quantization facts: a checkpoint's quantization config normalised to one scheme name.

`parse_quantization_config` turns a config.json `quantization_config` (compressed-tensors
groups, fp8, awq, gptq, bitsandbytes, mxfp4, nvfp4, ModelOpt) into `QuantizationFacts`;
`parse_hf_quant_config` reads ModelOpt's sibling `hf_quant_config.json`. Called by
`fleet.facts.model_config`'s parser (which re-exports these names), and through it by
`fleet explain model`, which passes the `hf_quant_config.json` found beside a config.json.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fleet.base import CoreModel
from fleet.facts._text import first_int, first_str, json_object

__all__ = [
    "NO_QUANTIZATION",
    "QuantizationFacts",
    "parse_hf_quant_config",
    "parse_quantization_config",
]

NO_QUANTIZATION = "none"


class QuantizationFacts(CoreModel):
    """A checkpoint's quantization, normalised to one scheme name.

    `scheme` is one of none, fp8-w8a8, nvfp4-w4a4, mxfp4, w4a16, w8a16, awq-w4a16,
    gptq-w4a16, bnb-4bit, or `other:<name>`; `method` is the config's quant_method as
    written; `kv_cache_dtype` is set when the checkpoint ships a quantized KV-cache scheme.
    """

    scheme: str = NO_QUANTIZATION
    group_size: int | None = None
    method: str | None = None
    format: str | None = None
    kv_cache_dtype: str | None = None


def parse_quantization_config(section: Mapping[str, object]) -> QuantizationFacts:
    """Normalise a `quantization_config` mapping (or a bare compressed-tensors config)."""
    if not section:
        return QuantizationFacts()
    method = first_str(section, "quant_method", "quant_algo") or "unknown"
    handler = _QUANT_METHODS.get(method.lower().replace("_", "-"))
    if handler is None:
        scheme, group_size = f"other:{method}", first_int(section, "group_size")
    else:
        scheme, group_size = handler(section)
    return QuantizationFacts(
        scheme=scheme,
        group_size=group_size,
        method=method,
        format=first_str(section, "format"),
        kv_cache_dtype=_kv_cache_dtype(section),
    )


def parse_hf_quant_config(text: str) -> QuantizationFacts:
    """Read ModelOpt's `hf_quant_config.json` (`{"quantization": {"quant_algo": ...}}`)."""
    section = json_object(text).get("quantization")
    if not isinstance(section, dict):
        return QuantizationFacts()
    return parse_quantization_config({**section, "quant_method": "modelopt"})


def _compressed_tensors(section: Mapping[str, object]) -> tuple[str, int | None]:
    """The scheme of the first config group (by name); sparsity-only configs are `other:`."""
    groups = section.get("config_groups")
    if isinstance(groups, dict) and groups:
        first = groups[sorted(groups)[0]]
        if isinstance(first, dict) and isinstance(first.get("weights"), dict):
            return _compressed_tensors_group(first["weights"], first.get("input_activations"))
    sparsity = section.get("sparsity_config")
    if isinstance(sparsity, dict) and (fmt := first_str(sparsity, "format")):
        return f"other:{fmt}", None
    return "other:compressed-tensors", None


def _compressed_tensors_group(
    weights: Mapping[str, object], activations: object
) -> tuple[str, int | None]:
    """W4A16 vs NVFP4 W4A4 vs FP8 from the weights' and input activations' number formats."""
    group_size = first_int(weights, "group_size")
    w_kind, a_kind = _number_format(weights), _number_format(activations)
    if w_kind == "float4":
        nvfp4 = group_size == 16 or (
            group_size is None and weights.get("strategy") == "tensor_group"
        )
        if not nvfp4:
            return "mxfp4", group_size
        return ("nvfp4-w4a4" if a_kind == "float4" else "other:nvfp4-w4a16"), group_size
    schemes: dict[tuple[str | None, str | None], str] = {
        ("float8", "float8"): "fp8-w8a8",
        ("float8", None): "other:fp8-w8a16",
        ("int4", None): "w4a16",
        ("int8", None): "w8a16",
        ("int8", "int8"): "other:int8-w8a8",
        ("int4", "int8"): "other:w4a8",
        ("int4", "float8"): "other:w4afp8",
    }
    return schemes.get((w_kind, a_kind), "other:compressed-tensors"), group_size


def _number_format(args: object) -> str | None:
    """`{"type": "float", "num_bits": 8}` -> `float8`; None when there are no such args."""
    if not isinstance(args, dict):
        return None
    return f"{args.get('type')}{args.get('num_bits')}"


def _awq(section: Mapping[str, object]) -> tuple[str, int | None]:
    bits = first_int(section, "bits", "w_bit")
    scheme = "awq-w4a16" if bits in (4, None) else f"other:awq-w{bits}a16"
    return scheme, first_int(section, "group_size", "q_group_size")


def _gptq(section: Mapping[str, object]) -> tuple[str, int | None]:
    bits = first_int(section, "bits")
    schemes = {4: "gptq-w4a16", 8: "w8a16"}
    return schemes.get(bits or 4, f"other:gptq-w{bits}a16"), first_int(section, "group_size")


def _bitsandbytes(section: Mapping[str, object]) -> tuple[str, int | None]:
    if section.get("load_in_4bit") is True:
        return "bnb-4bit", None
    return ("other:bnb-8bit" if section.get("load_in_8bit") is True else "other:bitsandbytes"), None


def _modelopt(section: Mapping[str, object]) -> tuple[str, int | None]:
    algo = (first_str(section, "quant_algo") or "").upper()
    schemes = {"NVFP4": "nvfp4-w4a4", "FP8": "fp8-w8a8", "W4A16_AWQ": "awq-w4a16"}
    return schemes.get(algo, f"other:modelopt-{algo.lower()}"), first_int(section, "group_size")


_QuantHandler = Callable[[Mapping[str, object]], tuple[str, int | None]]
_QUANT_METHODS: dict[str, _QuantHandler] = {
    "compressed-tensors": _compressed_tensors,
    "fp8": lambda section: ("fp8-w8a8", None),
    "mxfp4": lambda section: ("mxfp4", 32),  # MX formats scale blocks of 32 by definition.
    "awq": _awq,
    "awq-marlin": _awq,
    "gptq": _gptq,
    "gptq-marlin": _gptq,
    "bitsandbytes": _bitsandbytes,
    "modelopt": _modelopt,
    "nvfp4": lambda section: ("nvfp4-w4a4", first_int(section, "group_size")),
}


def _kv_cache_dtype(section: Mapping[str, object]) -> str | None:
    """The KV-cache format a checkpoint was calibrated for (compressed-tensors, ModelOpt)."""
    scheme = section.get("kv_cache_scheme")
    if isinstance(scheme, dict):
        return {"float8": "fp8", "int8": "int8"}.get(_number_format(scheme) or "")
    algo = section.get("kv_cache_quant_algo")
    return algo.lower() if isinstance(algo, str) and algo else None
