"""The base model every fleet data structure derives from, and the one `Severity`.

`extra="forbid"` is what makes a typo'd key an error; `frozen=True` makes specs and
facts values that can be hashed, compared and shared between threads. `defer_build=True`
builds a model's validator when it is first used, not when its module is imported: a
command pays only for the models it uses (`fleet validate` builds no observation model).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class CoreModel(BaseModel):
    """Immutable, strict pydantic model: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Severity(StrEnum):
    """How bad a problem in desired/ or a finding about the live fleet is.

    Errors block (validate exits 1) or demand action; warnings inform; info is context.
    """

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
