"""Request validation: every problem is reported with the field it concerns.

Every RPC's request first passes :func:`check_request` (the frontend's pipeline,
``service.pipeline``, and ``@validated`` on the cluster frontend's own methods run it before
the handler, so nothing is looked up, offloaded or written for a refused request): each scalar field against its rule in
``spindle.controlplane._field_rules`` (ranges of durations, page sizes, rates and counts;
length and control characters of ids, names and free text; defined enum values). The
commands of a workflow task are left to the history service, which checks them with the
same rules and fails the task (BAD_COMMAND) as Temporal does.

Search-attribute checks live in ``spindle.controlplane._search_attributes`` (the history
service checks the attributes of commands with the same rules).
"""

from __future__ import annotations

import functools
import math

from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.controlplane import _field_rules as _rules
from spindle.controlplane._field_rules import check_fields
from spindle.controlplane._search_attributes import check_search_attributes
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.errors import InvalidArgument, ResourceExhausted
from spindle.controlplane.namespaces import Namespace
from spindle.controlplane.schedules._cron import check_cron_expression

#: Fields of a request that another layer checks with the same rules (RPC -> field names).
HISTORY_CHECKED: dict[str, frozenset[str]] = {
    # the history service checks each command (``ops.commands.validate``) and fails the task on a bad one
    "RespondWorkflowTaskCompleted": frozenset({"commands"}),
}

#: Every RPC of WorkflowService, in proto order.
RPC_NAMES = [m.name for m in svc.DESCRIPTOR.services_by_name["WorkflowService"].methods]


def check_request(rpc: str, req: Message, config: ServerConfig) -> None:
    """Every scalar field of ``rpc``'s request against its rule (``_field_rules``).

    Raises:
        InvalidArgument: naming the first field that breaks its rule (``start.workflow_id: control
            character U+0000 at position 1 ...``).
    """
    check_fields(req, "", config.max_id_length, skip=HISTORY_CHECKED.get(rpc, frozenset()))


C = TypeVar("C", bound=type)


def validated(cls: C) -> C:
    """Class decorator: each WorkflowService RPC method defined on ``cls`` runs :func:`check_request` first.

    The cluster frontend's own methods (its polls) use it; ``FrontendService`` runs the same check
    in its pipeline. So the rules hold for the gRPC servicer, the embedded stub and the requests a
    cluster member forwards to another (which runs the frontend's method).
    """
    for name in RPC_NAMES:
        fn = cls.__dict__.get(name)
        if fn is None:
            continue

        def wrap(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
            @functools.wraps(fn)
            async def method(self: Any, req: Any, deadline: float | None) -> Any:
                check_request(name, req, self.config)
                return await fn(self, req, deadline)
            return method

        setattr(cls, name, wrap(fn, name))
    return cls


def require_id(value: str, field: str, config: ServerConfig) -> None:
    """A required id or name: not empty, within the length limit, no control characters."""
    if not value:
        raise InvalidArgument(f"{field}: required (got an empty value)")
    check_name(value, field, config)


def check_name(value: str, field: str, config: ServerConfig) -> None:
    """An optional id, name or identity: within the length limit, no control characters (``_field_rules.NAME``)."""
    error = _rules.NAME(value, field, config.max_id_length)
    if error:
        raise InvalidArgument(error)


def check_text(value: str, field: str) -> None:
    """Free text (a reason): within ``_field_rules.MAX_TEXT_LENGTH``."""
    error = _rules.TEXT(value, field, 0)
    if error:
        raise InvalidArgument(error)


def payload_size(*messages: object) -> int:
    total = 0
    for m in messages:
        if m is not None and hasattr(m, "ByteSize"):
            total += m.ByteSize()
    return total


def check_payloads(config: ServerConfig, field: str, *messages: object) -> None:
    size = payload_size(*messages)
    if size > config.max_payload_bytes:
        raise ResourceExhausted(f"{field}: {size} bytes is over the payload limit of {config.max_payload_bytes} bytes "
                                "(store large values elsewhere and pass a reference)")


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
    check_request("StartWorkflowExecution", req, config)
    require_id(req.workflow_id, "workflow_id", config)
    require_id(req.workflow_type, "workflow_type", config)
    require_id(req.task_queue, "task_queue", config)
    if req.workflow_id_conflict_policy == pb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING \
            and req.workflow_id_reuse_policy == pb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE:
        # as in Temporal: terminating the running run to start another is a reuse of the id
        raise InvalidArgument("workflow_id_reuse_policy: REJECT_DUPLICATE cannot be used together with "
                              "workflow_id_conflict_policy TERMINATE_EXISTING")
    if req.cron_schedule:
        try:
            check_cron_expression(req.cron_schedule)
        except ValueError as e:
            raise InvalidArgument(f"cron_schedule: {e}") from None
        if req.workflow_start_delay_ms:
            raise InvalidArgument("workflow_start_delay_ms: cannot be combined with cron_schedule (the first run "
                                  "waits for the first tick)")
    check_payloads(config, "input", req.input, req.memo, req.header)
    check_search_attributes(ns, req.search_attributes, "search_attributes")
