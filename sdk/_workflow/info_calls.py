"""Reading the run from workflow code: ``workflow.info``, ``now``, ``random``, ``uuid4``, ``in_workflow``.

Re-exported by ``spindle.workflow``. Each finds the running :class:`~spindle._workflow.instance.WorkflowInstance` through the
running event loop and raises :class:`~spindle.exceptions.WorkflowContextError` when
called outside a workflow.
"""

from __future__ import annotations

import random as _random
import uuid as _uuid

from datetime import datetime

from spindle._workflow.context import instance as _instance
from spindle._workflow.context import maybe_instance as _maybe_instance
from spindle._workflow.info import WorkflowInfo

__all__ = ["in_workflow", "info", "now", "random", "uuid4"]


def in_workflow() -> bool:
    """Whether the caller runs inside workflow code (on a workflow event loop)."""
    return _maybe_instance() is not None


def info() -> WorkflowInfo:
    """Facts about the current run.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("info").runtime.workflow_info


def now() -> datetime:
    """Workflow time as an aware UTC datetime: the start of the current workflow task.

    Deterministic: replay sees the same value. Raises WorkflowContextError outside a workflow.
    """
    return _instance("now").runtime.now()


def random() -> _random.Random:
    """The run's ``random.Random``, seeded from the run id (the same sequence on replay).

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("random").runtime.deterministic_random()


def uuid4() -> _uuid.UUID:
    """A deterministic version-4 UUID drawn from :func:`random`.

    Raises:
        WorkflowContextError: called outside a workflow.
    """
    return _instance("uuid4").runtime.uuid4()
