"""`nvidia-smi` for a simulated host: the default table, -L, --query-gpu and
--query-compute-apps in the formats recorded in tests/corpus/nvidia-smi.

Run by the host's launcher (<lab>/hosts/<host>/bin/nvidia-smi) with FLEET_LAB_GPU_DIR
set. Memory used is what the engines on the host recorded (weights + KV + overhead);
pids are the host pids of the engine child processes that hold the memory.
"""

from __future__ import annotations

import os
import sys
import time

from gpustate import GpuProcess, driver_gone, gpu_processes, read_gpus, used_mib

DRIVER = "580.126.09"
CUDA = "13.0"
GONE = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)
WIDE = "+" + "-" * 89 + "+"
SPLIT = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
UNITS = {"memory": "MiB", "utilization": "%", "power": "W", "clocks": "MHz"}


def bus_id(index: int) -> str:
    """A PCI bus id for a simulated card."""
    return f"00000000:{0x18 + 0x10 * index:02X}:00.0"


def gpu_fields(gpu: dict, procs: list[GpuProcess]) -> dict[str, str]:
    """Every --query-gpu field the stand-in knows, as numbers without units."""
    used = used_mib(procs, gpu["index"])
    busy = used > 0
    return {
        "index": str(gpu["index"]),
        "name": gpu["name"],
        "uuid": gpu["uuid"],
        "serial": f"1{gpu['index']:012d}",
        "pci.bus_id": bus_id(gpu["index"]),
        "driver_version": DRIVER,
        "count": "0",
        "pstate": "P0" if busy else "P8",
        "timestamp": time.strftime("%Y/%m/%d %H:%M:%S.000"),
        "memory.total": str(gpu["memory_mib"]),
        "memory.used": str(used),
        "memory.free": str(gpu["memory_mib"] - used),
        "memory.reserved": "0",
        "utilization.gpu": "0",
        "utilization.memory": "0",
        "temperature.gpu": "35" if busy else "30",
        "power.draw": "80.00" if busy else "20.00",
        "power.limit": "300.00",
        "compute_mode": "Default",
        "persistence_mode": "Enabled",
        "mig.mode.current": "[N/A]",
        "clocks.sm": "1800" if busy else "210",
        "clocks.mem": "9001",
    }


def app_fields(proc: GpuProcess, gpu: dict) -> dict[str, str]:
    """Every --query-compute-apps field the stand-in knows."""
    return {
        "pid": str(proc.pid),
        "process_name": proc.name,
        "used_memory": str(proc.used_mib),
        "used_gpu_memory": str(proc.used_mib),
        "gpu_uuid": gpu["uuid"],
        "gpu_name": gpu["name"],
        "gpu_bus_id": bus_id(gpu["index"]),
        "gpu_serial": f"1{gpu['index']:012d}",
        "timestamp": time.strftime("%Y/%m/%d %H:%M:%S.000"),
    }


def unit_of(field: str) -> str | None:
    """The unit nvidia-smi attaches to a field, if any."""
    if field in ("used_memory", "used_gpu_memory"):
        return "MiB"
    return UNITS.get(field.split(".")[0])


def header(field: str) -> str:
    """CSV header of a field, with its unit as nvidia-smi prints it."""
    name = "used_gpu_memory" if field == "used_memory" else field
    unit = unit_of(field)
    return f"{name} [{unit}]" if unit else name


def value(field: str, raw: str, nounits: bool) -> str:
    """A CSV value, with its unit unless `nounits`."""
    unit = unit_of(field)
    if nounits or not unit or not raw.replace(".", "").isdigit():
        return raw
    return f"{raw} {unit}"


def csv(fields: list[str], rows: list[dict[str, str]], fmt: set[str]) -> int:
    """Print a CSV query answer; exit code 2 on an unknown field, as nvidia-smi."""
    known = rows[0].keys() if rows else None
    for field in fields:
        if known is not None and field not in known:
            print(f'Field "{field}" is not a valid field to query.\n')
            return 2
    if "noheader" not in fmt:
        print(", ".join(header(f) for f in fields))
    for row in rows:
        print(", ".join(value(f, row[f], "nounits" in fmt) for f in fields))
    return 0


def table_gpu_rows(gpu: dict, procs: list[GpuProcess]) -> list[str]:
    """The three table lines of one GPU (580 layout)."""
    f = gpu_fields(gpu, procs)
    name = gpu["name"] if len(gpu["name"]) <= 29 else gpu["name"][:26] + "..."
    power = f"{f['power.draw'].split('.')[0]}W / {f['power.limit'].split('.')[0]:>4}W"
    memory = f"{f['memory.used']:>8}MiB / {f['memory.total']:>6}MiB "
    return [
        f"|{int(f['index']):>4}  {name:<29}  On  |{bus_id(gpu['index']):>19} Off |{'0':>21} |",
        f"| N/A   {f['temperature.gpu']:>2}C    {f['pstate']}{power:>25} |{memory}|"
        f"{f['utilization.gpu']:>7}%      Default |",
        f"|{'':41}|{'':24}|{'N/A':>21} |",
    ]


def table_process_rows(procs: list[GpuProcess]) -> list[str]:
    """The process table lines."""
    if not procs:
        return ["|  No running processes found" + " " * 61 + "|"]
    rows = []
    for p in procs:
        left = f"{p.gpu:>5}   N/A  N/A {p.pid:>15}      C   {p.name[:36]}"
        rows.append("|" + left + f"{p.used_mib}MiB ".rjust(89 - len(left)) + "|")
    return rows


def table(gpus: list[dict], procs: list[GpuProcess]) -> int:
    """The default `nvidia-smi` output."""
    title = f" NVIDIA-SMI {DRIVER}             Driver Version: {DRIVER}     CUDA Version: {CUDA}"
    lines = [
        time.strftime("%a %b %d %H:%M:%S %Y") + "       ",
        WIDE,
        f"|{title:<89}|",
        SPLIT,
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",  # noqa: E501
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",  # noqa: E501
        "|                                         |                        |               MIG M. |",  # noqa: E501
        "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|",
    ]
    for gpu in gpus:
        lines += [*table_gpu_rows(gpu, procs), SPLIT]
    lines += [
        "",
        WIDE,
        "| Processes:" + " " * 78 + "|",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",  # noqa: E501
        "|        ID   ID                                                               Usage      |",  # noqa: E501
        "|" + "=" * 89 + "|",
        *table_process_rows(procs),
        WIDE,
    ]
    print("\n".join(lines))
    return 0


def option(argv: list[str], *names: str) -> str | None:
    """The value of `--name=value` / `-n value`."""
    for i, arg in enumerate(argv):
        for name in names:
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
    return None


def main(argv: list[str]) -> int:
    """Answer one nvidia-smi invocation."""
    gpu_dir = os.environ["FLEET_LAB_GPU_DIR"]
    if driver_gone(gpu_dir):
        print(GONE)
        return 9
    gpus, procs = read_gpus(gpu_dir), gpu_processes(gpu_dir)
    wanted = option(argv, "-i", "--id")
    if wanted is not None:
        ids = wanted.split(",")
        gpus = [g for g in gpus if str(g["index"]) in ids or g["uuid"] in ids]
        procs = [p for p in procs if any(g["index"] == p.gpu for g in gpus)]
    fmt = set((option(argv, "--format") or "").split(","))
    if option(argv, "--query-gpu"):
        return csv(
            option(argv, "--query-gpu").split(","), [gpu_fields(g, procs) for g in gpus], fmt
        )
    if option(argv, "--query-compute-apps"):
        by_index = {g["index"]: g for g in gpus}
        rows = [app_fields(p, by_index[p.gpu]) for p in procs]
        fields = option(argv, "--query-compute-apps").split(",")
        return csv(fields, rows, fmt)
    if "-L" in argv or "--list-gpus" in argv:
        for g in gpus:
            print(f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})")
        return 0
    if argv and not set(argv) <= {"-q"}:
        print("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
        return 2
    return table(gpus, procs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
