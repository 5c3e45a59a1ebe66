"""`fleet-gateway-restart` on the gateway host: restart the LiteLLM proxy and wait.

Exits 0 once the proxy is ready again; otherwise prints a one-line reason and exits 1.

usage: gateway_restart.py SUPERVISOR-SOCKET
"""

from __future__ import annotations

import socket
import sys


def main(argv: list[str]) -> int:
    """Ask the supervisor for a restart and relay its answer."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(180)
            conn.connect(argv[0])
            conn.sendall(b"restart\n")
            answer = conn.makefile().readline().strip()
    except OSError as err:
        print(f"fleet-gateway-restart: gateway supervisor unreachable: {err}", file=sys.stderr)
        return 1
    if answer == "ok":
        print("litellm restarted and ready")
        return 0
    print(f"fleet-gateway-restart: {answer.removeprefix('error ')}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
