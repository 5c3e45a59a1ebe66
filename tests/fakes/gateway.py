"""`FakeGateway`: a gateway host in memory, with LiteLLM proxies by port and an nginx front.

Built on `FakeHost` (our own seam): it answers the commands desired/gateway.yaml names
(`fleet-gateway-proxy start|stop PORT`, `nginx -s reload`, `fleet-gateway-restart`) and
serves HTTP as the real parts do: a proxy started on a port reads the config file *then*
and lists its aliases on `/v1/models`, answers `/health/liveliness` and chats; the front
(the gateway URL's port) serves what the proxy its upstream file named at the last reload
serves, or 502 when that proxy is gone. `events` lists what happened in order; `unserved`
notes every moment the front had no proxy behind it (what clients would see fail).

Switches: `fail_start` (the next proxy start fails with that line), `chat_status` (what
proxies started from now answer a chat), `fail_reloads` (that many reloads fail),
`front_dead` (nginx's master is gone: its port refuses, every reload fails; `refresh()`
after setting it). Proxies also answer `/model/info` with the routes they loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from fleet.gateways import nginx
from fleet.gateways.litellm.config import parse_gateway_config
from fleet.spec.models import Gateway
from reconciler.host import CommandResult
from tests.fakes.clock import FakeClock
from tests.fakes.host import FakeHost, Reply

OK = CommandResult(0, "", "")


@dataclass
class FakeProxy:
    """One LiteLLM proxy: the aliases of the config it read at start."""

    port: int
    aliases: tuple[str, ...]
    chat_status: int = 200
    bases: dict[str, str | None] = field(default_factory=dict)  # alias -> api_base

    def routes(self) -> dict[str, list[Reply]]:
        models = {"object": "list", "data": [{"id": a, "object": "model"} for a in self.aliases]}
        info = {
            "data": [
                {"model_name": a, "litellm_params": {"api_base": self.bases.get(a)}}
                for a in self.aliases
            ]
        }
        chat = '{"choices": [{"message": {"content": "pong"}}]}'
        if self.chat_status != 200:
            chat = '{"error": {"message": "litellm.APIConnectionError: cannot connect"}}'
        return {
            "/health/liveliness": [Reply(200, '"I\'m alive!"')],
            "/v1/models": [Reply(200, json.dumps(models))],
            "/model/info": [Reply(200, json.dumps(info))],
            "/v1/chat/completions": [Reply(self.chat_status, chat)],
        }


class FakeGateway:
    """The gateway host of `gateway` (desired/gateway.yaml), its front routing to `live`."""

    def __init__(
        self, gateway: Gateway, config_text: str, clock: FakeClock, live: int = 4001
    ) -> None:
        self.gateway, self.clock = gateway, clock
        self.address = "127.0.0.13"
        self.front_port = 4000
        self.host = FakeHost("gateway", files={gateway.config_path: config_text})
        self.proxies: dict[int, FakeProxy] = {}
        self.events: list[str] = []
        self.unserved: list[str] = []
        self.fail_start: str | None = None
        self.chat_status = 200
        self.fail_reloads = 0
        self.restart_seconds = 11.8
        self.front_dead = False  # nginx's master is gone: nothing answers, reloads fail
        self.routed = live  # the port the front sends to (as of its last reload)
        if gateway.front is not None:
            self.host.files[gateway.front.upstream_file] = nginx.upstream_text(self.address, live)
        self.host.commands = {
            "fleet-gateway-proxy start ": self._start,
            "fleet-gateway-proxy stop ": self._stop,
            "nginx -s reload": self._reload,
            "fleet-gateway-restart": self.restart,
        }
        self._launch(live)
        self.events.clear()

    def load_file(self) -> None:
        """The live proxy loads the config file now (as after an apply that wrote it)."""
        self._launch(self.routed, "load")

    def serving(self) -> tuple[str, ...]:
        """The aliases clients get through the front now."""
        proxy = self.proxies.get(self.routed)
        return proxy.aliases if proxy else ()

    def _launch(self, port: int, event: str = "start") -> CommandResult:
        self.events.append(f"{event} {port}")
        if self.fail_start is not None:
            reason, self.fail_start = self.fail_start, None
            return CommandResult(1, "", reason)
        text = self.host.files[self.gateway.config_path]
        routed = parse_gateway_config(text).by_alias()
        bases = {alias: entry.address for alias, entry in routed.items()}
        self.proxies[port] = FakeProxy(port, tuple(sorted(routed)), self.chat_status, bases)
        self.refresh()
        return OK

    def _start(self, command: str) -> CommandResult:
        return self._launch(int(command.split()[-1]))

    def _stop(self, command: str) -> CommandResult:
        port = int(command.split()[-1])
        self.events.append(f"stop {port}")
        if self.proxies.pop(port, None) is not None and port == self.routed:
            self.unserved.append(f"the front's proxy on :{port} stopped")
        self.refresh()
        return OK

    def _reload(self, _: str) -> CommandResult:
        if self.front_dead:
            self.events.append("reload failed")
            return CommandResult(1, "", "nginx: [error] kill(2415, 1) failed (3: No such process)")
        if self.fail_reloads:
            self.fail_reloads -= 1
            self.events.append("reload failed")
            return CommandResult(1, "", 'nginx: [emerg] unexpected "}" in upstream file')
        front = self.gateway.front
        assert front is not None
        port = nginx.live_port(self.host.files[front.upstream_file])
        assert port is not None
        self.events.append(f"reload {port}")
        if port not in self.proxies:
            self.unserved.append(f"the front was pointed at :{port}, where no proxy runs")
        self.routed = port
        self.refresh()
        return OK

    def restart(self, _: str) -> CommandResult:
        """In place: the proxy the front routes to stops, then starts with the file's config."""
        self.unserved.append(f"in-place restart of :{self.routed} ({self.restart_seconds} s)")
        self.clock.now += self.restart_seconds
        self.proxies.pop(self.routed, None)
        return self._launch(self.routed, "restart")

    def refresh(self) -> None:
        self.host.routes = {
            (self.address, port): proxy.routes() for port, proxy in self.proxies.items()
        }
        live = self.proxies.get(self.routed)
        down = {p: [Reply(502, "<html>502 Bad Gateway</html>")] for p in ("/v1/models",)}
        self.host.routes[(self.address, self.front_port)] = live.routes() if live else down
        if self.front_dead:
            del self.host.routes[(self.address, self.front_port)]
