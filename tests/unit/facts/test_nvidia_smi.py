"""nvidia-smi parsers on the recorded tables and CSVs, and on compute-apps CSV.

The corpus has no real `--query-compute-apps` CSV (SOURCES.md): the compute-apps cases
below are written from the format FACTS.md §4 documents (header `pid, process_name,
used_gpu_memory [MiB]`, values like `6265 MiB`, `[Not Found]` names, `[N/A]` memory) and
from the noheader/nounits form fleet runs.
"""

from __future__ import annotations

import pytest

from fleet.facts.nvidia_smi import (
    GpuFact,
    GpuProcess,
    NvidiaSmiTable,
    parse_compute_apps,
    parse_gpu_query,
    parse_nvidia_smi_table,
)
from tests.conftest import CORPUS

SMI = CORPUS / "nvidia-smi"

# (file, driver, cuda, number of GPUs, first GPU, processes)
TABLES = [
    (
        "a100-sxm4-40gb_1gpu_driver550_cuda12.4_no-processes.nvidia-smi.txt",
        "550.144.03",
        "12.4",
        1,
        GpuFact(
            index=0,
            name="NVIDIA A100-SXM4-40GB",
            bus_id="00000000:81:00.0",
            memory_used_mib=1,
            memory_total_mib=40960,
        ),
        (),
    ),
    (
        "gh200x4_driver590_cuda13.1_no-processes.nvidia-smi.txt",
        "590.48.01",
        "13.1",
        4,
        GpuFact(
            index=0,
            name="NVIDIA GH200 120GB",
            bus_id="00000009:01:00.0",
            memory_used_mib=3,
            memory_total_mib=97871,
        ),
        (),
    ),
    (
        "h200x8_driver570_cuda12.8_no-processes.nvidia-smi.txt",
        "570.133.20",
        "12.8",
        8,
        GpuFact(
            index=0,
            name="NVIDIA H200",
            bus_id="00000000:8D:00.0",
            memory_used_mib=0,
            memory_total_mib=143771,
        ),
        (),
    ),
    (
        "l40s_1gpu_driver580_cuda13.0_process-list.nvidia-smi.txt",
        "580.126.09",
        "13.0",
        1,
        GpuFact(
            index=0,
            name="NVIDIA L40S",
            bus_id="00000000:8D:00.0",
            memory_used_mib=803,
            memory_total_mib=46068,
        ),
        (
            GpuProcess(
                pid=5997,
                gpu_index=0,
                process_type="C",
                process_name="python",
                used_memory_mib=794,
            ),
        ),
    ),
]


@pytest.mark.parametrize(
    ("name", "driver", "cuda", "count", "first", "processes"),
    TABLES,
    ids=[case[0] for case in TABLES],
)
def test_corpus_table(
    name: str,
    driver: str,
    cuda: str,
    count: int,
    first: GpuFact,
    processes: tuple[GpuProcess, ...],
) -> None:
    table = parse_nvidia_smi_table((SMI / name).read_text())
    assert (table.driver_version, table.cuda_version) == (driver, cuda)
    assert len(table.gpus) == count
    assert table.gpus[0] == first
    assert [gpu.index for gpu in table.gpus] == list(range(count))
    assert table.processes == processes


# (file, number of rows, first row, last row) — these CSVs have headers with units.
CSVS = [
    (
        "h100-nvl_query-gpu-csv_loop_name-pstate-timestamp-util-memory.csv",
        54,
        GpuFact(
            name="NVIDIA H100 NVL",
            timestamp="2026/02/25 10:04:37.416",
            memory_total_mib=95830,
            memory_used_mib=1,
        ),
        GpuFact(
            name="NVIDIA H100 NVL",
            timestamp="2026/02/25 10:05:30.434",
            memory_total_mib=95830,
            memory_used_mib=83510,
        ),
    ),
    (
        "tesla-t4_query-gpu-csv_lms100_timestamp-index-name-memory.csv",
        5,
        GpuFact(
            index=0,
            name="Tesla T4",
            timestamp="2026/09/11 08:21:53.431",
            memory_used_mib=0,
            memory_total_mib=15360,
        ),
        GpuFact(
            index=0,
            name="Tesla T4",
            timestamp="2026/09/11 08:21:53.833",
            memory_used_mib=0,
            memory_total_mib=15360,
        ),
    ),
]
COVERED = frozenset(case[0] for case in TABLES) | frozenset(case[0] for case in CSVS)


@pytest.mark.parametrize(("name", "rows", "first", "last"), CSVS, ids=[case[0] for case in CSVS])
def test_corpus_gpu_query_csv(name: str, rows: int, first: GpuFact, last: GpuFact) -> None:
    gpus = parse_gpu_query((SMI / name).read_text())
    assert len(gpus) == rows
    assert (gpus[0], gpus[-1]) == (first, last)


UUID0 = "GPU-a44622e3-5c1b-4a6e-9f3e-0123456789ab"
UUID1 = "GPU-b55733f4-6d2c-4b7f-8a4f-123456789abc"


def test_gpu_query_noheader_nounits() -> None:
    text = (
        f"0, {UUID0}, NVIDIA H100 80GB HBM3, 81559, 70123\n"
        f"1, {UUID1}, NVIDIA H100 80GB HBM3, 81559, 0\n"
    )
    assert parse_gpu_query(text) == (
        GpuFact(
            index=0,
            uuid=UUID0,
            name="NVIDIA H100 80GB HBM3",
            memory_total_mib=81559,
            memory_used_mib=70123,
        ),
        GpuFact(
            index=1,
            uuid=UUID1,
            name="NVIDIA H100 80GB HBM3",
            memory_total_mib=81559,
            memory_used_mib=0,
        ),
    )


COMPUTE_APPS = [
    (
        "noheader-nounits",
        f"3858903, {UUID0}, 6265\n1328667, {UUID1}, 130004\n",
        (
            GpuProcess(pid=3858903, gpu_uuid=UUID0, used_memory_mib=6265),
            GpuProcess(pid=1328667, gpu_uuid=UUID1, used_memory_mib=130004),
        ),
    ),
    (
        "header-with-units",
        "pid, process_name, used_gpu_memory [MiB]\n3858903, VLLM::EngineCore, 6265 MiB\n",
        (GpuProcess(pid=3858903, process_name="VLLM::EngineCore", used_memory_mib=6265),),
    ),
    (
        "other-namespace-and-wddm",
        f"gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n{UUID0}, 42, [Not Found], [N/A]\n",
        (GpuProcess(pid=42, gpu_uuid=UUID0),),
    ),
    (
        "comma-in-name",
        "pid, process_name, used_gpu_memory [MiB]\n7, python3 serve.py --a 1, --b 2, 100 MiB\n",
        (GpuProcess(pid=7, process_name="python3 serve.py --a 1, --b 2", used_memory_mib=100),),
    ),
    ("no-processes", "", ()),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [case[1:] for case in COMPUTE_APPS],
    ids=[case[0] for case in COMPUTE_APPS],
)
def test_compute_apps(text: str, expected: tuple[GpuProcess, ...]) -> None:
    assert parse_compute_apps(text) == expected


def test_table_without_gi_ci_columns_and_wddm_memory() -> None:
    """The pre-5xx layout (no GI/CI columns) and N/A memory (Windows WDDM)."""
    text = (
        "|    0      1234      C   /usr/bin/python                            1234MiB |\n"
        "|    0     20416    C+G   ...t.LockApp_cw5n1h2txyewy\\LockApp.exe      N/A      |\n"
    )
    assert parse_nvidia_smi_table(text).processes == (
        GpuProcess(
            pid=1234,
            gpu_index=0,
            process_type="C",
            process_name="/usr/bin/python",
            used_memory_mib=1234,
        ),
        GpuProcess(
            pid=20416,
            gpu_index=0,
            process_type="C+G",
            process_name="...t.LockApp_cw5n1h2txyewy\\LockApp.exe",
        ),
    )


@pytest.mark.parametrize("text", ["", "\n", "garbage, , ,\n"], ids=["empty", "blank", "garbage"])
def test_no_facts_is_empty(text: str) -> None:
    assert parse_nvidia_smi_table(text) == NvidiaSmiTable()
    assert parse_compute_apps(text) == ()


def test_every_nvidia_smi_file_in_the_corpus_has_a_case() -> None:
    assert {path.name for path in SMI.iterdir()} == COVERED


# A built sample, not a recorded one: the default table's documented layout (`GPU  Name
# Persistence-M | Bus-Id  Disp.A | Volatile Uncorr. ECC`) as a vGPU guest prints it, with
# no persistence mode in the name cell and N/A for memory usage.
VGPU_TABLE = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 535.129.03   Driver Version: 535.129.03   CUDA Version: 12.2     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GRID A100D-40C           | 00000000:02:00.0 Off |                    0 |
| N/A   N/A    P0    N/A /  N/A |                  N/A |      0%      Default |
+-------------------------------+----------------------+----------------------+
"""


def test_a_vgpu_row_gives_its_gpu_and_says_what_it_lacks() -> None:
    table = parse_nvidia_smi_table(VGPU_TABLE)
    assert table.gpus == (
        GpuFact(
            index=0,
            name="GRID A100D-40C",
            bus_id="00000000:02:00.0",
            missing=("persistence mode", "memory usage"),
        ),
    )
    assert (table.driver_version, table.cuda_version) == ("535.129.03", "12.2")
