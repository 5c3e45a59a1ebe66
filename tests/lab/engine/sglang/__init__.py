"""The SGLang stand-in: `python3 -m sglang.launch_server` as SGLang 0.5.23 starts and serves.

`main` parses SGLang's flags, prints its start-up log (`startlog`), starts one scheduler
child per tensor-parallel rank (`scheduler`: holds the GPU memory nvidia-smi lists, as
SGLang's `sglang::scheduler_TP<n>` processes do) and serves SGLang's HTTP routes
(`server`). The formats follow SGLang's source: tests/corpus/sglang-logs/SOURCES.md.
"""
