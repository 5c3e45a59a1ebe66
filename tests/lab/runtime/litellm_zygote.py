"""Starts the lab's LiteLLM proxies from one process that has imported LiteLLM already.

A LiteLLM proxy spends about 12 s of one core importing its own modules before it reads
its config (30-70 s on a loaded machine), and the lab starts one for every blue/green
switch and every reset: most of the suite's proxy time. This process imports
`litellm.proxy.proxy_cli` and `litellm.proxy.proxy_server` once, single-threaded, then
forks a child per request; the child is the real proxy, started by LiteLLM's own command
line (`run_server`) with the same arguments `litellm` would get, reading the gateway
host's config file at its start as usual. Only the imports are shared, with the routes'
state (`warm_routes`: one unmatched request, in an event loop closed again before any
fork): nothing of a proxy runs before the fork, its start-up and config included, and
no thread is left running (checked at start).

Requests arrive on stdin, one line each, tab-separated; the answer is one line on stdout:

    spawn LOG ARG...   fork a proxy with ARG... as its argv, output appended to LOG  -> PID
    poll PID           -> `running`, or `exited CODE`

A child runs in its own session (SIGTERM to its process group stops it, as for a proxy
started with `start_new_session`). Used by gateway_supervisor.py; FLEET_LAB_LITELLM_FORK=0
makes the supervisor start every proxy with a fresh interpreter instead.
"""

from __future__ import annotations

import atexit
import importlib
import os
import signal
import sys
import threading

EXITED: dict[int, int] = {}

# What a proxy imports after its start, on its first request or in its start-up, measured
# with `-X importtime` in a forked proxy (LiteLLM 1.108): ~0.75 s of one core per proxy,
# the MCP server manager alone 0.46 s. Imported here once, before any fork.
WARM = (
    "litellm.proxy._experimental.mcp_server.mcp_server_manager",
    "litellm.proxy._experimental.mcp_server.auth.user_api_key_auth_mcp",
    "litellm.litellm_core_utils.default_encoding",
    "litellm.proxy.pass_through_endpoints.llm_passthrough_endpoints",
    "litellm.llms.bedrock.passthrough.guardrail_translation.handler",
    "litellm.integrations.shadow_eval_logger",
    "litellm.proxy.hooks.mcp_semantic_filter",
    "litellm.llms.github_copilot.per_user_auth",
    "litellm.integrations.otel.logger",
    "prometheus_client",
    "uvloop",
    "anyio._core._sockets",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.websockets.websockets_sansio_impl",
)


def reap(_signum: int, _frame: object) -> None:
    """Collect every child that has exited, keeping its exit code."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        EXITED[pid] = os.waitstatus_to_exitcode(status)


def run_proxy(log: str, argv: list[str]) -> None:
    """In the child: become the proxy LiteLLM's command line starts; never returns."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the child's own stdin
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    from litellm.proxy.proxy_cli import run_server

    code = 0
    try:
        run_server.main(args=argv[1:], prog_name="litellm", standalone_mode=True)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException as err:  # a crashed proxy reports and exits
        print(f"fleet-lab: proxy crashed: {err!r}", file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()  # what the interpreter's exit would run, then no more
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def warm_routes() -> None:
    """Match one request against the proxy's routes, once, here: FastAPI builds each
    route's state on the first request that walks past it (~0.4 s of one core for
    LiteLLM's ~260 routes), then keeps it on the app, which every fork shares. The path
    matches no route (404): no handler, no proxy state, nothing started."""
    import asyncio

    from litellm.proxy.proxy_server import app

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/fleet-lab-zygote-warm-up",
        "raw_path": b"/fleet-lab-zygote-warm-up",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 1),
    }

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_message: dict[str, object]) -> None:
        return None

    asyncio.run(app(scope, receive, send))


def answer(line: str) -> str:
    """One request line's answer."""
    verb, *args = line.rstrip("\n").split("\t")
    if verb == "spawn" and len(args) >= 2:
        pid = os.fork()
        if pid == 0:
            run_proxy(args[0], args[1:])
        return str(pid)
    if verb == "poll" and len(args) == 1 and args[0].isdigit():
        pid = int(args[0])
        return f"exited {EXITED[pid]}" if pid in EXITED else "running"
    return f"error bad request {line.strip()!r}"


def main() -> int:
    """Import LiteLLM, then answer requests until stdin closes."""
    import litellm.proxy.proxy_cli  # the import every proxy shares
    import litellm.proxy.proxy_server  # noqa: F401

    for name in WARM:
        try:
            importlib.import_module(name)
        except ImportError:  # another LiteLLM: its proxies import what they need
            continue
    warm_routes()
    if threading.active_count() != 1:  # a fork would lose those threads
        print(f"error importing LiteLLM started threads: {threading.enumerate()}", flush=True)
        return 1
    signal.signal(signal.SIGCHLD, reap)
    print("ready", flush=True)
    for line in sys.stdin:
        print(answer(line), flush=True)
    return 0


if __name__ == "__main__":
    # os._exit: LiteLLM's exit handlers, meant for a proxy that ran, must not run here
    # (they spin); the proxies are in sessions of their own and outlive this process.
    sys.stdout.flush()
    os._exit(main())
