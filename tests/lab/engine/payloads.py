"""vLLM's OpenAI-compatible response bodies: completions, stream chunks, usage, errors."""

from __future__ import annotations

import time
import uuid
from typing import Any

from .logfmt import series

ENGINE_DEAD = "EngineCore encountered an issue. See stack trace (above) for the root cause."


def usage(prompt: int, completion_tokens: int) -> dict[str, int]:
    """The OpenAI usage block."""
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion_tokens,
        "completion_tokens": completion_tokens,
    }


def request_id(chat: bool) -> str:
    """A fresh completion id."""
    return f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"


def completion(name: str, words: list[str], finish: str, chat: bool, prompt: int) -> dict[str, Any]:
    """A non-streamed chat or text completion."""
    text = "".join(words).strip()
    if chat:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text, "tool_calls": []},
            "logprobs": None,
            "finish_reason": finish,
        }
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
    return {
        "id": request_id(chat),
        "object": "chat.completion" if chat else "text_completion",
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
        "usage": usage(prompt, len(words)),
    }


def chunk(cid: str, name: str, delta: Any, finish: str | None, chat: bool) -> dict[str, Any]:
    """One streamed chunk."""
    if chat:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    else:
        choice = {"index": 0, "text": delta, "logprobs": None, "finish_reason": finish}
    return {
        "id": cid,
        "object": "chat.completion.chunk" if chat else "text_completion",
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
    }


def error_body(version: str, message: str, kind: str, code: int, param: str | None = None) -> Any:
    """vLLM's error payload (flat before 0.10, nested under "error" since)."""
    if series(version) == "0.9":
        return {"object": "error", "message": message, "type": kind, "param": None, "code": code}
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def context_error(max_len: int, prompt: int, max_tokens: int | None) -> str | None:
    """vLLM's 400 message when a request does not fit max_model_len, else None."""
    if prompt >= max_len:
        return (
            f"This model's maximum context length is {max_len} tokens. However, your request "
            f"has {prompt} input tokens. Please reduce the length of the input messages."
        )
    if max_tokens is not None and prompt + max_tokens > max_len:
        return (
            f"This model's maximum context length is {max_len} tokens. However, you requested "
            f"{prompt + max_tokens} tokens ({prompt} in the messages, {max_tokens} in the "
            "completion). Please reduce the length of the messages or completion."
        )
    return None


def tokenize_reply(tokens: list[int], max_len: int, with_strs: bool) -> dict[str, Any]:
    """POST /tokenize's answer."""
    strs = [f"t{t}" for t in tokens] if with_strs else None
    return {"count": len(tokens), "max_model_len": max_len, "tokens": tokens, "token_strs": strs}


def models_list(names: list[str], root: str, max_len: int) -> dict[str, Any]:
    """/v1/models: one entry per served name."""
    created = int(time.time())
    data = [
        {
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": root,
            "parent": None,
            "max_model_len": max_len,
        }
        for name in names
    ]
    return {"object": "list", "data": data}
