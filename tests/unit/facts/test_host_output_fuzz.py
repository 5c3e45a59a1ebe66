"""Whatever a host prints in any section of its fact script, fleet reads facts or findings
from it: random text, stray bytes, forged section markers and fragments of real formats in
every section, under both runtimes, through assemble, findings and plan (with --prune),
never an exception and never more than a few seconds."""

from __future__ import annotations

import contextlib
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet.errors import GatewayError
from fleet.facts.script import marker
from fleet.gateways.litellm.config import parse_gateway_config
from fleet.observed.assemble import assemble_host
from fleet.observed.findings import find_issues
from fleet.observed.models import Observation
from fleet.plan.plan import make_plan
from fleet.runtimes.compose import COMPOSE
from fleet.runtimes.systemd import SYSTEMD
from tests.unit.render.test_compose import example

BOUNDARY = "b0a7d3"
ID = "d" * 64
ARGS = [
    *("", ID, "4177", "fleet-flash.service", "/models/Qwen3-32B", "/models/.x.partial", "0"),
    *(
        "/models/.x.partial.Ab3dE6gH9j",
        "%2f6d6f64656c732f61",
        "%zz",
        "%",
    ),  # hex as `mark` prints it
]
SECTIONS = [
    "gpus", "gpus-rc", "gpu-table", "apps", "cgroup", "docker-rc", "inspect", "images",
    "cmdline", "logs", "compose", "model", "config", "provenance", "gguf", "missing",
    "meminfo", "lock", "journal", "files", "partial-dir", "df", "source", "source-rc",
    "partial", "systemd-rc", "unit", "unit-file", "end",
]  # fmt: skip
FRAGMENTS = [
    "0, GPU-1, NVIDIA H100, 81559, 1024",
    "4177, GPU-1, 20480",
    "0::/system.slice/docker-" + ID + ".scope",
    '[{"Id": "' + ID + '", "Config": {"Labels": {"fleet.seat": "flash", "fleet.managed": '
    '"true"}}, "State": {"Running": true, "Pid": 4177}}]',
    "vllm\nserve\n/models/Qwen3-32B\n--port\n8026",
    "GPU KV cache size: 98,304 tokens",
    "llama_kv_cache: size = 448.00 MiB ( 4096 cells, 28 layers, 1/1 seqs), K (f16): 1 MiB",
    '{"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 64}',
    "MemTotal: 263859748 kB",
    "Id=fleet-flash.service\nMainPID=4177\nActiveState=active",
    "ExecStart=/usr/bin/llama-server --port 8072\n[Service]",
    '{"at": "2026-12-01T10:00:00Z", "step": "begin"}',
    "config.json\t663\t1.0\t2.0",
    "663\t1.0\t2.0\tconfig.json\x00x\n1\t0\t0\tmodel.safetensors\x00",
    "vllm\x00serve\x00/models/Qwen3-32B\x00--port\x008026\x00",
    "/dev/x 100 1 99 1% /models",
    "@@FLEET inspect",
    f"@@FLEET-{BOUNDARY}x lock",
]
BODY = st.one_of(
    st.text(max_size=200),
    st.sampled_from(FRAGMENTS),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", errors="replace")),
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=40), max_size=6).map("\n".join),
)
PART = st.tuples(st.sampled_from(SECTIONS), st.sampled_from(ARGS) | st.text(max_size=20), BODY)
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
DESIRED = example()


def output(parts: list[tuple[str, str, str]], finished: bool) -> str:
    mark = marker(BOUNDARY)
    text = "".join(
        f"\n{mark}{kind} {arg.splitlines()[0] if arg else ''}\n{body}\n"
        for kind, arg, body in parts
    )
    return text + (f"\n{mark}end\n" if finished else "")


@FUZZ
@given(st.lists(PART, max_size=12), st.booleans(), st.sampled_from([COMPOSE, SYSTEMD]))
def test_any_host_output_gives_facts_findings_and_a_plan(
    parts: list[tuple[str, str, str]], finished: bool, runtime: object
) -> None:
    start = time.perf_counter()
    host = assemble_host("tower", output(parts, finished), runtime, BOUNDARY)  # type: ignore[arg-type]
    observation = Observation(observed_at="2026-12-01T10:00:00Z", hosts={"tower": host})
    find_issues(DESIRED, observation)
    plan = make_plan(DESIRED, observation, prune=True)
    removed = [a.target for a in plan.actions if a.kind.value == "remove-seat"]
    assert all(
        name.replace("-", "").replace("_", "").replace(".", "").isalnum() for name in removed
    )
    assert time.perf_counter() - start < 5.0


YAML_PIECES = [
    "model_list:", "- model_name: a", "  litellm_params:", "    model: openai/a",
    "    api_base: http://10.0.0.1:8026/v1", "  model_info: {id: 'fleet:flash:a'}",
    "router_settings:", "  fallbacks: [{a: [b]}]", "  fallbacks: 5", "x: &a [1, 2]",
    "y: [*a, *a]", "  litellm_params: abc", "- model_name: {b: 1}", "[[[[", "? [a]",
    "!!python/object:x",
]  # fmt: skip
CONFIG = st.lists(st.sampled_from(YAML_PIECES) | st.text(max_size=20), max_size=12).map("\n".join)


@FUZZ
@given(CONFIG)
def test_any_gateway_config_text_is_a_config_or_a_gateway_error(text: str) -> None:
    with contextlib.suppress(GatewayError):
        parse_gateway_config(text)
