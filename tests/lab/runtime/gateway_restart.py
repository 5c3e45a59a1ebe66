"""`fleet-gateway-restart` and `fleet-gateway-proxy` on the gateway host: ask the
supervisor (gateway_supervisor.py) to restart the proxies in place, or to start or stop
the proxy on one port, and wait for it.

Exits 0 once done (a started proxy is ready, a stopped one has exited); otherwise prints
a one-line reason and exits 1.

usage: gateway_restart.py SUPERVISOR-SOCKET                  (fleet-gateway-restart)
       gateway_restart.py SUPERVISOR-SOCKET start|stop PORT  (fleet-gateway-proxy)
"""

from __future__ import annotations

import socket
import sys

DONE = {"restart": "litellm restarted and ready", "start": "litellm ready", "stop": "stopped"}


def main(argv: list[str]) -> int:
    """Send one request to the supervisor and relay its answer."""
    request = " ".join(argv[1:]) or "restart"
    verb = request.split()[0]
    if verb not in DONE or (verb != "restart" and len(argv) != 3):
        print("usage: fleet-gateway-proxy start|stop PORT", file=sys.stderr)
        return 2
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(240)
            conn.connect(argv[0])
            conn.sendall(f"{request}\n".encode())
            answer = conn.makefile().readline().strip()
    except OSError as err:
        print(f"fleet-gateway-{verb}: gateway supervisor unreachable: {err}", file=sys.stderr)
        return 1
    if answer == "ok":
        print(f"{DONE[verb]}{'' if verb == 'restart' else ' on :' + argv[2]}")
        return 0
    print(f"fleet-gateway-{verb}: {answer.removeprefix('error ')}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
