"""The stand-ins' tokenizer: one token per whitespace-separated word, stable ids.

Both engines count a request the same way everywhere it matters: `usage.prompt_tokens`,
`/tokenize`, the prefill time and the out-of-memory depth. A text prompt is its words; a
chat request is the words of every message's text plus CHAT_TEMPLATE_TOKENS for the
template's role markers; a prompt given as token ids is those ids. Ids are the crc32 of
the word folded into the vocabulary (below the special tokens), so the same text always
gives the same tokens.
"""

from __future__ import annotations

import zlib
from typing import Any

VOCAB = 151_936
CHAT_TEMPLATE_TOKENS = 4
# <|im_start|>, <|im_end|>, ... : the special ids at the top of the vocabulary
TEMPLATE_IDS = tuple(VOCAB - 1 - i for i in range(CHAT_TEMPLATE_TOKENS))
WORD_IDS = VOCAB - 1024


def token_id(word: str) -> int:
    """A word's token id (stable across runs and processes)."""
    return zlib.crc32(word.encode()) % WORD_IDS


def message_text(content: Any) -> str:
    """The text of a chat message's content: a string or OpenAI content parts."""
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return " ".join(str(p) for p in parts)
    return "" if content is None else str(content)


def chat_words(messages: Any) -> list[str]:
    """The words of every message, in order."""
    out: list[str] = []
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict):
            out += message_text(message.get("content")).split()
    return out


def tokenize_text(text: str) -> list[int]:
    """A plain text's tokens."""
    return [token_id(w) for w in text.split()]


def tokenize_body(body: dict[str, Any]) -> list[int]:
    """The tokens of a request body: chat `messages`, a text `prompt` or `content`, or ids."""
    if "messages" in body:
        head, tail = TEMPLATE_IDS[:2], TEMPLATE_IDS[2:]
        return [*head, *(token_id(w) for w in chat_words(body["messages"])), *tail]
    prompt = body.get("prompt", body.get("content", ""))
    if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
        return list(prompt)
    if isinstance(prompt, list):
        prompt = " ".join(str(p) for p in prompt)
    return tokenize_text(str(prompt))


def count_prompt(body: dict[str, Any]) -> int:
    """How many prompt tokens a request has (what usage.prompt_tokens reports)."""
    return len(tokenize_body(body))


def answer_words(name: str, max_tokens: int) -> list[str]:
    """The generated text as tokens (one word each); it names the seat that answered."""
    head = f"This is {name} answering.".split()
    filler = [f"token{i}" for i in range(max(max_tokens - len(head), 0))]
    return [w + " " for w in (head + filler)[: max(max_tokens, 1)]]
