"""The one error type of the DSL, and the source position it points at."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DslError", "Pos", "STRING_SOURCE"]

#: The FILE part of an error for a document given as text rather than a path.
STRING_SOURCE = "<string>"


class Pos(NamedTuple):
    """A 1-based line and column in a YAML document (ordered by line, then column)."""

    line: int
    column: int

    def shifted(self, columns: int) -> Pos:
        """Return the position ``columns`` characters further along the same line."""
        return Pos(self.line, self.column + columns)


class DslError(ValueError):
    """A YAML workflow is invalid, or was started with invalid inputs.

    The message reads ``FILE:LINE:COLUMN: step 'ID': what is wrong`` (without the
    ``step 'ID': `` part for header-level errors). The parts are also attributes, and
    ``errors`` lists every problem found in the document (this error first), so that
    ``spindle dsl validate`` can print them all.
    """

    def __init__(
        self,
        reason: str,
        *,
        file: str = STRING_SOURCE,
        pos: Pos | None = None,
        step: str | None = None,
    ) -> None:
        self.reason = reason
        self.file = file
        self.pos = pos if pos is not None else Pos(1, 1)
        self.step = step
        self.errors: list[DslError] = [self]
        super().__init__(self.format())

    @property
    def line(self) -> int:
        """The 1-based line the error points at."""
        return self.pos.line

    @property
    def column(self) -> int:
        """The 1-based column the error points at."""
        return self.pos.column

    def format(self) -> str:
        """Render as ``FILE:LINE:COLUMN: [step 'ID': ]reason``."""
        where = f"{self.file}:{self.pos.line}:{self.pos.column}: "
        if self.step is not None:
            where += f"step {self.step!r}: "
        return where + self.reason

    @classmethod
    def collect(cls, errors: list[DslError]) -> DslError:
        """Return the first of ``errors`` (sorted by position) carrying all of them."""
        ordered = sorted(errors, key=lambda e: e.pos)  # stable: ties keep the order found
        first = ordered[0]
        first.errors = ordered
        return first
