"""Model directories on a simulated host: real config.json files, sparse placeholder
shards whose sizes stand for the real checkpoints, and sibling .PROVENANCE.txt files.
The catalog and authored files are in tests/lab/models/ (see its README.md).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

MODELS_SRC = Path(__file__).resolve().parent / "models"
GiB = 1 << 30


def catalog() -> dict[str, dict[str, object]]:
    """Every model the lab knows: config source, checkpoint size, shard count."""
    return json.loads((MODELS_SRC / "catalog.json").read_text())


def config_source(ref: str, corpus: Path) -> Path:
    """Resolve `corpus:<file>` / `lab:<file>` to a path."""
    kind, _, name = ref.partition(":")
    base = corpus / "model-configs" if kind == "corpus" else MODELS_SRC
    path = base / name
    if not path.is_file():
        raise FileNotFoundError(f"model config {path} not found (is tests/corpus complete?)")
    return path


def write_shards(model_dir: Path, total: int, shards: int) -> None:
    """Sparse shards adding up to `total` bytes, plus the safetensors index."""
    names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    for i, name in enumerate(names):
        size = total // shards + (total % shards if i == 0 else 0)
        with (model_dir / name).open("wb") as shard:
            os.ftruncate(shard.fileno(), size)
    index = {"metadata": {"total_size": total}, "weight_map": {"lm_head.weight": names[-1]}}
    (model_dir / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))


def write_model(models_dir: Path, name: str, entry: dict[str, object], corpus: Path) -> None:
    """One model directory and its provenance sibling."""
    model_dir = models_dir / name
    shutil.rmtree(model_dir, ignore_errors=True)
    model_dir.mkdir(parents=True)
    shutil.copyfile(config_source(str(entry["config"]), corpus), model_dir / "config.json")
    write_shards(model_dir, int(float(str(entry["weights_gib"])) * GiB), int(str(entry["shards"])))
    provenance = MODELS_SRC / "provenance" / f"{name}.PROVENANCE.txt"
    shutil.copyfile(provenance, models_dir / f"{name}.PROVENANCE.txt")


def populate(models_dir: Path, names: tuple[str, ...], corpus: Path) -> None:
    """Write the named models into a host's models folder."""
    entries = catalog()
    for name in names:
        write_model(models_dir, name, entries[name], corpus)
