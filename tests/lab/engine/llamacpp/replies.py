"""llama-server's response bodies: models, props, slots, completions, chunks, metrics.

Shapes as llama-server (tools/server) answers: `/v1/models` with both the OpenAI `data`
list (owned_by `llamacpp`, a `meta` block) and the Ollama-style `models` list; chat and
text completions with `system_fingerprint` and `timings`; Prometheus text with the
`llamacpp:` prefix, values printed as C++ streams print doubles (%g).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..specdecode import SpecDecode
from .startlog import BUILD, COMMIT

if TYPE_CHECKING:
    from .server import LlamaState

FINGERPRINT = f"b{BUILD.split()[0]}-{COMMIT}"


def models(info: dict[str, Any]) -> dict[str, Any]:
    """/v1/models: the one model, under its alias (or path)."""
    name = info["model_id"]
    details = {
        "parent_model": "",
        "format": "gguf",
        "family": "",
        "families": [""],
        "parameter_size": "",
        "quantization_level": "",
    }
    return {
        "models": [
            {
                "name": name,
                "model": name,
                "modified_at": "",
                "size": "",
                "digest": "",
                "type": "model",
                "description": "",
                "tags": [""],
                "capabilities": ["completion"],
                "parameters": "",
                "details": details,
            }
        ],
        "object": "list",
        "data": [
            {
                "id": name,
                "object": "model",
                "created": int(time.time()),
                "owned_by": "llamacpp",
                "meta": info["meta"],
            }
        ],
    }


def slot_json(slot_id: int, task: int, n_ctx: int, speculative: bool) -> dict[str, Any]:
    """One slot as /slots lists it."""
    return {
        "id": slot_id,
        "id_task": task,
        "n_ctx": n_ctx,
        "speculative": speculative,
        "is_processing": task >= 0,
        "params": {
            "n_predict": -1,
            "temperature": 0.8,
            "top_k": 40,
            "top_p": 0.95,
            "stream": True,
        },
        "prompt": "",
        "next_token": [
            {
                "has_next_token": task >= 0,
                "has_new_line": False,
                "n_remain": -1,
                "n_decoded": 0,
                "stopping_word": "",
            }
        ],
    }


def props(info: dict[str, Any], first_slot: dict[str, Any]) -> dict[str, Any]:
    """/props: the server's settings."""
    return {
        "default_generation_settings": {**first_slot, "id_task": -1, "is_processing": False},
        "total_slots": info["slots"],
        "model_alias": info["alias"] or info["model_path"],
        "model_path": info["model_path"],
        "modalities": {"vision": False, "audio": False},
        "chat_template": "{%- for message in messages %}{{- '<|im_start|>' + message.role }}"
        "{{- '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|im_end|>",
        "build_info": FINGERPRINT,
    }


def timings(
    prompt: int, prompt_s: float, predicted: int, decode_s: float, spec: SpecDecode | None
) -> dict[str, Any]:
    """The `timings` block of a completion."""
    p_ms, d_ms = prompt_s * 1000, decode_s * 1000
    out: dict[str, Any] = {
        "prompt_n": prompt,
        "prompt_ms": p_ms,
        "prompt_per_token_ms": p_ms / max(prompt, 1),
        "prompt_per_second": prompt / max(prompt_s, 1e-9),
        "predicted_n": predicted,
        "predicted_ms": d_ms,
        "predicted_per_token_ms": d_ms / max(predicted, 1),
        "predicted_per_second": predicted / max(decode_s, 1e-9),
    }
    if spec is not None:
        out.update(draft_n=spec.draft_tokens, draft_n_accepted=spec.accepted)
    return out


def envelope(kind: str, cid: str, model: str, choices: list[Any]) -> dict[str, Any]:
    """The fields every OpenAI-style reply carries."""
    obj = {"chat": "chat.completion.chunk", "text": "text_completion"}.get(kind, "")
    return {
        "choices": choices,
        "created": int(time.time()),
        "id": cid,
        "model": model,
        "system_fingerprint": FINGERPRINT,
        "object": obj,
    }


def stream_chunks(kind: str, cid: str, model: str, word: str, first: bool) -> list[dict[str, Any]]:
    """The SSE events of one generated token (the role first, in a chat)."""
    if kind == "native":
        return [
            {
                "index": 0,
                "content": word,
                "tokens": [],
                "stop": False,
                "id_slot": -1,
                "tokens_predicted": 1,
                "tokens_evaluated": 0,
            }
        ]
    if kind == "text":
        return [
            envelope(
                kind,
                cid,
                model,
                [{"text": word, "index": 0, "logprobs": None, "finish_reason": None}],
            )
        ]
    out = []
    if first:
        delta = {"role": "assistant", "content": None}
        out.append(
            envelope(kind, cid, model, [{"finish_reason": None, "index": 0, "delta": delta}])
        )
    out.append(
        envelope(
            kind, cid, model, [{"finish_reason": None, "index": 0, "delta": {"content": word}}]
        )
    )
    return out


def final_chunk(kind: str, cid: str, model: str, finish: str, times: dict[str, Any]) -> Any:
    """The stream's last event, with the finish reason and timings."""
    if kind == "native":
        return {"index": 0, "content": "", "stop": True, "stop_type": "eos", "timings": times}
    choice: dict[str, Any] = {"finish_reason": finish, "index": 0}
    choice.update({"delta": {}} if kind == "chat" else {"text": "", "logprobs": None})
    return {**envelope(kind, cid, model, [choice]), "timings": times}


def usage_chunk(kind: str, cid: str, model: str, usage: dict[str, int]) -> dict[str, Any]:
    """The usage event a stream ends with when stream_options.include_usage asks."""
    return {**envelope(kind, cid, model, []), "usage": usage}


def whole(
    kind: str,
    cid: str,
    model: str,
    words: list[str],
    finish: str,
    usage: dict[str, int],
    times: dict[str, Any],
) -> dict[str, Any]:
    """A non-streamed completion."""
    text = "".join(words).strip()
    if kind == "native":
        return {
            "index": 0,
            "content": text,
            "tokens": [],
            "id_slot": 0,
            "stop": True,
            "model": model,
            "tokens_predicted": usage["completion_tokens"],
            "tokens_evaluated": usage["prompt_tokens"],
            "stop_type": "eos",
            "timings": times,
        }
    if kind == "chat":
        choice = {
            "finish_reason": finish,
            "index": 0,
            "message": {"role": "assistant", "content": text},
        }
        out = envelope(kind, cid, model, [choice])
        out["object"] = "chat.completion"
    else:
        choice = {"text": text, "index": 0, "logprobs": None, "finish_reason": finish}
        out = envelope(kind, cid, model, [choice])
    return {**out, "usage": usage, "timings": times}


def number(value: float) -> str:
    """A double as a C++ ostream prints it."""
    return f"{value:g}"


def spec_counters(totals: dict[str, int]) -> tuple[tuple[str, str, float], ...]:
    """llama-server's speculative counters (newer builds' names, as b11434 exports them)."""
    return (
        (
            "spec_decode_num_draft_tokens_total",
            "Speculative: Total draft tokens generated",
            totals["draft_tokens"],
        ),
        (
            "spec_decode_num_accepted_tokens_total",
            "Speculative: Total draft tokens accepted by the target model",
            totals["accepted"],
        ),
        (
            "spec_decode_num_drafts_total",
            "Speculative: Total speculative decoding verification steps",
            totals["drafts"],
        ),
    )


def metrics(state: LlamaState) -> str:
    """/metrics (llama-server started with --metrics)."""
    sched = state.sched
    running, waiting = sched.gauges()
    predict_s = sched.decode_seconds or 1e-9
    counters = (
        ("prompt_tokens_total", "Number of prompt tokens processed.", sched.prompt_tokens),
        ("prompt_seconds_total", "Prompt process time", sched.prompt_seconds),
        (
            "tokens_predicted_total",
            "Number of generation tokens processed.",
            sched.generation_tokens,
        ),
        ("tokens_predicted_seconds_total", "Predict process time", sched.decode_seconds),
        ("n_decode_total", "Total number of llama_decode() calls", state.n_decode),
        (
            "n_busy_slots_per_decode",
            "Average number of busy slots per llama_decode() call",
            state.busy_sum / max(state.n_decode, 1),
        ),
    )
    if state.info.get("draft"):
        counters += spec_counters(state.spec_totals)
    gauges = (
        (
            "prompt_tokens_seconds",
            "Average prompt throughput in tokens/s.",
            sched.prompt_tokens / sched.prompt_seconds if sched.prompt_seconds else 0.0,
        ),
        (
            "predicted_tokens_seconds",
            "Average generation throughput in tokens/s.",
            sched.generation_tokens / predict_s if sched.decode_seconds else 0.0,
        ),
        ("requests_processing", "Number of requests processing.", running),
        ("requests_deferred", "Number of requests deferred.", waiting),
    )
    out = []
    for kind, rows in (("counter", counters), ("gauge", gauges)):
        for name, doc, value in rows:
            out += [
                f"# HELP llamacpp:{name} {doc}",
                f"# TYPE llamacpp:{name} {kind}",
                f"llamacpp:{name} {number(value)}",
            ]
    return "\n".join(out) + "\n"
