"""Request validation: every problem is reported with the field it concerns.

Search-attribute checks live in ``spindle.controlplane._search_attributes`` (the history
service checks the attributes of commands with the same rules).
"""

from __future__ import annotations

import math

from spindle.controlplane._search_attributes import check_search_attributes
from spindle.controlplane.api import messages_pb2 as pb
from spindle.controlplane.api import service_pb2 as svc
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import InvalidArgument, ResourceExhausted
from spindle.controlplane.namespaces import Namespace


def require_id(value: str, field: str, config: ServerConfig) -> None:
    if not value:
        raise InvalidArgument(f"{field}: required (got an empty value)")
    if len(value) > config.max_id_length:
        raise InvalidArgument(f"{field}: {len(value)} characters is over the limit of {config.max_id_length}")


def check_timeout(value: int, field: str) -> None:
    if value < 0:
        raise InvalidArgument(f"{field}: must not be negative, got {value}")


def payload_size(*messages: object) -> int:
    total = 0
    for m in messages:
        if m is not None and hasattr(m, "ByteSize"):
            total += m.ByteSize()  # type: ignore[attr-defined]
    return total


def check_payloads(config: ServerConfig, field: str, *messages: object) -> None:
    size = payload_size(*messages)
    if size > config.max_payload_bytes:
        raise ResourceExhausted(f"{field}: {size} bytes is over the payload limit of {config.max_payload_bytes} bytes "
                                "(store large values elsewhere and pass a reference)")


def check_enum(value: int, enum: object, field: str) -> None:
    if value not in enum.values():  # type: ignore[attr-defined]
        raise InvalidArgument(f"{field}: unknown value {value}")


def task_rate(value: float, config: ServerConfig, field: str = "max_tasks_per_second") -> float:
    """A poll's task-queue dispatch rate as the server applies it: 0 (asks for none) stays 0, any other rate is
    clamped to the server's floor and ceiling (``task_queue_min_rate``, ``task_queue_max_rate``).

    The floor keeps one poller from freezing a queue for every worker (a rate of 1e-9 would
    hand out one task every 30 years); the ceiling keeps the value meaningful. A rate is
    clamped rather than refused so that a worker configured below the floor still works.

    Raises:
        InvalidArgument: a negative or non-finite rate.
    """
    if value == 0:
        return 0.0
    if not math.isfinite(value) or value < 0:
        raise InvalidArgument(f"{field}: must be 0 (no limit) or a positive finite number of tasks per second, "
                              f"got {value:g}")
    return min(max(value, config.task_queue_min_rate), config.task_queue_max_rate)
def check_start_request(req: svc.StartWorkflowExecutionRequest, ns: Namespace, config: ServerConfig) -> None:
    """Everything a start must satisfy (ids, timeouts, policies, payload size, search attributes).

    The frontend checks every start with it, and so does the cluster's internal RPC for the
    starts it receives from other members (a child started on another member's shard).
    """
    require_id(req.workflow_id, "workflow_id", config)
    require_id(req.workflow_type, "workflow_type", config)
    require_id(req.task_queue, "task_queue", config)
    for f in ("execution_timeout_ms", "run_timeout_ms", "task_timeout_ms", "workflow_start_delay_ms"):
        check_timeout(getattr(req, f), f)
    check_enum(req.workflow_id_reuse_policy, pb.WorkflowIdReusePolicy, "workflow_id_reuse_policy")
    check_enum(req.workflow_id_conflict_policy, pb.WorkflowIdConflictPolicy, "workflow_id_conflict_policy")
    if req.workflow_id_conflict_policy == pb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING \
            and req.workflow_id_reuse_policy == pb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE:
        # as in Temporal: terminating the running run to start another is a reuse of the id
        raise InvalidArgument("workflow_id_reuse_policy: REJECT_DUPLICATE cannot be used together with "
                              "workflow_id_conflict_policy TERMINATE_EXISTING")
    check_payloads(config, "input", req.input, req.memo, req.header)
    check_search_attributes(ns, req.search_attributes, "search_attributes")
