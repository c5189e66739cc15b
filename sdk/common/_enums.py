"""Public enums mirroring the wire enums (``spindle.common.WorkflowIDReusePolicy`` and friends).

Each member's value is the proto enum number, so ``int(member)`` goes on the wire.
"""

from __future__ import annotations

import enum

from spindle.api import messages_pb2 as pb

__all__ = ["WorkflowIDReusePolicy", "WorkflowIDConflictPolicy", "WorkflowExecutionStatus", "ParentClosePolicy"]


class WorkflowIDReusePolicy(enum.IntEnum):
    """Whether a new run may reuse the id of a *closed* run."""

    ALLOW_DUPLICATE = pb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
    ALLOW_DUPLICATE_FAILED_ONLY = pb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
    REJECT_DUPLICATE = pb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE


class WorkflowIDConflictPolicy(enum.IntEnum):
    """What a start does when a *running* execution has the same id.

    ``FAIL`` (the default) raises :class:`~spindle.exceptions.WorkflowAlreadyStartedError`;
    ``USE_EXISTING`` returns a handle to the running run; ``TERMINATE_EXISTING`` terminates
    the running run and starts the new one in one step (the id reuse policy, which governs
    *closed* runs, is not consulted; ``REJECT_DUPLICATE`` with it is refused as invalid).
    """

    FAIL = pb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
    USE_EXISTING = pb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
    TERMINATE_EXISTING = pb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING


class ParentClosePolicy(enum.IntEnum):
    """What happens to a child workflow when its parent closes."""

    TERMINATE = pb.PARENT_CLOSE_POLICY_TERMINATE
    ABANDON = pb.PARENT_CLOSE_POLICY_ABANDON
    REQUEST_CANCEL = pb.PARENT_CLOSE_POLICY_REQUEST_CANCEL


class WorkflowExecutionStatus(enum.IntEnum):
    """The status of a workflow run, as ``handle.describe().status`` reports it."""

    RUNNING = pb.WORKFLOW_EXECUTION_STATUS_RUNNING
    COMPLETED = pb.WORKFLOW_EXECUTION_STATUS_COMPLETED
    FAILED = pb.WORKFLOW_EXECUTION_STATUS_FAILED
    CANCELED = pb.WORKFLOW_EXECUTION_STATUS_CANCELED
    TERMINATED = pb.WORKFLOW_EXECUTION_STATUS_TERMINATED
    CONTINUED_AS_NEW = pb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW
    TIMED_OUT = pb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT
