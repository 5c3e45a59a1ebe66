"""Observe the live fleet read-only: every host in parallel, then the gateway.

Each host costs one SSH connection and one round trip for all of its facts (the fact
script), plus, on the gateway host, one SFTP read of the LiteLLM config and one
direct-tcpip probe per backend, made from the gateway host's own network. A host that
fails is reported as unreachable; the others are still observed. A fetched model whose
files' size or mtime moved since its provenance gets one more command: those files hashed
again (`fleet.observed.model_use.to_rehash`).
"""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from urllib.parse import urlsplit

from fleet.errors import FleetError
from fleet.facts.openai_models import model_ids
from fleet.gateways import kind_of, nginx
from fleet.observed.assemble import assemble_host
from fleet.observed.model_use import to_rehash
from fleet.observed.models import (
    BackendProbe,
    ModelInfo,
    Observation,
    ObservedGateway,
    ObservedHost,
    ServedGateway,
)
from fleet.render import model_fetch
from fleet.render.model_fetch import temporary_glob
from fleet.runtimes import host_script, runtime_for
from fleet.spec.models import DesiredFleet, Gateway
from reconciler.adapters.http import request_via
from reconciler.host import HostSession, Sessions
from reconciler.workflows.client_observe import observe_clients, observe_keys
from reconciler.workflows.locks import gone_pid
from reconciler.workflows.targets import observe_targets


def observe_fleet(
    desired: DesiredFleet,
    connections: Sessions,
    hosts: list[str] | None = None,
    *,
    verify: bool = False,
    loads: bool = False,
) -> Observation:
    """The whole fleet (or the named hosts), observed in parallel; `verify` hashes every
    fetched model file with a recorded digest again; `loads` also reads each seat's engine
    gauges (its /metrics) in the same round trip (`fleet status`)."""
    names = sorted(hosts or desired.hosts)
    with ThreadPoolExecutor(max_workers=max(len(names), 1)) as pool:
        seen = pool.map(lambda n: _observe_one(desired, connections, n, verify, loads), names)
        observed = dict(zip(names, seen, strict=True))
    gateway = None
    if desired.gateway is not None and (hosts is None or desired.gateway.host in names):
        gateway = observe_gateway(desired.gateway, connections)
    clients = observe_clients(desired, connections) if hosts is None else {}
    monitoring = desired.settings.monitoring
    watched = None
    if monitoring is not None and (hosts is None or monitoring.host in names):
        watched = observe_targets(desired, connections)
    return Observation(
        observed_at=_now(), hosts=observed, gateway=gateway, clients=clients, targets=watched
    )


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _observe_one(
    desired: DesiredFleet, connections: Sessions, name: str, verify: bool, loads: bool
) -> ObservedHost:
    try:
        return observe_host(desired, connections.get(name), name, verify=verify, loads=loads)
    except FleetError as err:
        return ObservedHost(name=name, reachable=False, error=err.message)


def observe_host(
    desired: DesiredFleet,
    conn: HostSession,
    name: str,
    *,
    verify: bool = False,
    loads: bool = False,
) -> ObservedHost:
    """All facts of one host, in one round trip (and one more per fetched model to hash
    again: its files whose size or mtime moved, or all of them with `verify`); `loads`:
    with the engine gauges of every port its seats may serve on."""
    spec = desired.hosts[name]
    paths = [s.model for s in desired.seats_on(name)]
    paths += [
        s.speculative.draft_model
        for s in desired.seats_on(name)
        if s.speculative and s.speculative.draft_model
    ]
    sources = {
        path: (model_fetch.source_listing(origin, desired.settings.stores), temporary_glob(path))
        for (host, path), (origin, _) in model_fetch.fetches(desired).items()
        if host == name
    }
    boundary = new_boundary()
    ports = {p for s in desired.seats_on(name) for p in (s.port, s.second_port)} if loads else set()
    result = conn.run("sh -s", stdin=host_script(spec, paths, sources, boundary, ports))
    observed = assemble_host(name, result.stdout, runtime_for(spec), boundary)
    if not spec.gpus and observed.gpu_error:
        observed = observed.model_copy(update={"gpu_error": None})
    if observed.lock and (pid := gone_pid(observed.lock)) is not None:
        observed = observed.model_copy(update={"lock_gone_pid": pid})
    return observed.model_copy(update={"models": _rehashed(conn, observed, verify)})


def new_boundary() -> str:
    """A fact script's section boundary for one run: random, so that nothing printed on
    the host (a config.json, a log) can start a section of its own."""
    return secrets.token_hex(16)


def _rehashed(conn: HostSession, host: ObservedHost, verify: bool) -> dict[str, ModelInfo]:
    """The host's models, each with the digests of the files `to_rehash` names."""
    models = dict(host.models)
    for path, info in sorted(host.models.items()):
        if names := to_rehash(info, every=verify):
            result = conn.run(model_fetch.installed_digest_command(path, names))
            digests = model_fetch.parse_digests(result.stdout, path)
            models[path] = info.model_copy(update={"digests": digests})
    return models


def observe_gateway(gateway: Gateway, connections: Sessions) -> ObservedGateway:
    """The gateway's config and whether each backend answers from the gateway host."""
    try:
        conn = connections.get(gateway.host)
        text = conn.read_file(gateway.config_path)
    except FleetError as err:
        return ObservedGateway(
            host=gateway.host, config_path=gateway.config_path, reachable=False, error=err.message
        )
    if text is None:
        return ObservedGateway(
            host=gateway.host,
            config_path=gateway.config_path,
            error=f"{gateway.config_path} does not exist on {gateway.host}",
        )
    try:
        config = kind_of(gateway).parse_config(text)
    except FleetError as err:
        return ObservedGateway(
            host=gateway.host,
            config_path=gateway.config_path,
            config_text=text,
            error=f"{gateway.config_path}: {err.message}",
        )
    bases = sorted({e.address for e in config.entries if e.address})
    with ThreadPoolExecutor(max_workers=max(min(len(bases), 8), 1)) as pool:
        probes = dict(zip(bases, pool.map(lambda b: probe_backend(conn, b), bases), strict=True))
    return ObservedGateway(
        host=gateway.host,
        config_path=gateway.config_path,
        config_text=text,
        config=config,
        probes=probes,
        served=observe_served(conn, gateway),
        keys=observe_keys(conn, gateway),
    )


def observe_served(conn: HostSession, gateway: Gateway) -> ServedGateway:
    """What the gateway serves through its URL, where its front points, and what each
    proxy port lists: asked from the gateway host, as clients and the front reach them."""
    from reconciler.workflows.gateway import master_key  # its writers pull in ruamel
    from reconciler.workflows.proxy import url_endpoint

    kind = kind_of(gateway)
    try:
        headers = kind.headers(master_key(gateway))
    except FleetError:
        headers = {}  # no key here: the model list may refuse, the front still answers
    url = url_endpoint(gateway)
    try:
        listed = request_via(
            conn, url.address, url.port, "GET", kind.models_path, headers=headers, timeout=5.0
        )
    except FleetError as err:
        return ServedGateway(url_answers=False, url_error=err.message)
    if listed.status >= 500 or listed.status == 404:
        return ServedGateway(url_answers=False, url_error=f"HTTP {listed.status}")
    routes = None
    if listed.status == 200:
        if kind.routes_path is not None:
            reply = request_via(
                conn, url.address, url.port, "GET", kind.routes_path, headers=headers, timeout=5.0
            )
            routes = kind.served_routes(reply.json()) if reply.status == 200 else None
        if routes is None:
            routes = dict.fromkeys(sorted(kind.listed(listed.json())))
    front = gateway.front
    if front is None:
        return ServedGateway(url_answers=True, routes=routes)
    address = front.proxy_address or url.address
    proxies = {}
    for port in front.proxy_ports:
        try:
            reply = request_via(
                conn, address, port, "GET", kind.models_path, headers=headers, timeout=5.0
            )
        except FleetError:
            continue
        proxies[port] = tuple(sorted(kind.listed(reply.json()))) if reply.status == 200 else ()
    return ServedGateway(
        url_answers=True,
        routes=routes,
        front_port=nginx.live_port(conn.read_file(front.upstream_file)),
        proxies=proxies,
    )


def probe_backend(conn: HostSession, api_base: str) -> BackendProbe:
    """GET <api_base>/models from the gateway host: does it answer, what does it serve."""
    parts = urlsplit(api_base)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port out of range, or not a number
        return BackendProbe(api_base=api_base, answers=False, error="not a valid port in the URL")
    if parts.hostname is None or parts.scheme not in ("http", "https"):
        return BackendProbe(
            api_base=api_base, answers=False, error="not an http URL (environment reference?)"
        )
    try:
        reply = request_via(
            conn, parts.hostname, port, "GET", parts.path.rstrip("/") + "/models", timeout=5.0
        )
    except FleetError as err:
        return BackendProbe(api_base=api_base, answers=False, error=err.message)
    models = tuple(sorted(model_ids(reply.json()) or ()))
    return BackendProbe(
        api_base=api_base,
        answers=reply.status == 200,
        models=models,
        error=None if reply.status == 200 else f"HTTP {reply.status}",
    )
