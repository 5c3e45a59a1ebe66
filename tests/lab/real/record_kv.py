"""Record the real vLLM's KV-cache figures on tiny models of every attention family.

    .venv/bin/python -m tests.lab.real.record_kv [CASE ...]   # all cases when none named

For each case of CASES: write the family's tiny random-weight model once
(`make_tiny_family.py`, with the vLLM venv's python, into the lab cache), start the lab's
real vLLM (the CPU build, `tests.lab.real.vllm`) on it as a plain process with the fixed
BUDGET (`--kv-cache-memory-bytes`), `--max-model-len 4096`, `--enforce-eager` (no compiled
graphs; the KV figures do not depend on it) and the case's flags, wait for `Application
startup complete` (or its exit), stop it, and keep its start-up log and the model's
config.json in tests/corpus/vllm-cpu-kv/ (`<case>.log`, `<family>.config.json`), with
`cases.json` naming each case's family and flags and whether it started (a case that
did not keeps the log of why). One engine at a time: each start takes
30-70 s of CPU and about 3 GB of memory. The same models, flags and budget every run: the
figures the engine logs are the same (its timestamps and pids are not).

The offline test (tests/unit/facts/test_kv_real_cpu.py) holds fleet's estimate to every
recording; tests/integration/test_kv_contract_lab.py starts two of them again and holds
the recording to the live engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.lab.real import CACHE
from tests.lab.real import vllm as real_vllm

HERE = Path(__file__).resolve().parent
MAKER = HERE / "make_tiny_family.py"
CORPUS = HERE.parents[1] / "corpus" / "vllm-cpu-kv"
BUDGET = 256 * 1024**2
CONTEXT = 4096
START_TIMEOUT = 900
READY = "Application startup complete"
NGRAM = '{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3}'

# case -> (family, flags beyond the common ones)
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "qwen3": ("qwen3", ()),
    "qwen3_fp8-kv": ("qwen3", ("--kv-cache-dtype", "fp8")),
    "deepseek_v2": ("deepseek_v2", ()),
    # the reference CPU MLA backend, as a CPU without AMX runs it (platforms/cpu.py)
    "deepseek_v2_cpu-mla": ("deepseek_v2", ("--attention-backend", "CPU_MLA")),
    "mistral": ("mistral", ()),
    "mistral_fp8-kv": ("mistral", ("--kv-cache-dtype", "fp8")),
    "gemma3_text": ("gemma3_text", ()),
    "gemma3_text_batched-1024": ("gemma3_text", ("--max-num-batched-tokens", "1024")),
    "gemma2": ("gemma2", ()),
    "gemma2_no-prefix-caching": ("gemma2", ("--no-enable-prefix-caching",)),
    "gpt_oss": ("gpt_oss", ()),
    "granitemoehybrid": ("granitemoehybrid", ()),
    "granitemoehybrid_no-prefix-caching": ("granitemoehybrid", ("--no-enable-prefix-caching",)),
    "qwen3_next": ("qwen3_next", ()),
    "qwen3_next_ngram-k2": ("qwen3_next", ("--speculative-config", NGRAM)),
    "nemotron_h": ("nemotron_h", ()),
}


def model_dir(family: str) -> Path:
    """The family's tiny model in the lab cache, written on first use (the same bytes)."""
    digest = hashlib.sha256()
    for part in (MAKER, real_vllm.MAKER, real_vllm.INSTALLED):
        digest.update(hashlib.sha256(part.read_bytes()).digest())
    target = CACHE / f"tiny-{family.replace('_', '-')}-{digest.hexdigest()[:12]}"
    if (target / "model.safetensors").exists():
        return target
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(
        [str(real_vllm.python()), str(MAKER), family, str(tmp)],
        env=real_vllm.serve_env(),
        check=True,
        capture_output=True,
        timeout=900,
    )
    try:
        tmp.rename(target)
    except OSError:  # another process wrote it first: same bytes
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def argv(model: Path, family: str, flags: tuple[str, ...], port: int) -> list[str]:
    """The engine's command line: the common flags, then the case's."""
    return [
        str(real_vllm.python()),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        f"tiny-{family}",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        str(CONTEXT),
        "--kv-cache-memory-bytes",
        str(BUDGET),
        *real_vllm.SEAT_ARGS,
        *flags,
    ]


def start(
    family: str, flags: tuple[str, ...], log: Path, *, one_process: bool = False
) -> tuple[bool, float]:
    """Start the engine, wait until it is ready or gone, stop it; (ready, seconds).

    `one_process` runs the engine core and its worker in the API server's process (on the
    CPU, vLLM keeps its one-process executor then, platforms/cpu.py): torch and vLLM are
    imported once, not three times, ~15 s of CPU a start instead of ~20 on an idle
    machine. The KV figures are the engine core's and come out the same (the lab's
    contract test starts so and holds them to recordings made with three processes)."""
    model = model_dir(family)
    began = time.monotonic()
    env = real_vllm.serve_env()
    if one_process:
        env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    with log.open("w") as out:
        proc = subprocess.Popen(
            argv(model, family, flags, free_port()),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            ready = _wait(proc, log)
        finally:
            _stop(proc)
    return ready, time.monotonic() - began


def _wait(proc: subprocess.Popen[bytes], log: Path) -> bool:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if READY in log.read_text(errors="replace"):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(1)
    return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the engine's process group (its engine core and worker), then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def record(case: str) -> str:
    """Run one case into the corpus; a line saying how it went."""
    family, flags = CASES[case]
    CORPUS.mkdir(parents=True, exist_ok=True)
    log = CORPUS / f"{case}.log"
    ready, seconds = start(family, flags, log)
    shutil.copyfile(model_dir(family) / "config.json", CORPUS / f"{family}.config.json")
    return f"{case}: {'ready' if ready else 'did not start'} after {seconds:.0f} s"


def write_cases() -> None:
    """cases.json: each case's family (its config) and flags, as the tests read them."""
    cases = {
        case: {"config": f"{family}.config.json", "flags": list(flags), "started": _started(case)}
        for case, (family, flags) in CASES.items()
    }
    common = ["--max-model-len", str(CONTEXT), "--kv-cache-memory-bytes", str(BUDGET)]
    data = {"common_flags": [*common, *real_vllm.SEAT_ARGS], "cases": cases}
    (CORPUS / "cases.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _started(case: str) -> bool:
    """Whether the case's recorded log reached the KV cache line (else it says why not)."""
    log = CORPUS / f"{case}.log"
    return log.exists() and "KV cache size:" in log.read_text(errors="replace")


def main(names: list[str]) -> int:
    real_vllm_installed = real_vllm.INSTALLED.exists()
    if not real_vllm_installed:
        print(f"the real vLLM is not installed at {real_vllm.INSTALLED}", file=sys.stderr)
        return 1
    unknown = [name for name in names if name not in CASES]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    for case in names or list(CASES):
        print(record(case), flush=True)
    write_cases()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
