"""The example fleets on the lab: what pointing a copy of one at the lab changes.

`python -m tests.lab rewrite-desired DIR` calls `point_at_lab(lab, DIR)`. desired/ (the
bundled example, written for the lab's nominal addresses 127.0.0.11..) gets this lab's
addresses. The llama.cpp example (examples/llamacpp-fleet/desired, `name:
llamacpp-fleet`), written for a LAN, runs on the lab's systemd hosts (`up --systemd`) and
its gateway: each host's address becomes that of the lab's host of the same name, the
gateway restarts its proxy with the lab's `fleet-gateway-restart` (provider `hosted_vllm/`,
the lab's two stale aliases retired, as desired/ does), and the CPU seat `big` serves
qwen3-8b instead of the 35B Q8_0 file (36.9 GB) this machine has no memory for.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from . import slots
from .procs import LabError

if TYPE_CHECKING:
    from .layout import LabLayout

LLAMACPP = "llamacpp-fleet"
LLAMACPP_EDITS = {
    "gateway.yaml": (
        ("command: systemctl restart litellm", "command: fleet-gateway-restart"),
        # LiteLLM's openai/ provider wants an API key, which the lab's proxy does not hold
        ("provider_prefix: openai/", "provider_prefix: hosted_vllm/"),
        # the lab gateway's hand-kept config routes two aliases to seats long gone
        ("fallbacks:", "retired_aliases: [sec-old, code-legacy]\nfallbacks:"),
    ),
    "seats/big.yaml": (("qwen3.5-35b-a3b-q8_0.gguf", "qwen3-8b-q4_k_m.gguf"),),
}
NAME = re.compile(r"^name:\s*(\S+)", re.MULTILINE)
ADDRESS = re.compile(r"^address:\s*(\S+)", re.MULTILINE)


def fleet_name(directory: Path) -> str:
    """The `name:` of a desired/ tree's fleet.yaml ('' if none)."""
    fleet = directory / "fleet.yaml"
    found = NAME.search(fleet.read_text()) if fleet.is_file() else None
    return found.group(1) if found else ""


def host_addresses(directory: Path) -> dict[str, str]:
    """Host name -> the address its hosts/<name>.yaml gives."""
    out = {}
    for path in sorted((directory / "hosts").glob("*.yaml")):
        found = ADDRESS.search(path.read_text())
        if found:
            out[path.stem] = found.group(1)
    return out


def point_llamacpp(lab: LabLayout, directory: Path) -> list[Path]:
    """The llama.cpp example on the lab's systemd hosts and gateway (see the module)."""
    wanted = host_addresses(directory)
    missing = sorted(set(wanted) - set(lab.hosts))
    if missing:
        raise LabError(
            f"the llama.cpp example runs on the lab's systemd hosts, and this lab has no "
            f"{', '.join(missing)}: bring it up with `python -m tests.lab up --systemd`"
        )
    mapping = {address: lab.hosts[name].address for name, address in wanted.items()}
    changed = set(slots.rewrite_tree(directory, mapping))
    for name, edits in LLAMACPP_EDITS.items():
        path = directory / name
        text = path.read_text()
        for old, new in edits:
            if old not in text:
                raise LabError(f"{path}: no {old!r} to point at the lab")
            text = text.replace(old, new)
        path.write_text(text)
        changed.add(path)
    return sorted(changed)


def point_at_lab(lab: LabLayout, directory: Path) -> list[Path]:
    """Point a copy of an example's desired/ at the lab; the files that changed."""
    if fleet_name(directory) == LLAMACPP:
        return point_llamacpp(lab, directory)
    return lab.rewrite_desired(directory)
