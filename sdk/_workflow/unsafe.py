"""``workflow.unsafe``: the escape hatches ``temporalio.workflow.unsafe`` has, as Spindle means them.

Spindle has no import sandbox: workflow modules are imported once, like any module,
and determinism is kept by the workflow event loop, the runtime guards on
``time.time``/``random``/``uuid4``/``datetime.now`` (see ``spindle._workflow.guard``)
and the static check the worker runs at start. So the import-related calls do
nothing, and ``sandbox_unrestricted()`` lifts the runtime guards, the restriction
Spindle does have.
"""

from __future__ import annotations

import contextlib
import contextvars

from collections.abc import Iterator

from spindle._workflow.context import instance
from spindle._workflow.guard import is_suspended, suspended

__all__ = ["unsafe"]

_passed_through: contextvars.ContextVar[bool] = contextvars.ContextVar("spindle_imports_passed_through",
                                                                       default=False)


class unsafe:  # noqa: N801  (lower case: the name Temporal code uses)
    """Calls that workflow code should not normally need (static methods only)."""

    def __init__(self) -> None:
        raise TypeError("workflow.unsafe is a namespace of static methods; call them on the class")

    @staticmethod
    def is_replaying() -> bool:
        """Whether the workflow is re-running recorded events (replay) rather than running live.

        True during replay activations, including queries answered from a replayed
        instance; False while the code runs for the first time. Use it to skip side
        work that must happen once (``workflow.logger`` already does).

        Raises:
            WorkflowContextError: called outside workflow code.
        """
        return instance("unsafe.is_replaying").runtime.is_replaying

    @staticmethod
    def in_sandbox() -> bool:
        """Always False: Spindle runs workflow code without a sandbox."""
        return False

    @staticmethod
    @contextlib.contextmanager
    def imports_passed_through() -> Iterator[None]:
        """Does nothing: Spindle has no import sandbox, so every import is already "passed through".

        Temporal re-imports workflow modules in a sandbox for every run and this block
        marks imports to share with the host instead. Spindle imports a module once,
        like any Python program, so ``with workflow.unsafe.imports_passed_through():``
        around imports can stay (ported code keeps working) or go. It changes nothing
        about determinism: keep non-deterministic calls out of workflow code either way.
        """
        token = _passed_through.set(True)
        try:
            yield
        finally:
            _passed_through.reset(token)

    @staticmethod
    def is_imports_passed_through() -> bool:
        """Whether the caller is inside :meth:`imports_passed_through` (which changes nothing)."""
        return _passed_through.get()

    @staticmethod
    @contextlib.contextmanager
    def sandbox_unrestricted() -> Iterator[None]:
        """Lift Spindle's runtime determinism guards inside the block.

        What Temporal's sandbox restricts, Spindle's guards restrict: ``time.time()``,
        ``random.*``, ``uuid.uuid4()``, ``datetime.now()`` and the like raise
        ``WorkflowContextError`` in workflow code. Inside this block they run, as in
        Temporal. The values are NOT recorded: code that lets them change what the
        workflow does breaks replay (use ``workflow.side_effect`` to record a value).
        The worker's static check skips calls inside the block too.
        """
        with suspended():
            yield

    @staticmethod
    def is_sandbox_unrestricted() -> bool:
        """Whether the runtime guards are lifted here (inside :meth:`sandbox_unrestricted` or a side effect)."""
        return is_suspended()
