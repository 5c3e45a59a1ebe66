"""A start-up vLLM refused for its --max-model-len: both forms of the error, both lengths."""

from __future__ import annotations

import pytest

from fleet.engines.vllm.errors import EngineError, ErrorKind
from fleet.engines.vllm.log import parse_vllm_log
from tests.unit.facts.samples import MAX_LEN_REJECTED, max_len_message, max_len_plain

REJECTED = EngineError(kind=ErrorKind.MAX_MODEL_LEN_TOO_LONG, message=max_len_message())
OLDER_MESSAGE = max_len_message().replace(" or model_max_length=None", "")

FORMS = [
    pytest.param(MAX_LEN_REJECTED, REJECTED, id="pydantic-validation-error"),
    pytest.param(max_len_plain(), REJECTED, id="plain-value-error"),
    pytest.param(
        max_len_plain(
            "(EngineCore pid=25) ERROR 08-18 02:57:56 [core.py:700] ValueError: {message}"
        ),
        REJECTED,
        id="error-line-with-header",
    ),
    pytest.param(
        # Releases before model_max_length was printed (`({key}={derived} in model's ...`).
        max_len_plain("ValueError: " + OLDER_MESSAGE),
        EngineError(kind=ErrorKind.MAX_MODEL_LEN_TOO_LONG, message=OLDER_MESSAGE),
        id="plain-value-error-without-model-max-length",
    ),
]


@pytest.mark.parametrize(("text", "error"), FORMS)
def test_rejected_max_model_len_is_an_engine_error(text: str, error: EngineError) -> None:
    report = parse_vllm_log(text)
    assert report.errors == (error,)
    assert (report.requested_max_model_len, report.derived_max_model_len) == (999999, 2048)


def test_both_forms_report_the_same() -> None:
    assert parse_vllm_log(MAX_LEN_REJECTED) == parse_vllm_log(max_len_plain())


def test_the_rest_of_the_refused_start() -> None:
    report = parse_vllm_log(MAX_LEN_REJECTED)
    assert report.to_explain_json() == {
        "version": "0.25.1",
        "engine": None,
        "model": "facebook/opt-125m",
        "served_names": ["facebook/opt-125m"],
        "max_model_len": 999999,  # what the args asked for
        "tensor_parallel_size": None,
        "pipeline_parallel_size": None,
        "quantization": None,
        "kv_cache_dtype": None,
        "speculative": None,
        "weights_gib": None,
        "weights_gib_per_rank": [],
        "kv_cache_gib": None,
        "kv_cache_tokens": None,
        "max_concurrency": None,
        "requested_max_model_len": 999999,
        "derived_max_model_len": 2048,
        "errors": [max_len_message()],
    }
    assert report.errors[0].message.startswith(
        "User-specified max_model_len (999999) is greater than the derived max_model_len "
        "(max_position_embeddings=2048.0 or model_max_length=None in model's config.json)."
    )


@pytest.mark.parametrize(
    "line",
    [
        # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: vLLM warns and starts.
        "(APIServer pid=1) WARNING 08-18 02:57:56 [model.py:2000] "
        + max_len_message().split(" To allow")[0]
        + " Make sure the value is correct and within the model context size.",
        "(APIServer pid=1) INFO 08-18 02:57:56 [model.py:1700] Using max model len 2048",
    ],
    ids=["allowed-long-length-warning", "info-line"],
)
def test_no_error_without_a_refusal(line: str) -> None:
    report = parse_vllm_log(line + "\n")
    assert report.errors == ()
    assert (report.requested_max_model_len, report.derived_max_model_len) == (None, None)
