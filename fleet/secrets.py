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
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("a JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{16,}")),
)
SECRET_KEY_NAMES = re.compile(
    r"(password|passwd|secret|api[_-]?key|apikey|token|master[_-]?key|access[_-]?key"
    r"|private[_-]?key|credentials?|auth|authorization|webhook[_-]?url"
    r"|(?:^|[_-])(?:pass|pwd))$",
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


def find_secret_values(tree: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[Any, str]]:
    """(key path, kind) of literal secrets told by their shape, whatever the key's name:
    credentials or a token in a URL, the value of a secret flag (`--api-key K`,
    `--hf-token=K`) in a list of arguments."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from find_secret_values(value, (*path, key))
    elif isinstance(tree, list):
        for index, item in enumerate(tree):
            yield from find_secret_values(item, (*path, index))
            if isinstance(item, str) and (kind := _secret_flag_value(tree, index)):
                yield (*path, index), kind
    elif isinstance(tree, str) and (kind := _url_secret(tree)):
        yield path, kind


def _secret_flag_value(args: list[Any], index: int) -> str | None:
    name, equals, value = str(args[index]).partition("=")
    if not SECRET_FLAG.match(name):
        return None
    if not equals:
        following = args[index + 1] if index + 1 < len(args) else None
        if not isinstance(following, str) or following.startswith("-"):
            return None
        value = following
    return None if REFERENCE.match(value) else f"a literal value for {name}"


_URL_PASSWORD = re.compile(r"://[^/\s:@]+:(?P<password>[^/\s@]+)@")
_URL_TOKEN = re.compile(
    r"[?&](?:token|access_token|api[_-]?key|apikey|key|secret|password|sig|signature)="
    r"(?P<value>[^&#\s]+)",
    re.IGNORECASE,
)


def _url_secret(value: str) -> str | None:
    password = _URL_PASSWORD.search(value)
    if password is not None and not REFERENCE.match(password.group("password")):
        return "credentials in a URL (user:password@)"
    token = _URL_TOKEN.search(value)
    if token is not None and not REFERENCE.match(token.group("value")):
        return "a token in a URL's query"
    return None


def redact_url(url: str) -> str:
    """A URL with the password of its `user:password@` and secret query values as `***`."""
    url = _URL_PASSWORD.sub(lambda m: m.group(0).replace(m.group("password"), "***"), url)
    return _URL_TOKEN.sub(lambda m: m.group(0).replace(m.group("value"), "***"), url)


def mask_mapping(mapping: Any) -> Any:
    """A mapping fit to print: values of secret-named keys as `***`, URLs redacted."""
    if isinstance(mapping, dict):
        return {
            k: "***" if isinstance(k, str) and SECRET_KEY_NAMES.search(k) else mask_mapping(v)
            for k, v in mapping.items()
        }
    if isinstance(mapping, list):
        return [mask_mapping(v) for v in mapping]
    return redact_url(mapping) if isinstance(mapping, str) else mapping


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
    return redact_url(text)


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


def without_secret_args(args: list[str]) -> tuple[list[str], list[str]]:
    """Arguments fit for desired/, and what was left out: each secret flag with its value
    (`--api-key K`, `--hf-token=K`) and any argument holding a URL's credentials."""
    kept: list[str] = []
    dropped: list[str] = []
    skip_value = False
    for arg in args:
        if skip_value and not arg.startswith("-"):
            skip_value = False
            continue
        skip_value = False
        name, equals, _ = arg.partition("=")
        if SECRET_FLAG.match(name):
            dropped.append(name)
            skip_value = not equals
        elif _url_secret(arg):
            dropped.append(redact_url(arg))
        else:
            kept.append(arg)
    return kept, dropped


def mask_env_value(name: str, value: str) -> str:
    """An environment value fit for desired/: `${NAME}` in place of anything that looks
    secret (a secret-sounding name, a known key shape, credentials in a URL)."""
    if REFERENCE.match(value):
        return value
    looks_secret = (
        SECRET_KEY_NAMES.search(name) is not None
        or any(pattern.search(value) for _, pattern in KEY_SHAPES)
        or _URL_CREDENTIALS.search(value) is not None
        or _url_secret(value) is not None
    )
    return f"${{{name}}}" if looks_secret and value else value
