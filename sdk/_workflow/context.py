"""Finding the running workflow: the :class:`~spindle._workflow.instance.WorkflowInstance` of the running loop.

Every workflow-side function looks its instance up here, so the modules that make up
``spindle.workflow`` (the API, the logger, ``unsafe``, the asyncio helpers) share one
lookup without importing each other.
"""

from __future__ import annotations

import typing

from spindle._workflow.loop import running_workflow_loop
from spindle.exceptions import WorkflowContextError

if typing.TYPE_CHECKING:
    from spindle._workflow.instance import WorkflowInstance

__all__ = ["maybe_instance", "instance"]


def maybe_instance() -> WorkflowInstance | None:
    """The instance whose loop is running, or ``None`` outside workflow code."""
    loop = running_workflow_loop()
    if loop is not None:
        return typing.cast("WorkflowInstance", loop.instance)
    return None


def instance(api: str) -> WorkflowInstance:
    """The running instance, for the workflow call ``workflow.<api>()``.

    Raises:
        WorkflowContextError: called outside workflow code; the message names ``api``.
    """
    inst = maybe_instance()
    if inst is None:
        raise WorkflowContextError(
            f"workflow.{api}() can only be called from workflow code (a @workflow.defn run method, signal, "
            "query or update handler running on a worker)")
    return inst
