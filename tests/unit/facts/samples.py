"""Log samples the fact tests share: real lines, wrapped or reformatted as the wild prints them.

- `hard_wrap` cuts every line as a terminal or log collector with a fixed width does.
- `MAX_LEN_REJECTED` is a real vLLM 0.25.1 start-up refused for `--max-model-len 999999`
  (pydantic form); `max_len_plain` turns it into the plain `ValueError:` form.
- `old_kv_lines` puts the corpus llama-server log's KV lines into older builds' formats.
"""

from __future__ import annotations

from tests.conftest import CORPUS

VLLM_LOGS = CORPUS / "vllm-logs"
LLAMA_LOG = (
    CORPUS
    / "llamacpp-logs"
    / "b-ebbf544_cuda-rtx4060ti_qwen3.5-35b-a3b-iq2m_hybrid-kv-recurrent_nparallel-auto4.log"
)


def hard_wrap(text: str, width: int, first: int | None = None) -> str:
    """Every line cut into pieces of `width` characters (the first piece `first` wide).

    Nothing is added or dropped: the pieces joined give the line back. `first` models the
    collector behind the real wrapped vLLM 0.10.1.1 log SOURCES.md names
    (dennislee22/vLLM-benchmarking log/vllm-7B-1gpuA10080GB-0.25GRAM.log @ 391660d),
    whose first pieces are 136 characters and the rest 147.
    """
    head = first or width
    pieces: list[str] = []
    for line in text.splitlines():
        pieces.append(line[:head])
        pieces += [line[i : i + width] for i in range(head, len(line), width)]
    return "\n".join(pieces) + "\n"


# er0080/vllm-benchmarking packages/protocol/tests/fixtures/
# vllm_serve_max_model_len_rejected_v0.25.1.log @ cba53b803403ec306f6fedabccec51ff6257a0ec,
# the source SOURCES.md and FACTS.md cite as v0.25.1_v1_opt-125m_max-model-len-rejected.log
# (not among the corpus files): its lines 1-12 and its last 5 lines, verbatim; the
# traceback's frames in between are left out.
MAX_LEN_REJECTED = """\
INFO 08-18 02:57:50 [importing.py:88] Triton not installed or not compatible; certain GPU-related functions will not be available.
(APIServer pid=1) INFO 08-18 02:57:52 [api_utils.py:339] 
(APIServer pid=1) INFO 08-18 02:57:52 [api_utils.py:339]        █     █     █▄   ▄█
(APIServer pid=1) INFO 08-18 02:57:52 [api_utils.py:339]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.25.1
(APIServer pid=1) INFO 08-18 02:57:52 [api_utils.py:339]   █▄█▀ █     █     █     █  model   facebook/opt-125m
(APIServer pid=1) INFO 08-18 02:57:52 [api_utils.py:339]    ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀
(APIServer pid=1) INFO 08-18 02:57:52 [api_utils.py:339] 
(APIServer pid=1) INFO 08-18 02:57:52 [api_utils.py:273] non-default args: {'model_tag': 'facebook/opt-125m', 'model': 'facebook/opt-125m', 'dtype': 'float32', 'max_model_len': 999999, 'enforce_eager': True, 'load_format': 'dummy'}
(APIServer pid=1) Warning: You are sending unauthenticated requests to the HF Hub. Please set a HF_TOKEN to enable higher rate limits and faster downloads.
(APIServer pid=1) INFO 08-18 02:57:56 [model.py:619] Resolved architecture: OPTForCausalLM
(APIServer pid=1) INFO 08-18 02:57:56 [model.py:2108] Upcasting torch.float16 to torch.float32.
(APIServer pid=1) Traceback (most recent call last):
(APIServer pid=1)   File "/opt/venv/lib/python3.12/site-packages/pydantic/_internal/_dataclasses.py", line 121, in __init__
(APIServer pid=1)     s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)
(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
(APIServer pid=1)   Value error, User-specified max_model_len (999999) is greater than the derived max_model_len (max_position_embeddings=2048.0 or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error. [type=value_error, input_value=ArgsKwargs((), {'model': ...nderer_num_workers': 1}), input_type=ArgsKwargs]
(APIServer pid=1)     For further information visit https://errors.pydantic.dev/2.13/v/value_error
"""  # noqa: E501, W291

PYDANTIC_HEAD = "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig"
PYDANTIC_LEAD = "  Value error, "
PYDANTIC_TAIL = " [type=value_error, input_value="


def max_len_message() -> str:
    """vLLM's sentence in the sample: what both forms must report as the error message."""
    line = next(line for line in MAX_LEN_REJECTED.splitlines() if PYDANTIC_LEAD in line)
    return line.split(PYDANTIC_LEAD, 1)[1].split(PYDANTIC_TAIL, 1)[0]


def max_len_plain(error_line: str = "(APIServer pid=1) ValueError: {message}") -> str:
    """The sample as a release without pydantic validation logs it: one ValueError line."""
    lines = []
    for line in MAX_LEN_REJECTED.splitlines():
        if PYDANTIC_HEAD in line or "errors.pydantic.dev" in line:
            continue
        if PYDANTIC_LEAD in line:
            line = error_line.format(message=max_len_message())
        lines.append(line)
    return "\n".join(lines) + "\n"


# The corpus llama-server log's two KV lines (its lines 176-177).
MODERN_KV_BUFFER = "llama_kv_cache:      CUDA0 KV buffer size =   135.00 MiB"
MODERN_KV_SIZE = (
    "llama_kv_cache: size =  135.00 MiB (  6912 cells,  10 layers,  4/1 seqs), "
    "K (f16):   67.50 MiB, V (f16):   67.50 MiB"
)


def old_kv_lines(*lines: str) -> str:
    """The corpus llama-server log with its two KV lines replaced by `lines`."""
    text = LLAMA_LOG.read_text()
    assert MODERN_KV_BUFFER in text and MODERN_KV_SIZE in text
    replacement = "\n".join(lines)
    return text.replace(MODERN_KV_BUFFER + "\n" + MODERN_KV_SIZE, replacement)
