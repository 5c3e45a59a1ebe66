"""Problems found in desired/: one line each, `path:line: severity: message`.

Produced by `load` (syntax and schema) and `validate` (cross-file rules); printed by the
command line, which exits 1 when any of them is an error.
"""

import re

from fleet.base import CoreModel, Severity

__all__ = ["Problem", "Severity", "has_errors", "sort_problems"]


class Problem(CoreModel):
    """One thing wrong with desired/, located at a file and line."""

    path: str
    line: int | None = None
    severity: Severity = Severity.ERROR
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return _one_line(f"{where}: {self.severity.value}: {self.message}")


# what would end or break a terminal's line: C0 and C1 controls, DEL, line separators
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _one_line(text: str) -> str:
    """The text with every control character as its escape: one problem, one line."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def has_errors(problems: list[Problem]) -> bool:
    """True when any problem blocks."""
    return any(p.severity is Severity.ERROR for p in problems)


def sort_problems(problems: list[Problem]) -> list[Problem]:
    """File, then line, then message: stable output that diffs cleanly."""
    return sorted(problems, key=lambda p: (p.path, p.line or 0, p.message))
