"""The one exception type of the visibility query language."""

from __future__ import annotations


class QueryError(ValueError):
    """A list-filter query is malformed, names an unknown field, or mixes types.

    Attributes:
        position: 0-based character offset into the query text where the problem
            starts (``len(query)`` when the query ended too early).
        detail: the message without the "invalid query at position N" prefix.

    The frontend maps this to gRPC ``INVALID_ARGUMENT``; ``str(error)`` is meant
    to be shown to the user verbatim.
    """

    def __init__(self, message: str, position: int, detail: str | None = None) -> None:
        super().__init__(message)
        self.position = position
        self.detail = detail if detail is not None else message

    @classmethod
    def at(cls, position: int, detail: str) -> QueryError:
        """Build the standard ``invalid query at position N: <detail>`` error."""
        return cls(f"invalid query at position {position}: {detail}", position, detail)
