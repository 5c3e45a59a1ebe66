"""Every runtime a host can name has its pure module and its adapter, under one name."""

from __future__ import annotations

from typing import get_args

import pytest

from fleet.runtimes import RUNTIMES, runtime_for
from fleet.spec.models import RuntimeName
from reconciler.runtimes import ADAPTERS


def test_the_names_a_host_may_give_are_the_runtimes_there_are() -> None:
    assert set(get_args(RuntimeName)) == set(RUNTIMES) == set(ADAPTERS)


@pytest.mark.parametrize("name", sorted(RUNTIMES), ids=sorted(RUNTIMES))
def test_each_adapter_runs_the_runtime_of_its_name(name: str) -> None:
    assert ADAPTERS[name].runtime is runtime_for(name)
    assert name == runtime_for(name).NAME
