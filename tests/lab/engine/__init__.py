"""The lab's stand-in for vLLM, installed as the package `vllm` inside the engine image.

It runs with the image's bare python3 (standard library only; `fleet` is not there):
`vllm serve ...` (cli.py) parses vLLM's command line, reads the model's config.json,
prints vLLM's V1 start-up log for the image's version (logfmt.py), runs the engine in
a child process as vLLM does (core.py) and serves the OpenAI API (server.py).
The version comes from the image: ENV FLEET_LAB_VLLM_VERSION. Requests are scheduled
and timed by scheduler.py, which the llama-server stand-in (llamacpp/, installed as
/app/llama-server) shares with it, as it shares tokens.py, httpbase.py and gpu.py.
"""
