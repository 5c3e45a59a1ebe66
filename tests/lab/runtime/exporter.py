"""A stand-in for a host's metrics exporters (there is no GPU here for the real ones):
`dcgm` serves the DCGM exporter's frame-buffer gauges from the simulated driver state the
host's nvidia-smi reads (the same memory in use, per GPU), `node` a node exporter's load
and memory from this machine's /proc.

    python3 exporter.py dcgm|node ADDRESS PORT HOSTNAME [GPU_DIR]

Names and labels as dcgm-exporter 3.x (`DCGM_FI_DEV_FB_USED{gpu,UUID,device,modelName,
Hostname}` in MiB) and node_exporter 1.x name them. Started and stopped by the lab test
that has the lab's Prometheus scrape them (tests/integration/test_gateway_bluegreen_lab.py).
"""

from __future__ import annotations

import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from gpustate import gpu_processes, read_gpus, used_mib


def dcgm_text(gpu_dir: Path, hostname: str) -> str:
    """DCGM_FI_DEV_FB_USED / _FREE per simulated GPU, in MiB."""
    processes = gpu_processes(gpu_dir)
    lines = [
        "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
        "# TYPE DCGM_FI_DEV_FB_USED gauge",
        "# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).",
        "# TYPE DCGM_FI_DEV_FB_FREE gauge",
    ]
    for gpu in read_gpus(gpu_dir):
        index = int(gpu["index"])
        labels = (
            f'gpu="{index}",UUID="{gpu["uuid"]}",device="nvidia{index}",'
            f'modelName="{gpu["name"]}",Hostname="{hostname}"'
        )
        used = used_mib(processes, index)
        lines.append(f"DCGM_FI_DEV_FB_USED{{{labels}}} {used}")
        lines.append(f"DCGM_FI_DEV_FB_FREE{{{labels}}} {int(gpu['memory_mib']) - used}")
    return "\n".join(lines) + "\n"


def node_text() -> str:
    """node_load1 and node_memory_MemAvailable_bytes of this machine."""
    load = os.getloadavg()[0]
    available = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            available = int(line.split()[1]) * 1024
    return (
        "# HELP node_load1 1m load average.\n# TYPE node_load1 gauge\n"
        f"node_load1 {load}\n"
        "# HELP node_memory_MemAvailable_bytes Memory information field MemAvailable_bytes.\n"
        "# TYPE node_memory_MemAvailable_bytes gauge\n"
        f"node_memory_MemAvailable_bytes {available}\n"
    )


def main(argv: list[str]) -> int:
    kind, address, port, hostname = argv[:4]
    gpu_dir = Path(argv[4]) if len(argv) > 4 else None

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if not self.path.startswith("/metrics"):
                self.send_error(404)
                return
            text = dcgm_text(gpu_dir, hostname) if kind == "dcgm" and gpu_dir else node_text()
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    ThreadingHTTPServer((address, int(port)), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
