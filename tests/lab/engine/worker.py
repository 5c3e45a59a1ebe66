"""`python3 -m vllm.worker`: one tensor-parallel worker (see enginecore.worker_main)."""

import sys

from .enginecore import worker_main

if __name__ == "__main__":
    sys.exit(worker_main())
