"""Engine, host-runtime and gateway-kind knowledge stays behind its seam.

Each registered engine's own words are taken from its package (every module of it): its
flag tables and the flags it names, its Prometheus names, its out-of-memory log lines and
the literal text of its log patterns. None may appear in a .py file of `fleet/` or
`reconciler/` outside `fleet/engines/`, so a third engine's words cannot leak into plan,
the workflows or the CLI unseen, and the list cannot go stale: a new flag or metric in an
engine's package is checked the day it is added. The same holds for each host runtime's
own words (the Docker commands the compose runtime runs) outside `fleet/runtimes/` and
`reconciler/runtimes/`, but for a short list of files that say why; and each engine's,
runtime's and gateway kind's name as a string outside its own package (where code would
compare it instead of asking the backend), but for a shorter list.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from fleet.engines import ENGINES
from fleet.engines.base import MetricNames
from fleet.gateways import KINDS
from fleet.runtimes import RUNTIMES
from tests.conftest import REPO

# Flags every engine and fleet's own command line share: naming them says nothing of an
# engine (`fleet explain log --model`, `fleet import --host`).
NEUTRAL_FLAGS = frozenset({"--model", "--host", "--port"})
# A log pattern's literal run shorter than this is too common a word to be the engine's.
MIN_LOG_WORDS = 10
_META = re.compile(r"\\[A-Za-z]|[\\()\[\]{}|?*+^$.]")
_METRIC = re.compile(r"^[a-z_]+:[a-z_]+$")


def modules(package: ModuleType) -> Iterator[ModuleType]:
    """A package and every module in it, or a single module."""
    yield package
    for info in pkgutil.walk_packages(getattr(package, "__path__", []), package.__name__ + "."):
        yield importlib.import_module(info.name)


def pattern_words(pattern: re.Pattern[str]) -> set[str]:
    """The literal runs of a log pattern long enough to be the engine's own words."""
    pieces = (piece.strip() for piece in _META.split(pattern.pattern))
    return {p for p in pieces if len(p) >= MIN_LOG_WORDS and re.search(r"[a-z]{3}", p)}


def strings_in(value: object) -> Iterator[object]:
    """A constant, or the members of a tuple, list, set or dict of constants (one level)."""
    if isinstance(value, dict):
        yield from value
    elif isinstance(value, tuple | list | set | frozenset):
        for item in value:
            yield from (item if isinstance(item, tuple) else (item,))
    else:
        yield value


def own_words(value: object) -> set[str]:
    """The flags, metric names and log words one module-level value of an engine holds."""
    if isinstance(value, MetricNames):
        names = value.model_dump().values()
        return {n for name in names for n in ((name,) if isinstance(name, str) else name or ())}
    words: set[str] = set()
    for item in strings_in(value):
        if isinstance(item, re.Pattern):
            words |= pattern_words(item)
        elif isinstance(item, str) and (item.startswith("--") or _METRIC.match(item)):
            words.add(item)
    return words - NEUTRAL_FLAGS


def engine_words(engine: ModuleType) -> set[str]:
    words = set(engine.OOM_SIGNATURES) | ({engine.LONG_CONTEXT_ENV} - {None})
    for module in modules(engine):
        for value in vars(module).values():
            words |= own_words(value)
    return words


def sources(*outside: str) -> Iterator[Path]:
    for package in ("fleet", "reconciler"):
        for path in sorted((REPO / package).rglob("*.py")):
            if not any(path.is_relative_to(REPO / o) for o in outside):
                yield path


def leaks(words: set[str], paths: Iterator[Path]) -> list[str]:
    """`path:line: word` for each of the words a file names."""
    alternatives = sorted(words, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(w) + r"(?![\w-])" for w in alternatives))
    found = []
    for path in paths:
        text = path.read_text()
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            name = path.relative_to(REPO) if path.is_relative_to(REPO) else path
            found.append(f"{name}:{line}: {match.group()}")
    return found


ENGINE_MODULES = [
    pytest.param(importlib.import_module(type(e).__module__), id=n) for n, e in ENGINES.items()
]


@pytest.mark.parametrize("engine", ENGINE_MODULES)
def test_engine_words_are_read_off_its_package(engine: ModuleType) -> None:
    """The vocabulary is not empty: it holds the engine's running gauge and a flag of its."""
    words = engine_words(engine)
    assert set(engine.METRICS.running) <= words
    assert any(word.startswith("--") for word in words)


@pytest.mark.parametrize("engine", ENGINE_MODULES)
def test_no_engine_word_outside_the_engines(engine: ModuleType) -> None:
    assert leaks(engine_words(engine), sources("fleet/engines")) == []


def test_a_metric_name_in_a_workflow_is_found(tmp_path: Path) -> None:
    """The check is not vacuous: vLLM's running gauge in a drain loop is one leak."""
    drain = tmp_path / "drain.py"
    drain.write_text('RUNNING = "vllm:num_requests_running"\n')
    words = engine_words(importlib.import_module(type(ENGINES["vllm"]).__module__))
    assert [f.split(": ", 1)[1] for f in leaks(words, iter([drain]))] == [
        "vllm:num_requests_running"
    ]


# The Docker commands a compose runtime may run: the runtime's words are those of them its
# packages use (`docker ps`, `docker compose`, ...), read off their source below.
DOCKER_VERBS = re.compile(
    r"docker (?:compose|image inspect|inspect|logs|ps|restart|rm|start|stop|exec|run|kill)\b"
)
RUNTIME_HOMES = ("fleet/runtimes", "reconciler/runtimes")
# Files outside the runtimes that may name a Docker command, and why (each is neutral or
# owned by the runtime through a layer it cannot live in):
RUNTIME_WORDS_ALLOWED = {
    # the parser of `docker inspect` JSON: a fact parser sits in fleet/facts, below the
    # runtimes; the compose runtime owns the command that prints it
    "fleet/facts/docker_inspect.py",
    # the schema's description of `runtime: compose` (docker compose), shown to users
    "fleet/spec/host.py",
    # the names fleet writes on hosts, each once: compose's own project and service labels
    "fleet/names.py",
}


def runtime_words() -> set[str]:
    words: set[str] = set()
    for home in RUNTIME_HOMES:
        for path in (REPO / home).rglob("*.py"):
            words |= set(DOCKER_VERBS.findall(path.read_text()))
    return words


def test_runtime_words_are_read_off_the_runtimes() -> None:
    assert {"docker compose", "docker ps", "docker logs"} <= runtime_words()


def test_no_docker_command_outside_the_runtimes() -> None:
    outside = (
        path
        for path in sources(*RUNTIME_HOMES)
        if path.relative_to(REPO).as_posix() not in RUNTIME_WORDS_ALLOWED
    )
    assert leaks(runtime_words(), outside) == []


@pytest.mark.parametrize("engine", ENGINE_MODULES)
def test_no_module_outside_the_engines_imports_an_engine(engine: ModuleType) -> None:
    """Plan, the workflows and the CLI reach an engine through `fleet.engines` only."""
    name = engine.__name__
    words = {name, f"from fleet.engines import {name.rsplit('.', 1)[1]}"}
    assert leaks(words, sources("fleet/engines")) == []


# Files outside a backend's own package that may spell a backend's name, and why:
NAMES_ALLOWED = {
    # the defaults of what a desired/ file need not say (engine, runtime, gateway kind)
    "fleet/spec/seat.py",
    "fleet/spec/host.py",
    "fleet/spec/gateway.py",
    # systemd's own journal lines (its PID 1 identifier), parsed below the runtimes
    "fleet/facts/unit_journal.py",
}


def backend_names() -> dict[str, tuple[str, ...]]:
    """Each registered engine's, runtime's and gateway kind's name, and where it may be
    spelled: its own package (an engine's, a runtime's two halves, a kind's)."""
    names: dict[str, tuple[str, ...]] = {}
    for engine in ENGINES.values():
        home = type(engine).__module__.rsplit(".", 1)[0].replace(".", "/")
        names[engine.NAME] = (home,)
    for runtime in RUNTIMES.values():
        module = type(runtime).__module__.replace(".", "/")
        names[runtime.NAME] = (module + ".py", module.replace("fleet/", "reconciler/") + ".py")
    for kind in KINDS.values():
        names[kind.name] = (type(kind).__module__.replace(".", "/"),)
    return names


@pytest.mark.parametrize("name", sorted(backend_names()), ids=sorted(backend_names()))
def test_no_backend_name_is_compared_outside_its_package(name: str) -> None:
    """`== "systemd"` or `{"vllm": ...}` outside the backend's package is a seam leaking:
    code asks the backend (a declared capability, a constant of its own) instead."""
    homes = backend_names()[name]
    outside = (
        path
        for path in sources()
        if path.relative_to(REPO).as_posix() not in NAMES_ALLOWED
        and not any(path.relative_to(REPO).as_posix().startswith(home) for home in homes)
    )
    assert leaks({f'"{name}"', f"'{name}'"}, outside) == []


def test_a_name_compared_in_plan_is_found(tmp_path: Path) -> None:
    """The check is not vacuous: an engine's name in a plan module is one leak."""
    plan = tmp_path / "host_memory.py"
    plan.write_text('OVERHEAD = {"vllm": 2816}\n')
    assert [f.split(": ", 1)[1] for f in leaks({'"vllm"'}, iter([plan]))] == ['"vllm"']
