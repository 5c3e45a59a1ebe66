"""vLLM's V1 start-up log, line for line, in the shape of the image's version.

Shapes follow the recorded logs in tests/corpus/vllm-logs: v0.18.0 (banner, process
prefixes `(APIServer pid=N)` / `(EngineCore pid=N)`, format_gib numbers), v0.11.2
(`vLLM API server version`, `(EngineCore_DP0 pid=N)`, four-decimal weights) and
v0.9.2 (no prefixes except `(VllmWorker rank=N pid=N)`). The file:line of each source
is the one those logs print; lines the corpus does not show use plausible numbers.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

GiB = 1 << 30

BANNER = (
    "",
    "       █     █     █▄   ▄█",
    " ▄▄ ▄█ █     █     █ ▀▄▀ █  version {version}",
    "  █▄█▀ █     █     █     █  model   {model}",
    "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀",
    "",
)

SOURCES = {
    "0.18": {
        "banner": "utils.py:297",
        "args": "utils.py:233",
        "arch": "model.py:533",
        "maxlen": "model.py:1582",
        "init": "core.py:103",
        "load": "gpu_model_runner.py:4481",
        "loaded": "default_loader.py:384",
        "weights": "gpu_model_runner.py:4566",
        "kv": "gpu_worker.py:456",
        "reserved": "gpu_worker.py:412",
        "tokens": "kv_cache_utils.py:1316",
        "concurrency": "kv_cache_utils.py:1321",
        "blocksize": "config.py:281",
        "padding": "config.py:312",
        "took": "core.py:281",
        "error": "core.py:1010",
        "serve": "api_server.py:500",
        "routes": "launcher.py:46",
        "dump": "dump_input.py:72",
        "dump_sched": "dump_input.py:79",
        "fatal": "core.py:1012",
        "handler": "async_llm.py:699",
        "stream_error": "serving_chat.py:1201",
        "stats": "loggers.py:259",
        "spec": "metrics.py:120",
    },
    "0.11": {
        "version": "api_server.py:1977",
        "args": "utils.py:253",
        "arch": "model.py:631",
        "maxlen": "model.py:1745",
        "init": "core.py:93",
        "load": "gpu_model_runner.py:3259",
        "loaded": "default_loader.py:314",
        "weights": "gpu_model_runner.py:3338",
        "kv": "gpu_worker.py:359",
        "reserved": "gpu_worker.py:327",
        "tokens": "kv_cache_utils.py:1229",
        "concurrency": "kv_cache_utils.py:1234",
        "took": "core.py:250",
        "error": "core.py:842",
        "serve": "api_server.py:2051",
        "routes": "launcher.py:34",
        "dump": "dump_input.py:69",
        "dump_sched": "dump_input.py:76",
        "fatal": "core.py:710",
        "handler": "async_llm.py:480",
        "stream_error": "serving_chat.py:1145",
        "stats": "loggers.py:207",
        "spec": "metrics.py:96",
    },
    "0.9": {
        "version": "api_server.py:1395",
        "args": "cli_args.py:325",
        "arch": "config.py:841",
        "maxlen": "config.py:1472",
        "init": "core.py:69",
        "load": "gpu_model_runner.py:1770",
        "loaded": "default_loader.py:272",
        "weights": "gpu_model_runner.py:1801",
        "kv": "gpu_worker.py:232",
        "reserved": "gpu_worker.py:232",
        "tokens": "kv_cache_utils.py:716",
        "concurrency": "kv_cache_utils.py:720",
        "took": "core.py:172",
        "error": "core.py:519",
        "serve": "api_server.py:1457",
        "routes": "launcher.py:29",
        "dump": "dump_input.py:69",
        "dump_sched": "dump_input.py:76",
        "fatal": "core.py:521",
        "handler": "async_llm.py:401",
        "stream_error": "serving_chat.py:905",
        "stats": "loggers.py:118",
        "spec": "metrics.py:86",
    },
}
PREFIXES = {
    "0.18": {
        "api": "(APIServer pid={pid}) ",
        "core": "(EngineCore pid={pid}) ",
        "worker": "(Worker_TP{rank} pid={pid}) ",
    },
    "0.11": {
        "api": "(APIServer pid={pid}) ",
        "core": "(EngineCore_DP0 pid={pid}) ",
        "worker": "(Worker_TP{rank} pid={pid}) ",
    },
    "0.9": {"api": "", "core": "", "worker": "(VllmWorker rank={rank} pid={pid}) "},
}


def series(version: str) -> str:
    """The log shape a version prints: '0.18', '0.11' or '0.9'."""
    minor = int(version.split(".")[1])
    return "0.18" if minor >= 17 else "0.11" if minor >= 10 else "0.9"


def format_gib(nbytes: float) -> str:
    """vLLM's format_gib: GiB rounded to two decimals, no padding ('4.0', '29.32')."""
    return f"{round(nbytes / GiB, 2)}"


@dataclass
class Log:
    """Writes vLLM-shaped log lines for one process role ('api', 'core' or 'worker')."""

    version: str
    role: str
    pid: int
    rank: int = 0

    @property
    def prefix(self) -> str:
        """The `(Name pid=N) ` tag of this process in this version."""
        template = PREFIXES[series(self.version)][self.role]
        return template.format(pid=self.pid, rank=self.rank)

    def line(self, level: str, key: str, message: str) -> None:
        """One log line: prefix, level, timestamp, [file:line], message."""
        source = SOURCES[series(self.version)].get(key, "utils.py:1")
        stamp = time.strftime("%m-%d %H:%M:%S")
        text = f"{self.prefix}{level} {stamp} [{source}] {message}".rstrip()
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def info(self, key: str, message: str) -> None:
        """An INFO line."""
        self.line("INFO", key, message)

    def error(self, key: str, message: str) -> None:
        """An ERROR line per line of `message` (tracebacks span lines)."""
        for part in message.splitlines() or [""]:
            self.line("ERROR", key, part)

    def raw(self, message: str) -> None:
        """A line without level and timestamp (tqdm progress, Python tracebacks)."""
        sys.stdout.write(f"{self.prefix}{message}".rstrip() + "\n")
        sys.stdout.flush()


def weights_message(version: str, nbytes: int, seconds: float) -> str:
    """`Model loading took ...` in the version's number format."""
    shape = series(version)
    if shape == "0.18":
        return f"Model loading took {format_gib(nbytes)} GiB memory and {seconds:.6f} seconds"
    memory = " memory" if shape == "0.11" else ""
    return f"Model loading took {nbytes / GiB:.4f} GiB{memory} and {seconds:.6f} seconds"


def kv_available_message(version: str, nbytes: int) -> str:
    """`Available KV cache memory: ...` (the profiled path)."""
    value = format_gib(nbytes) if series(version) == "0.18" else f"{nbytes / GiB:.2f}"
    return f"Available KV cache memory: {value} GiB"


def kv_reserved_message(version: str, free: int, nbytes: int) -> str:
    """The line vLLM prints instead when --kv-cache-memory-bytes pins the budget."""
    fmt = format_gib if series(version) == "0.18" else (lambda b: f"{b / GiB:.2f}")
    return (
        f"Initial free memory {fmt(free)} GiB, reserved {fmt(nbytes)} GiB memory for KV "
        "Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. "
        "This does not respect the gpu_memory_utilization config. Only use "
        "kv_cache_memory_bytes config when you want manual control of KV cache memory "
        "size. If OOM'ed, check the difference of initial free memory between the current "
        "run and the previous run where kv_cache_memory_bytes is suggested and update it "
        "correspondingly."
    )


def version_lines(log: Log, model: str) -> None:
    """The version announcement: ASCII banner (>= 0.17) or `vLLM API server version`."""
    if series(log.version) == "0.18":
        for row in BANNER:
            log.info("banner", row.format(version=log.version, model=model))
    else:
        log.info("version", f"vLLM API server version {log.version}")
