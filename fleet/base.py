"""The base model every fleet data structure derives from.

`extra="forbid"` is what makes a typo'd key an error; `frozen=True` makes specs and
facts values that can be hashed, compared and shared between threads.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class CoreModel(BaseModel):
    """Immutable, strict pydantic model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)
