"""vLLM's `vllm.entrypoints.openai` package path."""
