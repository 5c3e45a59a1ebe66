"""Find literal secrets in desired/: API keys, tokens and passwords never live in Git.

Two checks: the text of every line against the shapes of well-known keys (OpenAI-style
`sk-`, Hugging Face `hf_`, GitHub `ghp_`/`github_pat_`, Slack, AWS), and every key whose
name says it holds a secret (`password`, `api_key`, `token`, ...) whose value is a literal
instead of a `${ENV_VAR}` (or LiteLLM's `os.environ/NAME`) reference. Messages name the
kind of secret, never its value. Also used to redact secrets from any output.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

KEY_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an OpenAI-style API key", re.compile(r"\bsk-[A-Za-z0-9_-]{16,}")),
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("a GitHub token", re.compile(r"\b(?:ghp|gho|ghs|ghu)_[A-Za-z0-9]{20,}|github_pat_\w{20,}")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
)
SECRET_KEY_NAMES = re.compile(
    r"(password|passwd|secret|api[_-]?key|apikey|token|master[_-]?key|access[_-]?key)$",
    re.IGNORECASE,
)
REFERENCE = re.compile(r"^\s*(\$\{[A-Za-z_][A-Za-z0-9_]*\}|os\.environ/[A-Za-z_][A-Za-z0-9_]*)\s*$")


def find_key_shapes(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line, kind) for every line holding something shaped like a known key."""
    for number, line in enumerate(text.splitlines(), start=1):
        for kind, pattern in KEY_SHAPES:
            if pattern.search(line):
                yield number, kind
                break


def find_secret_keys(tree: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Key paths whose name says secret and whose value is a literal, not a reference."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            here = (*path, key)
            if isinstance(key, str) and SECRET_KEY_NAMES.search(key) and _is_literal(value):
                yield here
            yield from find_secret_keys(value, here)
    elif isinstance(tree, list):
        for index, item in enumerate(tree):
            yield from find_secret_keys(item, (*path, index))


def _is_literal(value: Any) -> bool:
    if value is None or isinstance(value, bool | dict | list):
        return False
    return not (isinstance(value, str) and (REFERENCE.match(value) or not value.strip()))


def redact(text: str, secrets: list[str] | None = None) -> str:
    """Replace known key shapes and the given secret values with `***`."""
    for value in sorted(secrets or [], key=len, reverse=True):
        if len(value) >= 4:
            text = text.replace(value, "***")
    for _, pattern in KEY_SHAPES:
        text = pattern.sub("***", text)
    return text


INTERPOLATION = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def compose_escape(value: str) -> str:
    """A value for a compose file: `${VAR}` stays an interpolation, any other `$` is literal."""
    parts = INTERPOLATION.split(value)
    out = []
    for index, part in enumerate(parts):
        out.append(f"${{{part}}}" if index % 2 else part.replace("$", "$$"))
    return "".join(out)


def referenced_variables(text: str) -> list[str]:
    """Names of the `${VAR}` interpolations in a compose text, sorted."""
    return sorted(set(INTERPOLATION.findall(text)))


SECRET_FLAG = re.compile(
    r"^--?(?:[\w-]*[-_])?(?:api[-_]?key|token|password|passwd|secret)$", re.IGNORECASE
)


def mask_argv(argv: tuple[str, ...]) -> tuple[str, ...]:
    """The argv with the values of secret flags (`--api-key`, `--hf-token`) as `***`."""
    masked: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            masked.append("***")
            hide_next = False
            continue
        name, equals, _ = arg.partition("=")
        if SECRET_FLAG.match(name):
            masked.append(f"{name}=***" if equals else arg)
            hide_next = not equals
        else:
            masked.append(arg)
    return tuple(masked)


_URL_CREDENTIALS = re.compile(r"://[^/\s:@]+:[^/\s@]+@")


def mask_env_value(name: str, value: str) -> str:
    """An environment value fit for desired/: `${NAME}` in place of anything that looks
    secret (a secret-sounding name, a known key shape, credentials in a URL)."""
    if REFERENCE.match(value):
        return value
    looks_secret = (
        SECRET_KEY_NAMES.search(name) is not None
        or any(pattern.search(value) for _, pattern in KEY_SHAPES)
        or _URL_CREDENTIALS.search(value) is not None
    )
    return f"${{{name}}}" if looks_secret and value else value
