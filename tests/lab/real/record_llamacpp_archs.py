"""Record the real llama-server b11434's start-up logs on the tiny gemma3 and qwen35moe
models (`tests.lab.real.tinyarchs`) into tests/corpus/llamacpp-logs/.

    .venv/bin/python -m tests.lab.real.record_llamacpp_archs [OUT_DIR]

Each case is one start at `-lv 4` (what fleet renders) with `-nr`, stopped with SIGTERM
once `/health` answers (a start that must fail: once it exits). The logs are the oracle
the llama-server stand-in is held to (tests/unit/lab_engine/test_llamacpp_contract.py):
an iswa model's two caches, a hybrid's cache over its attention layers only, and the
lines of drafting with the model's own MTP block.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.lab.real import llamacpp, tinyarchs

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "llamacpp-logs"
MTP = ("--spec-type", "draft-mtp", "--spec-draft-n-max", "2")
# file stem -> (model, flags after -m MODEL, whether it becomes healthy)
CASES: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "b11434_cpu_tiny-gemma3_lv4_c8192_iswa": (
        "tiny-gemma3.gguf",
        ("-c", "8192", "-np", "1"),
        True,
    ),
    "b11434_cpu_tiny-gemma3_lv4_c8192_np2_ub128_iswa": (
        "tiny-gemma3.gguf",
        ("-c", "8192", "-np", "2", "-ub", "128"),
        True,
    ),
    "b11434_cpu_tiny-qwen35moe_lv4_c8192_np2_hybrid": (
        "tiny-qwen35moe.gguf",
        ("-c", "8192", "-np", "2"),
        True,
    ),
    "b11434_cpu_tiny-qwen35moe-mtp_lv4_c8192_np2_draft-mtp": (
        "tiny-qwen35moe-mtp.gguf",
        ("-c", "8192", "-np", "2", *MTP),
        True,
    ),
    "b11434_cpu_tiny-qwen35moe_lv4_draft-mtp_no-mtp-layers": (
        "tiny-qwen35moe.gguf",
        ("-c", "8192", "-np", "2", *MTP),
        False,
    ),
}


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def record(stem: str, out_dir: Path) -> Path:
    """Run one case and write its whole output to OUT_DIR/<stem>.log."""
    name, flags, healthy = CASES[stem]
    log = out_dir / f"{stem}.log"
    argv = ["-m", str(tinyarchs.cached(name)), *llamacpp.SEAT_ARGS, "-nr", *flags]
    if healthy:
        with llamacpp.serve(free_port(), log, *argv):
            pass
        return log
    with log.open("wb") as out:
        command = [str(llamacpp.binary()), "--host", "127.0.0.1", "--port", str(free_port())]
        subprocess.run([*command, *argv], stdout=out, stderr=subprocess.STDOUT, timeout=60)
    return log


def main(argv: list[str]) -> int:
    """Record every case."""
    out_dir = Path(argv[0]) if argv else CORPUS
    for stem in CASES:
        sys.stdout.write(f"{record(stem, out_dir)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
