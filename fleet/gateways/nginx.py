"""The gateway's front (nginx): the upstream file fleet writes to switch proxies.

The operator's nginx config routes to an `upstream` block that includes one file
(`front.upstream_file` in desired/gateway.yaml); fleet writes exactly one `server
ADDR:PORT;` line there and reloads nginx, which is how blue/green switches the live proxy
(`reconciler.workflows.bluegreen`). Reading the file back tells which proxy port is live.
Pure: text in, text out.
"""

from __future__ import annotations

import re

_SERVER = re.compile(r"^\s*server\s+([^\s:;]+):(\d+)\b[^;]*;", re.MULTILINE)


def upstream_text(address: str, port: int) -> str:
    """The upstream file pointing the front at one proxy."""
    return (
        "# Written by fleet: the LiteLLM proxy this gateway's front sends to.\n"
        f"server {address}:{port};\n"
    )


def live_port(text: str | None) -> int | None:
    """The port of the (first) server of an upstream file; None if it names none."""
    match = _SERVER.search(text or "")
    return int(match.group(2)) if match else None


def other_port(ports: tuple[int, int], live: int | None) -> int:
    """The proxy port that is not live (the second one when neither is)."""
    return ports[0] if live == ports[1] else ports[1]
