"""vLLM's `vllm.entrypoints` package path, for `python3 -m vllm.entrypoints.openai.api_server`."""
