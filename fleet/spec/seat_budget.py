"""A seat's engine-owned keys: how its engine sizes its KV cache, chosen by `engine:`.

A seat file is flat (`engine: vllm` beside `kv_cache_bytes:`), but the budget keys are its
engine's: `fleet.spec.models.Seat` reads them into `budget` with the model its engine
registered (`SEAT_BUDGETS`, by the engine's name; `fleet.engines.register` adds each
engine's `BUDGET`), as a pydantic discriminated union on `engine` would, open to engines
registered later. So a vLLM key on a llama.cpp seat is an error at that key's line, in the
llama.cpp budget's own words where it has them (`REFUSED`), and a toy engine adds keys of
its own without touching the seat model.

Plan, fit and the rules ask a budget what it means in neutral terms: a KV byte budget per
GPU (`kv_bytes`), a fraction of GPU memory (`memory_fraction`), parallel slots (`slots`);
`Seat` exposes them as `kv_cache_bytes`, `gpu_memory_utilization` and `parallel`.
"""

from fleet.spec.host_settings import BackendSettings


class SeatBudget(BackendSettings):
    """The keys of a seat file that are its engine's (an engine's subclass; this one has
    none, and states no budget)."""

    def kv_bytes(self) -> int | None:
        """The KV-cache budget per GPU in bytes; None where the seat gives none."""
        return None

    def memory_fraction(self) -> float | None:
        """The fraction of GPU memory the engine takes; None where the seat gives none."""
        return None

    def slots(self) -> int | None:
        """The parallel slots, each holding a whole context; None where not given."""
        return None


SEAT_BUDGETS: dict[str, type[SeatBudget]] = {}
"""Each engine's budget model, by the engine's name (`engine:` of a seat file), as
`fleet.engines.register` adds it (the built-in ones when `fleet.engines` is imported)."""


def register_budget(engine: str, model: type[SeatBudget]) -> None:
    """Make `model` read the engine-owned keys of a seat whose `engine:` is `engine`."""
    SEAT_BUDGETS[engine] = model
