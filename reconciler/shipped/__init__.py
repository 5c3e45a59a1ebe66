"""Files fleet ships to hosts as they are: the gateway's key check (`fleet_auth.py`).

Read with `shipped_text(name)` and written beside what loads them; never imported by
fleet itself (they run in another program's Python: the LiteLLM proxy's).
"""

from __future__ import annotations

from importlib import resources


def shipped_text(name: str) -> str:
    """The text of a shipped file."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
