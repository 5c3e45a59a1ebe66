"""Gateway operations: upload the edited LiteLLM config, restart the proxy, verify aliases.

Used by apply and its rollback. The master key comes from the environment variable that
desired/gateway.yaml references (`${LITELLM_MASTER_KEY}`) and never reaches any output.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

from fleet.errors import FleetError, GatewayError
from fleet.facts.openai_models import model_ids
from fleet.spec.models import Gateway
from reconciler.adapters.http import request_url
from reconciler.host import HostSession
from reconciler.runtimes.compose import restart_command

Waiting = Callable[[str, float], None]
_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")


def master_key(gateway: Gateway) -> str | None:
    """The proxy's key from the environment; GatewayError if the variable is unset."""
    if gateway.master_key is None:
        return None
    match = _REFERENCE.match(gateway.master_key.strip())
    if match is None:
        raise GatewayError("gateway master_key must be a ${ENV_VAR} reference")
    value = os.environ.get(match.group(1))
    if not value:
        raise GatewayError(
            f"environment variable {match.group(1)} (the gateway's master key) is not set"
        )
    return value


def upload_config(conn: HostSession, gateway: Gateway, text: str) -> None:
    """Write the config atomically; the previous one stays as <path>.fleet-prev."""
    previous = conn.read_file(gateway.config_path)
    if previous is not None:
        conn.write_file_atomic(gateway.config_path + ".fleet-prev", previous)
    conn.write_file_atomic(gateway.config_path, text)


def restart(conn: HostSession, gateway: Gateway) -> None:
    """Restart the proxy the way gateway.yaml says; GatewayError if it does not come up."""
    if gateway.restart.container:
        command = restart_command(gateway.restart.container)
    else:
        command = str(gateway.restart.command)
    result = conn.run(command, timeout=300)
    if result.exit_status != 0:
        reason = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()
        raise GatewayError(f"gateway restart (`{command}`) failed: {reason[-1]}")


def verify_aliases(
    gateway: Gateway, aliases: dict[str, bool], key: str | None, timeout: float, waiting: Waiting
) -> None:
    """Every alias is listed by the proxy; those that chat answer one short completion."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    base = gateway.url.rstrip("/")
    started = time.monotonic()
    listed: set[str] = set()
    while not set(aliases) <= listed:
        try:
            reply = request_url(f"{base}/v1/models", headers=headers, timeout=10)
        except FleetError as err:  # the proxy may still be starting
            listed, reason = set(), err.message
        else:
            listed = set(model_ids(reply.json()) or ()) if reply.status == 200 else set()
            reason = f"proxy lists {len(listed & set(aliases))}/{len(aliases)} aliases"
        if set(aliases) <= listed:
            break
        if time.monotonic() - started > timeout:
            raise GatewayError(
                f"after {timeout:.0f}s the gateway does not list "
                f"{', '.join(sorted(set(aliases) - listed))} ({reason})"
            )
        waiting(reason, time.monotonic() - started)
        time.sleep(1.0)
    for alias, chats in sorted(aliases.items()):
        if chats:
            _chat(base, alias, headers)


def _chat(base: str, alias: str, headers: dict[str, str]) -> None:
    body = {"model": alias, "max_tokens": 4, "messages": [{"role": "user", "content": "ping"}]}
    reply = request_url(
        f"{base}/v1/chat/completions", method="POST", body=body, headers=headers, timeout=60
    )
    if reply.status != 200:
        raise GatewayError(
            f"alias {alias}: a chat completion through the gateway answered "
            f"HTTP {reply.status}: {reply.body[:160]}"
        )
