"""deploy/grafana/generate.py, loaded as a module (it is a script, not a package): the
dashboard's panels and queries for the tests that check them (promtool in the unit
tests, the lab's Prometheus in tests/integration/test_gateway_bluegreen_lab.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

GENERATOR = Path(__file__).resolve().parents[1] / "deploy" / "grafana" / "generate.py"


def load_generator() -> ModuleType:
    """The generator module (registered in sys.modules: its dataclasses look it up)."""
    spec = importlib.util.spec_from_file_location("fleet_grafana_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
