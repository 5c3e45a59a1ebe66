"""The lab's stand-in for llama.cpp's `llama-server` (installed as /app/llama-server).

It runs on the image's bare python3 like the vLLM stand-in (standard library only) and
shares its scheduler, tokenizer, HTTP plumbing and GPU bookkeeping: main.py parses
llama-server's command line (args.py), reads the GGUF model's header (gguf.py), sizes
model, KV and compute buffers per device (layout.py), prints llama.cpp's start-up log
(startlog.py) while /health answers 503 `Loading model`, and then serves the OpenAI
API, /props, /slots and /metrics (server.py).
"""
