"""fleet validate's rules, one mutation of the example fleet per case: message and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.runtimes import validate_fleet
from fleet.spec.load import load_fleet
from fleet.spec.problems import Problem

DESIRED = Path(__file__).resolve().parents[3] / "desired"


def example_files() -> dict[str, str]:
    return {p.relative_to(DESIRED).as_posix(): p.read_text() for p in DESIRED.rglob("*.yaml")}


def problems_after(edits: list[tuple[str, str, str]]) -> list[Problem]:
    files = example_files()
    for rel, old, new in edits:
        if old == "":
            files[rel] = files.get(rel, "") + new
            continue
        assert old in files[rel], f"{old!r} not in {rel}"
        files[rel] = files[rel].replace(old, new, 1)
    return validate_fleet(load_fleet(files))


def test_example_fleet_is_valid() -> None:
    assert [str(p) for p in problems_after([])] == []


def test_a_vllm_seat_on_the_cpu_with_a_kv_budget_in_bytes_is_valid() -> None:
    edits = [
        ("seats/coder.yaml", "gpus: [0]", "gpus: []"),
        ("seats/coder.yaml", "gpu_memory_utilization: 0.02", "kv_cache_bytes: 256MiB"),
    ]
    assert [str(p) for p in problems_after(edits)] == []


CASES = [
    # (id, edits, expected "path:line: severity: message" fragment)
    (
        "yaml-syntax",
        [("seats/sec.yaml", "port: 8025", "port: [8025")],
        "desired/seats/sec.yaml:14: error: YAML syntax error",
    ),
    (
        "unknown-key-suggests",
        [("seats/sec.yaml", "kv_cache_bytes:", "kv_cache_byte:")],
        "desired/seats/sec.yaml:9: error: unknown key 'kv_cache_byte' (did you mean "
        "'kv_cache_bytes'?)",
    ),
    (
        "unknown-nested-key",
        [("seats/sec.yaml", "num_tokens: 3", "num_token: 3")],
        "desired/seats/sec.yaml:12: error: unknown key 'num_token' in speculative (did you mean "
        "'num_tokens'?)",
    ),
    (
        "wrong-type",
        [("seats/sec.yaml", "context: 262144", "context: lots")],
        "desired/seats/sec.yaml:8: error: context: expected a whole number, got 'lots'",
    ),
    (
        "wrong-unit",
        [("seats/sec.yaml", "kv_cache_bytes: 22GiB", "kv_cache_bytes: 22 gigs")],
        "desired/seats/sec.yaml:9: error: kv_cache_bytes: expected a size like 10GiB",
    ),
    (
        "missing-key",
        [("seats/sec.yaml", "port: 8025\n", "")],
        "desired/seats/sec.yaml:1: error: missing required key 'port'",
    ),
    (
        "bench-interval-words",
        [("fleet.yaml", "name: lab-fleet", "reconcile:\n  bench: {interval: 5 minutes}")],
        "desired/fleet.yaml:3: error: reconcile.bench.interval: expected a duration like 30s, "
        "5m or 1h, got '5 minutes'",
    ),
    (
        "bench-interval-zero",
        [("fleet.yaml", "name: lab-fleet", "reconcile:\n  bench:\n    interval: 0s")],
        "desired/fleet.yaml:4: error: reconcile.bench.interval: expected at least 1",
    ),
    (
        "bench-via",
        [("fleet.yaml", "name: lab-fleet", "reconcile:\n  bench: {via: port}")],
        "desired/fleet.yaml:3: error: reconcile.bench.via: expected one of 'seat' or 'gateway'",
    ),
    (
        "bad-engine",
        [("seats/sec.yaml", "engine: vllm", "engine: tgi")],
        "desired/seats/sec.yaml:4: error: engine: expected one of 'vllm', 'llama.cpp' or 'sglang'",
    ),
    (
        "unknown-runtime",
        [("hosts/tower.yaml", "gpus:\n", "runtime: kubernetes\ngpus:\n")],
        "desired/hosts/tower.yaml:6: error: runtime: expected one of 'compose'",
    ),
    (
        "systemd-image-is-an-executable",
        [
            ("hosts/tower.yaml", "gpus:\n", "runtime: systemd\ngpus:\n"),
            ("hosts/tower.yaml", "compose_dir: /srv/fleet", "state_dir: /srv/fleet"),
            ("hosts/tower.yaml", "gpu_handover:", "# gpu_handover:"),
        ],
        "desired/seats/sec.yaml:5: error: on systemd host tower, image is the engine's "
        "executable path, not 'vllm/vllm-openai:v0.18.0'",
    ),
    (
        "compose-key-on-systemd",
        [("hosts/tower.yaml", "gpus:\n", "runtime: systemd\ngpus:\n")],
        "desired/hosts/tower.yaml:12: error: compose_dir: a setting of compose hosts, "
        "not of this systemd host",
    ),
    (
        "host-key-typo",
        [("hosts/tower.yaml", "compose_dir:", "compose_dri:")],
        "desired/hosts/tower.yaml:11: error: compose_dri: unknown key on a compose host "
        "(did you mean 'compose_dir'?)",
    ),
    (
        "name-not-file",
        [("seats/sec.yaml", "host: tower", "name: security\nhost: tower")],
        "desired/seats/sec.yaml:2: error: seat name 'security' must equal the file name 'sec'",
    ),
    (
        "unknown-host",
        [("seats/sec.yaml", "host: tower", "host: towr")],
        "desired/seats/sec.yaml:2: error: host 'towr' is not in desired/hosts",
    ),
    (
        "gpu-missing",
        [("seats/llama8b.yaml", "gpus: [0]", "gpus: [0, 5]")],
        "desired/seats/llama8b.yaml:3: error: GPU 5 does not exist on host rig",
    ),
    (
        "port-taken",
        [("seats/coder.yaml", "port: 8030", "port: 8025")],
        "error: port 8025 on tower is already used by seat",
    ),
    (
        "surge-port-taken",
        [("seats/coder.yaml", "port: 8030", "port: 8030\nsurge_port: 8025")],
        "desired/seats/coder.yaml:12: error: surge port 8025 on tower is already used by seat "
        "'sec'",
    ),
    (
        "default-surge-port-taken",
        [("seats/coder.yaml", "port: 8030", "port: 9025")],
        "desired/seats/sec.yaml:13: error: surge port 9025 on tower (port + 1000; set "
        "surge_port) is already used by seat 'coder'",
    ),
    (
        "seat-named-as-a-second-copy",
        [
            (
                "seats/coder-b.yaml",
                "",
                "host: tower\ngpus: [3]\nengine: vllm\nimage: vllm/vllm-openai:v0.18.0\n"
                "model: /models/TinyLlama-1.1B-Chat-FP8\nserved_name: coder-two\n"
                "context: 2048\ngpu_memory_utilization: 0.02\nport: 8031\n"
                "aliases: [coder-two]\n",
            )
        ],
        "desired/seats/coder-b.yaml:1: error: seat name 'coder-b' is what seat 'coder' on tower "
        "names its second copy while it surges; rename this seat",
    ),
    (
        "surge-port-too-high",
        [("seats/coder.yaml", "port: 8030", "port: 65000")],
        "desired/seats/coder.yaml:11: error: surge port 66000 on tower (port + 1000; set "
        "surge_port) is above 65535",
    ),
    (
        "strategy-unknown",
        [("seats/coder.yaml", "port: 8030", "port: 8030\nstrategy: bluegreen")],
        "desired/seats/coder.yaml:12: error: strategy: expected one of 'auto', 'surge' or "
        "'recreate', got 'bluegreen'",
    ),
    (
        "tp-mismatch",
        [("seats/reason.yaml", "port: 8015", "port: 8015\ntensor_parallel_size: 4")],
        "desired/seats/reason.yaml:11: error: tensor_parallel_size 4 must equal the number of "
        "GPUs (2)",
    ),
    (
        "tp-in-extra-args",
        [("seats/reason.yaml", "port: 8015", "port: 8015\nextra_args: [-tp, '2']")],
        "error: -tp is implied by gpus",
    ),
    (
        "alias-twice",
        [("seats/coder.yaml", "aliases: [coder, autocomplete]", "aliases: [coder, sec]")],
        "error: alias 'sec' is already routed to seat",
    ),
    (
        "params-unknown-alias",
        [("gateway.yaml", "summarizer: {max", "summariser: {max")],
        "desired/gateway.yaml:10: error: alias_params names unknown alias 'summariser'",
    ),
    (
        "fallback-unknown-alias",
        [("gateway.yaml", "sec: [chat]", "sec: [chatt]")],
        "desired/gateway.yaml:12: error: fallbacks name unknown alias 'chatt'",
    ),
    (
        "retired-but-active",
        [("gateway.yaml", "[sec-old, code-legacy]", "[sec-old, coder]")],
        "desired/gateway.yaml:13: error: alias 'coder' is retired but still routed to seat 'coder'",
    ),
    (
        "untagged-image",
        [("seats/sec.yaml", "vllm/vllm-openai:v0.18.0", "vllm/vllm-openai")],
        "desired/seats/sec.yaml:5: error: image 'vllm/vllm-openai' has no tag",
    ),
    (
        "latest-image",
        [("seats/sec.yaml", ":v0.18.0", ":latest")],
        "desired/seats/sec.yaml:5: error: image tag 'latest' floats",
    ),
    (
        "policy-floating-tag",
        [("seats/sec.yaml", ":v0.18.0", ":nightly")],
        "error: image tag 'nightly' floats",
    ),
    (
        "digest-warning",
        [("fleet.yaml", "digest: ignore", "digest: warn")],
        "desired/seats/sec.yaml:5: warning: image 'vllm/vllm-openai:v0.18.0' has no @sha256",
    ),
    (
        "both-kv-kinds",
        [
            (
                "seats/sec.yaml",
                "kv_cache_bytes: 22GiB",
                "kv_cache_bytes: 22GiB\ngpu_memory_utilization: 0.5",
            )
        ],
        "desired/seats/sec.yaml:9: error: give exactly one of kv_cache_bytes and "
        "gpu_memory_utilization",
    ),
    (
        "no-kv-kind",
        [("seats/sec.yaml", "kv_cache_bytes: 22GiB\n", "")],
        "desired/seats/sec.yaml:1: error: give exactly one of kv_cache_bytes",
    ),
    (
        "fractions-over-one",
        [
            ("seats/coder.yaml", "gpus: [0]", "gpus: [1]"),
            ("seats/coder.yaml", "utilization: 0.02", "utilization: 0.3"),
        ],
        "error: gpu_memory_utilization on tower GPU 1 sums to 1.10 > 1.0 (char-rp 0.8, coder 0.3)",
    ),
    (
        "vllm-on-the-cpu-by-fraction",
        [("seats/coder.yaml", "gpus: [0]", "gpus: []")],
        "desired/seats/coder.yaml:9: error: a vLLM seat on the CPU (gpus: []) has no GPU to take "
        "a fraction of: give its KV cache in kv_cache_bytes",
    ),
    (
        "fraction-range",
        [("seats/coder.yaml", "utilization: 0.02", "utilization: 1.5")],
        "desired/seats/coder.yaml:9: error: gpu_memory_utilization must be in (0, 1], got 1.5",
    ),
    (
        "kv-exceeds-gpu",
        [("seats/llama8b.yaml", "gpu_memory_utilization: 0.9", "kv_cache_bytes: 30GiB")],
        "desired/seats/llama8b.yaml:9: error: KV budget 30GiB exceeds GPU 0's memory (24GiB) "
        "on rig",
    ),
    (
        "unknown-method",
        [("seats/flash.yaml", "method: mtp", "method: qwen3_mtp")],
        "desired/seats/flash.yaml:12: error: unknown speculative method 'qwen3_mtp' (did you mean",
    ),
    (
        "zero-k",
        [("seats/flash.yaml", "num_tokens: 3", "num_tokens: 0")],
        "desired/seats/flash.yaml:13: error: num_tokens must be at least 1, got 0",
    ),
    (
        "drafter-missing",
        [("seats/flash.yaml", "method: mtp", "method: eagle3")],
        "desired/seats/flash.yaml:11: error: method 'eagle3' drafts with a separate model",
    ),
    (
        "drafter-extra",
        [("seats/flash.yaml", "num_tokens: 3", "num_tokens: 3\n  draft_model: /m/d")],
        "desired/seats/flash.yaml:14: error: method 'mtp' drafts without a separate model",
    ),
    (
        "band-inverted",
        [("fleet.yaml", "min: 1.2", "min: 3.0")],
        "desired/fleet.yaml:5: error: concurrency band min 3.0 is above max 2.5",
    ),
    (
        "band-negative",
        [("seats/coder.yaml", "{min: 1.2, max: 64}", "{min: -1, max: 64}")],
        "desired/seats/coder.yaml:10: error: concurrency band must be positive",
    ),
    (
        "context-zero",
        [("seats/sec.yaml", "context: 262144", "context: 0")],
        "desired/seats/sec.yaml:8: error: context must be positive, got 0",
    ),
    (
        "secret-key-shape",
        [("seats/sec.yaml", "", "env:\n  OPENAI: sk-proj-abcdefghijklmnop1234\n")],
        "desired/seats/sec.yaml:16: error: this line holds what looks like an OpenAI-style API key",
    ),
    (
        "secret-hf-token",
        [("seats/sec.yaml", "", "env:\n  HF_TOKEN: hf_abcdefghijklmnopqrstuvwx\n")],
        "desired/seats/sec.yaml:16: error: this line holds what looks like a Hugging Face token",
    ),
    (
        "secret-literal-key",
        [("gateway.yaml", "master_key: ${LITELLM_MASTER_KEY}", "master_key: hunter2hunter2")],
        "desired/gateway.yaml:5: error: 'master_key' holds a literal value",
    ),
    (
        "secret-password",
        [("seats/llama8b.yaml", "", "env:\n  DASHBOARD_PASSWORD: swordfish\n")],
        "desired/seats/llama8b.yaml:13: error: 'DASHBOARD_PASSWORD' holds a literal value",
    ),
    (
        "ignored-file",
        [("seat/x.yaml", "", "host: tower\n")],
        "desired/seat/x.yaml:1: warning: ignored",
    ),
]


@pytest.mark.parametrize(("edits", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule_reports_file_line_and_message(
    edits: list[tuple[str, str, str]], expected: str
) -> None:
    lines = [str(p) for p in problems_after(edits)]
    assert any(expected in line for line in lines), "\n".join(lines)


def test_secret_values_are_never_printed() -> None:
    lines = [
        str(p)
        for p in problems_after(
            [
                (
                    "seats/sec.yaml",
                    "",
                    "env:\n  KEY: sk-proj-abcdefghijklmnop1234\n  PASSWORD: swordfish\n",
                )
            ]
        )
    ]
    assert lines and not any("abcdefghijklmnop" in line or "swordfish" in line for line in lines)


@pytest.mark.parametrize(
    "reference",
    ["${OPENAI_API_KEY}", "os.environ/OPENAI_API_KEY"],
    ids=["env-ref", "litellm-env-ref"],
)
def test_secret_references_are_fine(reference: str) -> None:
    lines = [
        str(p)
        for p in problems_after(
            [("gateway.yaml", "master_key: ${LITELLM_MASTER_KEY}", f"master_key: {reference}")]
        )
    ]
    assert lines == []
