"""The lab: simulated GPU hosts on loopback with real Docker engines, sshd, compose v2
and a LiteLLM proxy. `Lab` is the API (tests/lab/README.md); `python -m tests.lab
up|down|status` is the command line; tests/lab/fixtures.py has the pytest fixture.
"""

from .hosts import LabHost
from .lab import Lab
from .procs import LabError
from .spec import GpuSpec, HostSpec, bench_hosts, default_hosts

__all__ = ["GpuSpec", "HostSpec", "Lab", "LabError", "LabHost", "bench_hosts", "default_hosts"]
