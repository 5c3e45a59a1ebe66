"""`python3 -m vllm.entrypoints.openai.api_server`: the entrypoint of older images."""

import sys

from ...cli import api_server_main

if __name__ == "__main__":
    sys.exit(api_server_main())
