"""A live fleet exactly as desired/ says: the Observation observe would have built.

Each seat's container runs with the argv written out by hand in `tests.unit.plan.live_argv`
(never the renderer's output, so plan is checked against what an engine really runs
with) and carries the labels of its compose service, as compose gives them. Tests perturb
it (drop a container, change an argv, move an alias) and check the plan. This is a fake at
our own seam.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fleet.engines.vllm.log import EngineReport
from fleet.facts.instance import Instance
from fleet.gateways.litellm.config import parse_gateway_config
from fleet.gateways.litellm.render import render_gateway_config
from fleet.observed.assemble import observed_seat
from fleet.observed.models import (
    BackendProbe,
    ModelInfo,
    Observation,
    ObservedGateway,
    ObservedGpu,
    ObservedHost,
    ObservedSeat,
)
from fleet.runtimes import runtime_for
from fleet.spec.models import DesiredFleet, Seat
from tests.unit.plan.live_argv import live_argv

GIB = 1024**3


def live_seat(
    fleet: DesiredFleet, seat: Seat, live: Sequence[str] | None = None, **argv_edit: str
) -> ObservedSeat:
    """The seat running in sync (its hand-written argv and its `extra_args`, or the `live`
    argv a test wrote out for a seat of its own), but for the flags edited
    (`max_model_len="131072"`: the process runs with that value)."""
    host = fleet.hosts[seat.host]
    service = runtime_for(host).render_seat(seat, host)
    argv = list(live) if live is not None else live_argv(seat.name, seat.extra_args, **argv_edit)
    container = Instance(
        id=f"{seat.name:0<64}"[:64],
        name=f"fleet-{seat.host}-{seat.name}-1",
        state="running",
        image=seat.image,
        image_id="sha256:" + "a" * 64,
        labels=service["labels"],
        argv=tuple(argv),
        gpu_request=tuple(str(g) for g in seat.gpus),
    )
    tokens = int(seat.context * 1.5)
    engine = EngineReport(kv_cache_tokens=tokens, max_model_len=seat.context, weights_gib=15.0)
    return observed_seat(container, engine=engine, gpus=seat.gpus, vram_mib=20 * 1024)


def in_sync(fleet: DesiredFleet, live: Mapping[str, Sequence[str]] | None = None) -> Observation:
    """The fleet as desired/ says; seats a test adds run with the argv it gives in `live`."""
    hosts = {}
    for name, host in fleet.hosts.items():
        seats = tuple(live_seat(fleet, s, (live or {}).get(s.name)) for s in fleet.seats_on(name))
        gpus = tuple(
            ObservedGpu(
                index=g.index,
                uuid=f"GPU-{name}-{g.index}",
                name=g.name,
                memory_total_mib=g.memory // 2**20,
                memory_used_mib=g.memory // 2**20 // 2,
            )
            for g in host.gpus
        )
        models = {
            s.model: ModelInfo(path=s.model, size_bytes=10 * GIB) for s in fleet.seats_on(name)
        }
        hosts[name] = ObservedHost(name=name, gpus=gpus, seats=seats, models=models)
    return Observation(
        observed_at="2026-12-02T00:00:00Z", hosts=hosts, gateway=gateway_in_sync(fleet)
    )


def gateway_in_sync(
    fleet: DesiredFleet,
    text: str = "model_list:\n  - model_name: x\n"
    "    litellm_params: {model: openai/x, api_base: http://x:1/v1}\n",
) -> ObservedGateway:
    assert fleet.gateway is not None
    config_text = render_gateway_config(text, fleet)
    config = parse_gateway_config(config_text)
    probes = {
        e.address: BackendProbe(
            api_base=e.address, answers=True, models=((e.model or "").split("/", 1)[-1],)
        )
        for e in config.entries
        if e.address
    }
    return ObservedGateway(
        host=fleet.gateway.host,
        config_path=fleet.gateway.config_path,
        config_text=config_text,
        config=config,
        probes=probes,
    )
