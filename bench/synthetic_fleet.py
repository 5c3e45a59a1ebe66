"""A synthetic fleet of N seats for the benchmarks: its desired/ files and the live fleet
in sync with them, built from the benchmark's own templates and no test data.

Hosts of 8 GPUs with 8 seats each (one GPU a seat), 2 aliases per seat, a gateway config
that routes every alias. The live side is what observe would build of hosts where every
seat runs as desired: each container's argv is written out here as vLLM runs it
(`ARGV`, not fleet's renderer), so that plan compares two independent spellings as it does
on a real fleet. Used by `bench.scale_bench`; nothing here reads `tests/`.
"""

from __future__ import annotations

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
from fleet.runtimes.compose import render_service
from fleet.spec.models import DesiredFleet, Seat

GIB = 1024**3
GPUS_PER_HOST = 8
GPU = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"

FLEET = """\
# Fleet-wide settings and defaults.
name: bench-fleet
concurrency_band: {min: 1.2, max: 2.5}
images:
  floating_tags: [latest, nightly, main]
  digest: ignore
"""

HOST = """\
# GPU host {index}.
ssh:
  alias: {name}
address: 10.{high}.{low}.1
publish_address: 10.{high}.{low}.1
gpus:
{gpus}
compose_dir: /srv/fleet
models_root: /models
"""

SEAT = """\
# Seat {index}: one GPU, a KV budget, MTP drafting.
host: {host}
gpus: [{gpu}]
engine: vllm
image: vllm/vllm-openai:v0.18.0
model: /models/Model-{index}
served_name: {name}
context: 32768
kv_cache_bytes: 10GiB
speculative:
  method: mtp
  num_tokens: 3
port: {port}
aliases: [{name}, {name}-chat]
"""

# What a seat's vLLM process runs with (/proc/<pid>/cmdline), as the image's entrypoint
# `vllm serve` starts it: 10 GiB of KV cache in bytes, the speculative config as JSON.
ARGV = (
    "/usr/bin/python3 /usr/local/bin/vllm serve /models/Model-{index} "
    "--served-model-name {name} --host 0.0.0.0 --port {port} --max-model-len 32768 "
    "--tensor-parallel-size 1 --kv-cache-memory-bytes 10737418240 "
    '--speculative-config {{"method":"mtp","num_speculative_tokens":3}}'
)

GATEWAY = """\
# The LiteLLM proxy.
host: gateway
config_path: /etc/litellm/config.yaml
url: http://10.255.255.1:4000
master_key: ${LITELLM_MASTER_KEY}
restart:
  command: fleet-gateway-restart
provider_prefix: hosted_vllm/
alias_params:
  s00000: {max_tokens: 256, temperature: 0.2}
fallbacks:
  s00000: [s00001]
retired_aliases: [old-alias]
"""

GATEWAY_CONFIG = "model_list:\n  - model_name: x\n    litellm_params: {model: openai/x, api_base: http://x:1/v1}\n"


def desired_files(seats: int) -> dict[str, str]:
    """The text of every desired/ file of a fleet of `seats` seats (at least 2: the
    gateway's fallback names the second)."""
    hosts = -(-seats // GPUS_PER_HOST)
    files = {"fleet.yaml": FLEET, "gateway.yaml": GATEWAY}
    files["hosts/gateway.yaml"] = "ssh:\n  alias: gateway\naddress: 10.255.255.1\ngpus: []\n"
    gpus = "".join(
        f"  - {{index: {i}, name: {GPU}, memory: 97887MiB}}\n" for i in range(GPUS_PER_HOST)
    )
    for h in range(hosts):
        name = f"h{h:04d}"
        files[f"hosts/{name}.yaml"] = HOST.format(
            index=h, name=name, high=h // 250, low=h % 250, gpus=gpus.rstrip("\n")
        )
    for s in range(seats):
        host, gpu = divmod(s, GPUS_PER_HOST)
        files[f"seats/s{s:05d}.yaml"] = SEAT.format(
            index=s, host=f"h{host:04d}", gpu=gpu, name=f"s{s:05d}", port=8000 + gpu
        )
    return files


def live_seat(fleet: DesiredFleet, seat: Seat) -> ObservedSeat:
    """The seat's container running in sync, with the labels compose gives it."""
    index = int(seat.name.removeprefix("s"))
    argv = ARGV.format(index=index, name=seat.name, port=seat.port).split(" ")
    container = Instance(
        id=f"{seat.name:0<64}"[:64],
        name=f"fleet-{seat.host}-{seat.name}-1",
        state="running",
        image=seat.image,
        image_id="sha256:" + "a" * 64,
        labels=render_service(seat, fleet.hosts[seat.host])["labels"],
        argv=tuple(argv),
        gpu_request=tuple(str(g) for g in seat.gpus),
    )
    engine = EngineReport(
        kv_cache_tokens=int(seat.context * 1.5), max_model_len=seat.context, weights_gib=15.0
    )
    return observed_seat(container, engine=engine, gpus=seat.gpus, vram_mib=20 * 1024)


def live_gateway(fleet: DesiredFleet) -> ObservedGateway:
    """The gateway routing every alias, each backend answering with its model."""
    assert fleet.gateway is not None
    config_text = render_gateway_config(GATEWAY_CONFIG, fleet)
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


def in_sync(fleet: DesiredFleet) -> Observation:
    """The live fleet exactly as desired/ says."""
    hosts = {}
    for name, host in fleet.hosts.items():
        on_host = fleet.seats_on(name)
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
        models = {s.model: ModelInfo(path=s.model, size_bytes=10 * GIB) for s in on_host}
        seats = tuple(live_seat(fleet, s) for s in on_host)
        hosts[name] = ObservedHost(name=name, gpus=gpus, seats=seats, models=models)
    return Observation(observed_at="2026-12-02T00:00:00Z", hosts=hosts, gateway=live_gateway(fleet))
