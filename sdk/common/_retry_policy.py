"""``RetryPolicy``: how the server retries a failed activity (or workflow) attempt."""

from __future__ import annotations

import dataclasses

from collections.abc import Sequence
from datetime import timedelta

from spindle.api import messages_pb2 as pb

__all__ = ["RetryPolicy"]


def _ms(d: timedelta | None) -> int:
    return 0 if d is None else int(d.total_seconds() * 1000)


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Retry with exponential backoff.

    The n-th retry waits ``initial_interval * backoff_coefficient ** (n - 1)``, capped at
    ``maximum_interval`` (default: 100 x ``initial_interval``). ``maximum_attempts`` of 0
    means unlimited (the schedule-to-close timeout still applies). An
    ``ApplicationError`` whose ``type`` is listed in ``non_retryable_error_types`` (or
    that has ``non_retryable=True``) is not retried.

    Raises:
        ValueError: from the constructor, for a negative interval or attempt count or a
            backoff coefficient below 1.
    """

    initial_interval: timedelta = timedelta(seconds=1)
    backoff_coefficient: float = 2.0
    maximum_interval: timedelta | None = None
    maximum_attempts: int = 0
    non_retryable_error_types: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.initial_interval < timedelta(0):
            raise ValueError("RetryPolicy.initial_interval must not be negative")
        if self.backoff_coefficient < 1.0:
            raise ValueError("RetryPolicy.backoff_coefficient must be at least 1.0")
        if self.maximum_interval is not None and self.maximum_interval < self.initial_interval:
            raise ValueError("RetryPolicy.maximum_interval must not be shorter than initial_interval")
        if self.maximum_attempts < 0:
            raise ValueError("RetryPolicy.maximum_attempts must be 0 (unlimited) or positive")
        if isinstance(self.non_retryable_error_types, str):
            raise ValueError("RetryPolicy.non_retryable_error_types must be a sequence of type names, not a str")
        object.__setattr__(self, "non_retryable_error_types", tuple(self.non_retryable_error_types))

    def to_proto(self) -> pb.RetryPolicy:
        """The wire form (durations in milliseconds)."""
        return pb.RetryPolicy(
            initial_interval_ms=_ms(self.initial_interval),
            backoff_coefficient=self.backoff_coefficient,
            maximum_interval_ms=_ms(self.maximum_interval),
            maximum_attempts=self.maximum_attempts,
            non_retryable_error_types=list(self.non_retryable_error_types),
        )

    @classmethod
    def from_proto(cls, p: pb.RetryPolicy) -> RetryPolicy:
        """Rebuild a policy from its wire form (unset fields take the defaults)."""
        return cls(
            initial_interval=timedelta(milliseconds=p.initial_interval_ms) if p.initial_interval_ms else timedelta(seconds=1),
            backoff_coefficient=p.backoff_coefficient or 2.0,
            maximum_interval=timedelta(milliseconds=p.maximum_interval_ms) if p.maximum_interval_ms else None,
            maximum_attempts=p.maximum_attempts,
            non_retryable_error_types=tuple(p.non_retryable_error_types),
        )
