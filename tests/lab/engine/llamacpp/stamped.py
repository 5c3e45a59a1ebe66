"""b11434's own start-up lines: the server's, around the library's (startlog.py).

What the real b11434 prints before the model loads and from its slots to `listening on`
(tests/corpus/llamacpp-logs/b11434_cpu_tiny-llama-4l_*), each with whether it shows only at
`-lv 4` (the build, system info, the drafter's settings, the slots) or already at the
default verbosity 3.
"""

from __future__ import annotations

from .args import ServerArgs
from .startlog import BUILD, slot_lines, srv


def stamped_start_lines(args: ServerArgs) -> list[tuple[str, bool]]:
    """b11434's first lines: (line, shown only at -lv 4)."""
    t = args.threads
    return [
        ("srv  llama_server: initializing ...", False),
        (
            f"cmn  common_param: common_params_print_info: build {BUILD} "
            "with GNU 12.2.0 for Linux x86_64",
            True,
        ),
        (
            f"cmn  common_param: common_params_print_info: verbosity = {args.verbosity} "
            "(adjust with the `-lv N` CLI arg)",
            False,
        ),
        (
            f"cmn  common_param: system_info: n_threads = {t} (n_threads_batch = {t}) / {t} | "
            "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
            "BMI2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | ",
            True,
        ),
        (srv("init", f"using {t} threads for HTTP server"), True),
    ]


def stamped_ready_lines(
    args: ServerArgs, n_ctx_slot: int, unified: bool, drafting: bool, mtp_embd: int = 0
) -> list[tuple[str, bool]]:
    """b11434's lines from the slots to `listening on`: (line, shown only at -lv 4);
    `mtp_embd` (the model's embedding width) when it drafts with its own MTP blocks."""
    unified_text = "true" if unified else "false"
    out = [
        (
            srv(
                "load_model",
                f"initializing, n_slots = {args.parallel}, n_ctx_slot = {n_ctx_slot}, "
                f"kv_unified = '{unified_text}'",
            ),
            False,
        )
    ]
    if mtp_embd:
        out += [
            ("spec common_specu: adding speculative implementation 'draft-mtp'", True),
            (
                f"spec common_specu: - n_max={args.draft_max}, n_min=0, p_min=0.00, "
                f"n_embd={mtp_embd}, backend_sampling=1",
                True,
            ),
            (
                f"spec common_specu: - gpu_layers=-1, cache_k={args.cache_type_k}, "
                f"cache_v={args.cache_type_v}, ctx_tgt=yes, ctx_dft=yes, devices=[default]",
                True,
            ),
            (srv("load_model", "speculative decoding context initialized"), True),
        ]
    elif drafting:
        out += [
            ("spec common_specu: adding speculative implementation 'draft-simple'", True),
            (f"spec common_specu: - n_max={args.draft_max}, n_min=0, p_min=0.000000", True),
            (srv("load_model", "speculative decoding context initialized"), True),
        ]
    else:
        none = "no implementations specified for speculative decoding"
        out.append((f"spec common_specu: {none}", True))
    out += [(line, True) for line in slot_lines(args.parallel, n_ctx_slot)[1:]]
    out += [
        (srv("load_model", "prompt cache is enabled, size limit: 8192 MiB"), True),
        (srv("load_model", "use `--cache-ram 0` to disable the prompt cache"), True),
        ("srv  llama_server: model loaded", False),
        (f"srv  llama_server: listening on http://{args.host}:{args.port}", False),
        (srv("update_slots", "all slots are idle"), True),
    ]
    return out
