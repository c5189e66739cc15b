"""The error that fails the current workflow task, kept where workflow code cannot swallow it.

A nondeterminism found while workflow code runs (a ``get_version`` outside the supported
range, a missing side-effect marker), an unexpected error in a handler, a result that
cannot be encoded: each is raised into (or next to) workflow code, which could catch it.
The part of the runtime that finds it records it here as well, and the instance raises
it after the step that recorded it, so the task fails either way.
"""

from __future__ import annotations

from spindle.exceptions import NonDeterminismError

__all__ = ["Fatal"]


class Fatal:
    """The first fatal error of the current step (``error`` is ``None`` while there is none).

    One per :class:`~spindle._workflow.instance.WorkflowInstance`; its parts that find
    such errors are given it explicitly.
    """

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: BaseException | None = None

    def record(self, error: BaseException) -> None:
        """Keep ``error`` unless an earlier one is still pending (the first one wins)."""
        if self.error is None:
            self.error = error

    def nondeterminism(self, message: str, event_id: int | None = None) -> NonDeterminismError:
        """Record a :class:`~spindle.exceptions.NonDeterminismError` and return it for the caller to raise."""
        err = NonDeterminismError(message, event_id=event_id)
        if self.error is None:
            self.error = err
        return err

    def clear(self) -> None:
        """Forget the recorded error (eviction: nothing will raise it)."""
        self.error = None

    def raise_pending(self) -> None:
        """Raise the recorded error, if any, and forget it."""
        err = self.error
        if err is not None:
            self.error = None
            raise err
