"""Each fact alone: its command runs in `sh` with nothing but the script's prelude (so it
can rely on no other fact's shell state), against the recorded output of the tool it
asks (a stub printing a tests/corpus file), and its parser reads back the expected fact.

pyinfra's fact tests, one row each: the fact and its arguments, the raw output (the
corpus file the stub prints, or files laid out on disk), and what the fact must be.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fleet.facts.gpu_facts import GPU_PROCESSES, GPUS
from fleet.facts.host_facts import CPU, JOURNAL, LOCK, MEMORY, MISSING, MODELS
from fleet.facts.script import Fact, FactOutput, script
from fleet.runtimes.compose import COMPOSE_FILE, CONTAINERS

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
TOOLS = ("sh", "cat", "head", "tail", "tr", "du", "cut", "stat", "base64", "sort")
GONE_PID = 2**22 + 4242
T4_CSV = CORPUS / "nvidia-smi" / "tesla-t4_query-gpu-csv_lms100_timestamp-index-name-memory.csv"
L40S_TABLE = CORPUS / "nvidia-smi" / "l40s_1gpu_driver580_cuda13.0_process-list.nvidia-smi.txt"
QWEN3 = CORPUS / "model-configs" / "qwen3-32b_dense.config.json"
COMPOSE = (
    CORPUS / "compose" / "cloud-linuxer_gpt-oss_vllm_runtime-nvidia_env-defaults.docker-compose.yml"
)


def nvidia_smi(query: str, rc: int, table: Path | None = None, apps: str = "") -> str:
    """A stub nvidia-smi: the CSV query prints `query` and exits `rc`; the table view
    prints `table`; the compute-apps query prints `apps`."""
    return (
        '#!/bin/sh\ncase "$*" in\n'
        f"  *--query-gpu*) cat {query}; exit {rc};;\n"
        f"  *--query-compute-apps*) printf '%s\\n' '{apps}';;\n"
        f"  *) cat {table or '/dev/null'};;\nesac\n"
    )


def docker_stub(log: Path) -> str:
    """A stub docker with two containers of one image, one running (as pid GONE_PID) and one
    exited; each call's arguments are appended to `log`."""
    started = "2026-12-01T10:00:00.0Z"
    image = "sha256:" + "c" * 64
    containers = [
        {"Id": cid, "Name": f"/{name}", "Image": image, "State": {"Status": status, "Pid": pid}}
        for cid, name, status, pid in (
            ("a1", "seat-a", "running", GONE_PID),
            ("b2", "seat-b", "exited", 0),
        )
    ]
    images = [{"Id": image, "RepoDigests": ["vllm/vllm-openai@sha256:" + "d" * 64]}]
    return (
        f'#!/bin/sh\necho "$*" >> {log}\ncase "$*" in\n'
        "  ps*) printf 'a1\\nb2\\n';;\n"
        f"  'inspect -f'*) printf '%s\\n' '{image} a1 {GONE_PID} {started}'"
        f" '{image} b2 0 {started}';;\n"
        f"  inspect*) echo '{json.dumps(containers)}';;\n"
        f"  'image inspect'*) echo '{json.dumps(images)}';;\n"
        '  logs*) echo "log of $4 since $3";;\n'
        "esac\n"
    )


def run_alone(entry: str, stubs: dict[str, str], root: Path) -> FactOutput:
    """One fact's entry as the whole script, on a PATH of coreutils and the stubs only."""
    tools = root / "bin"
    tools.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found is not None, tool
        (tools / tool).symlink_to(found)
    for name, text in stubs.items():
        (tools / name).write_text(text)
        (tools / name).chmod(0o755)
    run = subprocess.run(
        ["sh", "-s"],
        input=script([entry]),
        capture_output=True,
        text=True,
        env={"PATH": str(tools)},
    )
    return FactOutput(run.stdout)


def lay_out(root: Path) -> None:
    """A models root with one model directory (a corpus config.json and its lineage file
    beside it), a state directory with a lock and an unfinished apply, a compose file."""
    (root / "models" / "qwen3").mkdir(parents=True)
    shutil.copy(QWEN3, root / "models" / "qwen3" / "config.json")
    (root / "models" / "qwen3.PROVENANCE.txt").write_text("base model: Qwen/Qwen3-32B\n")
    (root / "srv").mkdir()
    (root / "srv" / ".fleet.lock").write_text("ops@laptop apply since 2026-12-03T18:00:00Z\n")
    steps = [
        {"at": "18:00", "step": "begin"},
        {"at": "18:01", "step": "create-seat", "target": "a"},
    ]
    (root / "srv" / ".fleet-journal.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    shutil.copy(COMPOSE, root / "srv" / "compose.yaml")


Arguments = Callable[[Path], tuple[Any, ...]]
Case = tuple[str, Fact[Any], Arguments, dict[str, str], Callable[[Any], Any], Any]
CASES: list[Case] = [
    (
        "gpus-query-csv",
        GPUS,
        lambda root: (),
        {"nvidia-smi": nvidia_smi(str(T4_CSV), 0)},
        lambda fact: (fact.gpus[0].name, fact.gpus[0].memory_total_mib, fact.error),
        ("Tesla T4", 15360, None),
    ),
    (
        "gpus-table-when-the-query-fails",
        GPUS,
        lambda root: (),
        {"nvidia-smi": nvidia_smi("/dev/null", 6, table=L40S_TABLE)},
        lambda fact: ([g.name for g in fact.gpus], [p.pid for p in fact.table_processes]),
        (["NVIDIA L40S"], [5997]),
    ),
    (
        "gpus-without-nvidia-smi",
        GPUS,
        lambda root: (),
        {},
        lambda fact: (fact.gpus, "nvidia-smi: not found" in (fact.error or "")),
        ((), True),
    ),
    (
        "gpu-processes-and-their-cgroups",
        GPU_PROCESSES,
        lambda root: (),
        # a pid above the kernel's PID_MAX_LIMIT (2**22): never a live process, whatever runs
        {"nvidia-smi": nvidia_smi("/dev/null", 0, apps=f"{GONE_PID}, GPU-abc, 794")},
        lambda fact: ([(p.pid, p.gpu_uuid, p.used_memory_mib) for p in fact.listed], fact.cgroups),
        ([(GONE_PID, "GPU-abc", 794)], {GONE_PID: ""}),
    ),
    (
        "models-dir-config-and-lineage",
        MODELS,
        lambda root: (str(root / "models"), []),
        {},
        lambda fact: [
            (Path(p).name, m.config.model_type if m.config else None, m.lineage, m.size_bytes > 0)
            for p, m in fact.dirs.items()
        ],
        [("qwen3", "qwen3", {"base_model": "Qwen/Qwen3-32B"}, True)],
    ),
    (
        "missing-paths",
        MISSING,
        lambda root: ([str(root / "models" / "qwen3"), str(root / "models" / "gone")],),
        {},
        lambda fact: [Path(p).name for p in fact],
        ["gone"],
    ),
    (
        "apply-lock",
        LOCK,
        lambda root: (str(root / "srv"),),
        {},
        lambda fact: fact,
        "ops@laptop apply since 2026-12-03T18:00:00Z",
    ),
    (
        "apply-journal-unfinished",
        JOURNAL,
        lambda root: (str(root / "srv"),),
        {},
        lambda fact: ([s["step"] for s in fact.unfinished], fact.applied),
        (["begin", "create-seat"], None),
    ),
    (
        "compose-file-services",
        COMPOSE_FILE,
        lambda root: (str(root / "srv" / "compose.yaml"),),
        {},
        lambda fact: (sorted(fact), fact["vllm"]["runtime"]),
        (["vllm"], "nvidia"),
    ),
    (
        "containers-without-docker",
        CONTAINERS,
        lambda root: ("",),
        {},
        lambda fact: (fact.instances, fact.error),
        ((), "docker is not answering on this host"),
    ),
    (
        "containers-with-their-images-and-logs",
        CONTAINERS,
        lambda root: ("",),
        {"docker": docker_stub(Path("/dev/null"))},
        lambda fact: [
            (c.name, c.state, c.repo_digests[0][:4], fact.logs[c.id]) for c in fact.instances
        ],
        [
            ("seat-a", "running", "vllm", "log of a1 since 2026-12-01T10:00:00.0Z"),
            ("seat-b", "exited", "vllm", "log of b2 since 2026-12-01T10:00:00.0Z"),
        ],
    ),
    (
        "containers-docker-down",
        CONTAINERS,
        lambda root: ("",),
        {"docker": "#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n"},
        lambda fact: (fact.instances, fact.error),
        ((), "docker is not answering on this host"),
    ),
]


@pytest.mark.parametrize(
    ("fact", "args", "stubs", "project", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_a_fact_alone_reads_what_its_command_printed(
    tmp_path: Path,
    fact: Fact[Any],
    args: Arguments,
    stubs: dict[str, str],
    project: Callable[[Any], Any],
    expected: Any,
) -> None:
    lay_out(tmp_path)
    output = run_alone(fact.entry(*args(tmp_path)), stubs, tmp_path)
    assert output.finished
    assert project(output[fact]) == expected


@pytest.mark.parametrize(
    "fact",
    [GPUS, GPU_PROCESSES, MEMORY, CPU, MODELS, MISSING, LOCK, JOURNAL, COMPOSE_FILE, CONTAINERS],
    ids=lambda fact: fact.name,
)
def test_a_fact_that_printed_nothing_is_its_default(fact: Fact[Any]) -> None:
    assert FactOutput("@@FLEET end\n")[fact] == fact.default


def test_memory_is_read_from_proc_meminfo(tmp_path: Path) -> None:
    kilobytes = {
        line.split(":")[0]: int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()[:3]
    }
    memory = run_alone(MEMORY.entry(), {}, tmp_path)[MEMORY]
    assert memory.total_mib is not None
    assert abs(memory.total_mib - kilobytes["MemTotal"] // 1024) <= 1


def test_the_cpus_amx_is_read_from_proc_cpuinfo(tmp_path: Path) -> None:
    flags = next(
        (
            line
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("flags")
        ),
        None,
    )
    cpu = run_alone(CPU.entry(), {}, tmp_path)[CPU]
    assert cpu.amx is (None if flags is None else "amx_tile" in flags.split())


def test_the_containers_fact_asks_docker_once_per_question(tmp_path: Path) -> None:
    """One inspect of the containers, one short inspect for their images, pids and start
    times, one inspect of the distinct images, one log read per container."""
    calls = tmp_path / "calls"
    run_alone(CONTAINERS.entry(""), {"docker": docker_stub(calls)}, tmp_path)
    asked = [" ".join(line.split()[:2]) for line in calls.read_text().splitlines()]
    once = ["ps -aq", "inspect a1", "inspect -f", "image inspect"]
    assert asked == [*once, "logs --since", "logs --since"]
    assert calls.read_text().splitlines()[3] == "image inspect sha256:" + "c" * 64
