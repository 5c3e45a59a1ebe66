"""What the lab simulates: hosts, their GPUs and the models on their disks.

Read by `tests.lab.lab.Lab` (which hosts to bring up) and by the tests (GPU names).
The default set mirrors `desired/hosts/*.yaml` and its nominal addresses; where a lab
actually puts a host depends on the lab's slot (tests/lab/slots.py, `lab.hosts[name]
.address`). `bench_hosts(n)` is the larger set a benchmark asks for. Nothing here starts
a process.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from .slots import HOSTS_PER_SLOT, nominal_octet

SSH_PORT = 2222
GATEWAY_PORT = 4000

RTX_PRO_6000 = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
RTX_3090 = "NVIDIA GeForce RTX 3090"

TOWER_MODELS = (
    "Qwen3.5-27B",
    "TinyLlama-1.1B-Chat-FP8",
    "gemma-3-27b-it",
    "stories42M-embed",
    "stories42M-rerank",
    "Qwen3-32B",
    "Qwen3-30B-A3B-NVFP4",
)
RIG_MODELS = (
    "Llama-3.1-8B-Instruct",
    "qwen3-8b-q4_k_m.gguf",  # llama.cpp seats on a GPU (with its draft model)
    "qwen3-0.6b-q8_0.gguf",
    "not-a-model.gguf",  # a start that fails
)
CPU_MODELS = ("qwen3-0.6b-q4_k_m.gguf", "not-a-model.gguf")
LLAMACPP_TAGS = tuple(
    f"ghcr.io/ggml-org/llama.cpp:{tag}"
    for tag in ("server", "server-b6100", "server-cuda", "server-cuda-b6100")
)  # as tests/lab/image.py builds them
VLLM_TAGS = ("v0.18.0", "v0.11.2", "v0.9.2", "latest")
SGLANG_TAGS = ("lmsysorg/sglang:v0.5.23",)  # as tests/lab/image.py builds it


@dataclass(frozen=True)
class GpuSpec:
    """One simulated GPU: what nvidia-smi reports and what the stand-in engine sees."""

    index: int
    name: str
    memory_mib: int
    uuid: str


@dataclass(frozen=True)
class HostSpec:
    """One simulated host: its nominal address, number, GPUs, hand-over style and models.

    `address` is the host's *nominal* address, the one `desired/` names (127.0.0.N);
    a lab places it at its slot's address (tests.lab.slots: 127.<slot+1>.0.N).
    `number` (0..31) picks the host's network inside its lab's block: bridge and pool.
    """

    name: str
    address: str
    number: int
    gpus: tuple[GpuSpec, ...] = ()
    handover: str = "device_requests"  # or "runtime" (runtime: nvidia + NVIDIA_VISIBLE_DEVICES)
    models: tuple[str, ...] = ()
    gateway: bool = False
    image_tags: tuple[str, ...] = field(default=VLLM_TAGS)

    def __post_init__(self) -> None:
        nominal_octet(self.address)
        if not 0 <= self.number < HOSTS_PER_SLOT:
            raise ValueError(f"{self.name}: host number must be 0..{HOSTS_PER_SLOT - 1}")


def gpu_uuid(host: str, index: int) -> str:
    """A stable, realistic-looking GPU UUID for a simulated card."""
    digest = hashlib.sha256(f"{host}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def make_gpus(host: str, name: str, memory_mib: int, count: int) -> tuple[GpuSpec, ...]:
    """`count` identical simulated GPUs for `host`."""
    return tuple(GpuSpec(i, name, memory_mib, gpu_uuid(host, i)) for i in range(count))


def tower() -> HostSpec:
    """The 4-GPU vLLM host of desired/hosts/tower.yaml."""
    gpus = make_gpus("tower", RTX_PRO_6000, 97887, 4)
    return HostSpec("tower", "127.0.0.11", 1, gpus, "device_requests", TOWER_MODELS)


def rig() -> HostSpec:
    """The consumer-card host of desired/hosts/rig.yaml (nvidia runtime hand-over)."""
    gpus = make_gpus("rig", RTX_3090, 24576, 2)
    return HostSpec(
        "rig",
        "127.0.0.12",
        2,
        gpus,
        "runtime",
        RIG_MODELS,
        image_tags=VLLM_TAGS + LLAMACPP_TAGS + SGLANG_TAGS,
    )


def cpubox() -> HostSpec:
    """A CPU-only machine with a lot of memory that runs a llama.cpp seat."""
    return HostSpec("cpubox", "127.0.0.14", 4, models=CPU_MODELS, image_tags=LLAMACPP_TAGS)


def gateway() -> HostSpec:
    """The GPU-less host that runs the LiteLLM proxy."""
    return HostSpec("gateway", "127.0.0.13", 3, gateway=True, image_tags=())


def default_hosts() -> tuple[HostSpec, ...]:
    """tower, rig and gateway (the hosts `desired/` names), and the CPU-only cpubox."""
    return (tower(), rig(), gateway(), cpubox())


def bench_hosts(gpu_hosts: int) -> tuple[HostSpec, ...]:
    """`gpu_hosts` tower-like hosts bench-1.. (nominally 127.0.0.21..), plus the gateway."""
    if not 1 <= gpu_hosts <= 16:
        raise ValueError(f"gpu_hosts must be between 1 and 16, not {gpu_hosts}")
    hosts = []
    for n in range(1, gpu_hosts + 1):
        name = f"bench-{n}"
        gpus = make_gpus(name, RTX_PRO_6000, 97887, 4)
        hosts.append(HostSpec(name, f"127.0.0.{20 + n}", 10 + n, gpus, models=TOWER_MODELS))
    return (*hosts, gateway())
