"""assemble_host on fact-script output made of real formats (corpus log, docker JSON)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fleet.facts.script import split_sections
from fleet.observed.assemble import assemble_host
from fleet.runtimes import host_script
from fleet.runtimes.compose import COMPOSE
from fleet.spec.models import Host

SEC_ID = "a" * 64
OTHER_ID = "b" * 64
GPU0, GPU1 = "GPU-11111111-2222-3333-4444-555555555555", "GPU-66666666-7777-8888-9999-000000000000"


def container(
    cid: str, name: str, pid: int, labels: dict[str, str], argv: list[str], state: str = "running"
) -> dict[str, object]:
    return {
        "Id": cid,
        "Name": f"/{name}",
        "Path": argv[0],
        "Args": argv[1:],
        "State": {
            "Status": state,
            "Running": state == "running",
            "Pid": pid,
            "ExitCode": 0,
            "StartedAt": "2026-12-01T10:00:00.123Z",
        },
        "RestartCount": 0,
        "Image": "sha256:" + "c" * 64,
        "Config": {
            "Image": "vllm/vllm-openai:v0.11.2",
            "Labels": labels,
            "Env": ["PATH=/usr/bin", "HF_TOKEN=hf_secretsecretsecretsecret"],
        },
        "HostConfig": {
            "DeviceRequests": [{"Driver": "nvidia", "DeviceIDs": ["0"], "Capabilities": [["gpu"]]}]
        },
        "NetworkSettings": {"Ports": {"8050/tcp": [{"HostIp": "127.0.0.12", "HostPort": "8050"}]}},
    }


def fact_output(corpus: Path) -> str:
    log = (corpus / "vllm-logs" / "v0.11.2_v1_qwen2.5-coder-14b_single-gpu.log").read_text()
    config = (corpus / "model-configs" / "llama-3.1-8b-instruct_dense.config.json").read_text()
    argv = [
        "vllm",
        "serve",
        "/models/coder",
        "--served-model-name",
        "coder",
        "--port",
        "8050",
        "--max-model-len",
        "32768",
        "--kv-cache-memory-bytes",
        str(10 * 1024**3),
    ]
    managed = {"fleet.managed": "true", "fleet.seat": "coder", "fleet.spec-hash": "abc"}
    inspect = [
        container(SEC_ID, "fleet-rig-coder-1", 4100, managed, argv),
        container(
            OTHER_ID,
            "jupyter",
            5100,
            {},
            [
                "python3",
                "-m",
                "notebook",
                "--api-key",
                "sk-live-0123456789abcdefgh",
                "--hf-token=hf_abcdefghijklmnopqrstuvwx",
                "--tokenizer",
                "t",
            ],
        ),
    ]
    parts = [
        "@@FLEET gpus",
        f"0, {GPU0}, NVIDIA GeForce RTX 3090, 24576, 21000",
        f"1, {GPU1}, NVIDIA GeForce RTX 3090, 24576, 3000",
        "@@FLEET gpus-rc 0",
        # the engine's CHILD (4177) holds GPU 0, not the container's main pid 4100
        "@@FLEET apps",
        f"4177, {GPU0}, 20480",
        f"5188, {GPU1}, 2900",
        f"9999, {GPU1}, 100",
        "@@FLEET cgroup 4177",
        f"12:memory:/docker/{SEC_ID}",
        f"0::/docker/{SEC_ID}",
        "@@FLEET cgroup 5188",
        f"0::/system.slice/docker-{OTHER_ID}.scope",
        "@@FLEET cgroup 9999",
        "0::/user.slice/user-0.slice/session-3.scope",
        "@@FLEET docker-rc 0",
        "@@FLEET inspect",
        json.dumps(inspect),
        "@@FLEET images",
        json.dumps([{"Id": "sha256:" + "c" * 64, "RepoDigests": []}]),
        f"@@FLEET logs {SEC_ID}",
        log,
        f"@@FLEET logs {OTHER_ID}",
        "serving notebook",
        "@@FLEET model /models/coder",
        "16069425152",
        "@@FLEET config /models/coder",
        config,
        "@@FLEET provenance /models/coder",
        "base model: meta-llama/Llama-3.1-8B-Instruct\n"
        "quantized by: nobody\nNotes kept as free text.",
        "@@FLEET missing /models/absent",
        "@@FLEET end",
    ]
    return "\n".join(parts) + "\n"


def test_sections_keep_their_bodies() -> None:
    sections = split_sections("noise\n@@FLEET a 1\nx\ny\n@@FLEET b\n\n@@FLEET end\n")
    assert sections == [("a", "1", "x\ny"), ("b", "", ""), ("end", "", "")]


def test_gpu_processes_map_to_containers_through_cgroups(corpus: Path) -> None:
    host = assemble_host("rig", fact_output(corpus), COMPOSE)
    owners = {p.pid: p.container_id for p in host.processes}
    assert owners == {4177: SEC_ID, 5188: OTHER_ID, 9999: None}
    seat = host.seat("coder")
    assert seat is not None and seat.managed
    assert seat.gpus == (0,) and seat.vram_mib == 20480
    assert seat.instance.pid == 4100, "the container's main pid is not the GPU process"


def test_seat_carries_argv_and_log_facts(corpus: Path) -> None:
    seat = assemble_host("rig", fact_output(corpus), COMPOSE).seat("coder")
    assert seat is not None and seat.engine is not None
    assert seat.served_names == ("coder",)
    assert seat.kv_cache_bytes == 10 * 1024**3
    assert seat.max_model_len == 32768
    assert seat.engine.version == "0.11.2"
    assert seat.engine.kv_cache_tokens is not None and seat.engine.kv_cache_tokens > 0
    assert seat.instance.gpu_request == ("0",)


def test_unmanaged_container_models_and_missing_paths(corpus: Path) -> None:
    host = assemble_host("rig", fact_output(corpus), COMPOSE)
    names = {(s.name, s.managed) for s in host.seats}
    assert names == {("coder", True), ("jupyter", False)}
    model = host.models["/models/coder"]
    assert (model.architecture, model.num_layers, model.size_bytes) == (
        "LlamaForCausalLM",
        32,
        16069425152,
    )
    assert model.lineage["base_model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert host.missing_paths == ("/models/absent",)


def test_secrets_in_the_environment_and_argv_are_not_kept(corpus: Path) -> None:
    host = assemble_host("rig", fact_output(corpus), COMPOSE)
    facts = host.model_dump_json()
    assert "hf_secret" not in facts and "sk-live" not in facts and "hf_abcdef" not in facts
    notebook = next(s for s in host.seats if s.name == "jupyter")
    assert notebook.instance.argv[3:] == ("--api-key", "***", "--hf-token=***", "--tokenizer", "t")


def test_nvidia_smi_failure_is_a_host_fact_not_a_crash() -> None:
    text = (
        "@@FLEET gpus\nNVIDIA-SMI has failed because it couldn't communicate with the "
        "NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
        "\n@@FLEET gpus-rc 9\n@@FLEET apps\n\n@@FLEET docker-rc 0\n@@FLEET end\n"
    )
    host = assemble_host("tower", text, COMPOSE)
    assert host.gpus == () and host.gpu_error is not None
    assert host.gpu_error.startswith("NVIDIA-SMI has failed")


def test_cut_output_is_unreachable_not_half_facts() -> None:
    host = assemble_host("tower", "@@FLEET gpus\n0, GPU-1, X, 1, 1\n", COMPOSE)
    assert not host.reachable and "did not finish" in (host.error or "")


def test_the_live_cmdline_wins_over_what_docker_was_asked(corpus: Path) -> None:
    """A wrapper entrypoint that dropped --kv-cache-memory-bytes is seen for what it is."""
    live = "\n".join(
        [
            "python3",
            "/usr/bin/vllm",
            "serve",
            "/models/coder",
            "--served-model-name",
            "coder",
            "--port",
            "8050",
        ]
    )
    output = fact_output(corpus).replace(
        f"@@FLEET logs {SEC_ID}", f"@@FLEET cmdline {SEC_ID}\n{live}\n@@FLEET logs {SEC_ID}"
    )
    seat = assemble_host("rig", output, COMPOSE).seat("coder")
    assert seat is not None
    assert seat.kv_cache_bytes is None and seat.max_model_len is None
    assert seat.served_names == ("coder",) and seat.model == "/models/coder"


def test_an_interrupted_apply_and_a_held_lock_are_reported(corpus: Path) -> None:
    journal = "\n".join(
        [
            '{"at": "T1", "step": "begin", "summary": "1 to create"}',
            '{"at": "T2", "step": "finished"}',
            '{"at": "T3", "step": "begin", "summary": "2 to create"}',
            '{"at": "T4", "step": "create-seat", "target": "coder"}',
        ]
    )
    output = fact_output(corpus).replace(
        "@@FLEET end", f"@@FLEET lock\nops@laptop pid 7\n@@FLEET journal\n{journal}\n@@FLEET end"
    )
    host = assemble_host("rig", output, COMPOSE)
    assert host.lock == "ops@laptop pid 7"
    assert host.interrupted == ("T3 begin", "T4 create-seat coder")


def test_gpus_from_the_table_view_when_the_query_fails(corpus: Path) -> None:
    """A driver whose nvidia-smi refuses the query still shows its GPUs in the table."""
    table = corpus / "nvidia-smi" / "l40s_1gpu_driver580_cuda13.0_process-list.nvidia-smi.txt"
    output = "\n".join(
        [
            "@@FLEET gpus",
            'Field "memory.used" is not a valid field to query.',
            "@@FLEET gpus-rc 2",
            "@@FLEET gpu-table",
            table.read_text(),
            "@@FLEET apps",
            "",
            "@@FLEET docker-rc 0",
            "@@FLEET end",
        ]
    )
    host = assemble_host("lone", output, COMPOSE)
    assert host.gpu_error is None
    assert [(g.index, g.name, g.memory_total_mib, g.memory_used_mib) for g in host.gpus] == [
        (0, "NVIDIA L40S", 46068, 803)
    ]
    assert [p.gpu_index for p in host.processes] and all(p.gpu_index == 0 for p in host.processes)


def test_a_failed_query_without_a_table_is_a_gpu_error() -> None:
    output = "@@FLEET gpus\nNVIDIA-SMI has failed\n@@FLEET gpus-rc 9\n@@FLEET end\n"
    host = assemble_host("lone", output, COMPOSE)
    assert host.gpus == () and host.gpu_error == "NVIDIA-SMI has failed"


def test_a_managed_seat_carries_its_service_from_the_hosts_compose_file(corpus: Path) -> None:
    compose = "name: fleet-rig\nservices:\n  coder:\n    environment: {MODE: a}\n  other: {}\n"
    output = fact_output(corpus).replace("@@FLEET end", f"@@FLEET compose\n{compose}@@FLEET end")
    seats = {s.name: s for s in assemble_host("rig", output, COMPOSE).seats}
    assert seats["coder"].definition == {"environment": {"MODE": "a"}}
    assert seats["jupyter"].definition is None  # not fleet's: its compose file is not ours


def test_gguf_models_and_host_memory_are_read(tmp_path: Path) -> None:
    import base64

    import gguf
    import numpy as np

    path = tmp_path / "m.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(32)
    writer.add_context_length(8192)
    writer.add_file_type(15)
    writer.add_tensor("t", np.zeros((2, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    head = base64.b64encode(path.read_bytes()).decode()
    output = (
        "@@FLEET gpus-rc 127\n@@FLEET docker-rc 0\n"
        "@@FLEET meminfo\nMemTotal:       65536000 kB\nMemFree:  1 kB\n"
        "MemAvailable:   61440000 kB\n"
        f"@@FLEET gguf /models/m.gguf\n{path.stat().st_size}\n{head}\n@@FLEET end\n"
    )
    host = assemble_host("apu", output, COMPOSE)
    assert (host.memory_total_mib, host.memory_available_mib) == (64000, 60000)
    model = host.models["/models/m.gguf"]
    assert (model.architecture, model.num_layers, model.max_position_embeddings) == (
        "llama",
        32,
        8192,
    )
    assert (model.quantization, model.size_bytes) == ("Q4_K_M", path.stat().st_size)


def test_the_fact_script_reads_a_gguf_file_and_its_lineage_beside_it(tmp_path: Path) -> None:
    """The real script under sh, on a models folder of one GGUF file and its provenance
    file; no docker and no nvidia-smi on its PATH (their sections say so)."""
    import subprocess

    import gguf
    import numpy as np

    models = tmp_path / "models"
    models.mkdir()
    writer = gguf.GGUFWriter(str(models / "m.gguf"), "qwen3")
    writer.add_block_count(28)
    writer.add_tensor("t", np.zeros((2, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    (models / "m.gguf.PROVENANCE.txt").write_text(
        "base model: Qwen/Qwen3-0.6B\nquantized by: llama-quantize Q4_K_M\n"
    )
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("sh", "cat", "head", "tail", "tr", "du", "cut", "stat", "base64", "sort"):
        found = shutil.which(tool)
        assert found is not None, tool
        (tools / tool).symlink_to(found)
    spec = Host.model_validate(
        {
            "name": "apu",
            "ssh": {"address": "127.0.0.1"},
            "address": "127.0.0.1",
            "models_root": str(models),
            "compose_dir": str(tmp_path / "srv"),
        }
    )
    script = host_script(spec, [str(models / "m.gguf")])
    run = subprocess.run(
        ["sh", "-s"], input=script, capture_output=True, text=True, env={"PATH": str(tools)}
    )
    host = assemble_host("apu", run.stdout, COMPOSE)
    model = host.models[str(models / "m.gguf")]
    assert (model.architecture, model.num_layers) == ("qwen3", 28)
    assert model.lineage["base_model"] == "Qwen/Qwen3-0.6B"
    assert host.gpu_error and host.runtime_error
