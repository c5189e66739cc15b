"""What ``handle.describe()`` and ``client.list_workflows()`` return: :class:`WorkflowExecutionDescription`.

:func:`describe_execution` builds one from the server's message (payloads already decoded by the
client's codec chain); the description keeps that message for :attr:`~WorkflowExecutionDescription.raw`
and the Temporal-shaped views of it.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf.message import Message

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._raw_description import (
    RawWorkflowDescription,
    RawWorkflowExecutionInfo,
    raw_description,
    raw_execution_info,
)
from spindle.client._rpc import time_from_ms
from spindle.client._versioning import WorkflowExecutionVersioningInfo, versioning_info
from spindle.common._enums import WorkflowExecutionStatus
from spindle.common._search_attributes import TypedSearchAttributes, typed_from_payloads
from spindle.converter._data_converter import DataConverter

__all__ = ["PendingActivity", "PendingChild", "WorkflowExecutionDescription", "describe_execution"]


@dataclasses.dataclass(frozen=True)
class PendingActivity:
    """An activity of a running workflow that has not finished (``describe().pending_activities``)."""

    activity_id: str
    activity_type: str
    state: str
    attempt: int
    scheduled_event_id: int
    last_started_time: datetime.datetime | None
    last_heartbeat_time: datetime.datetime | None
    heartbeat_details: Sequence[Any]
    last_failure: BaseException | None


@dataclasses.dataclass(frozen=True)
class PendingChild:
    """A child workflow that has not finished."""

    workflow_id: str
    run_id: str
    workflow_type: str
    initiated_event_id: int


@dataclasses.dataclass(frozen=True)
class WorkflowExecutionDescription:
    """What ``handle.describe()`` and ``client.list_workflows()`` return for one run.

    ``pending_activities`` and ``pending_children`` are filled by ``describe()`` only.
    ``memo`` and ``search_attributes`` values are decoded as plain JSON values.
    ``versioning_info``: which build runs the execution's workflow tasks (worker build versioning);
    None when it never ran on a versioned worker.
    """

    id: str
    run_id: str
    workflow_type: str
    task_queue: str
    status: WorkflowExecutionStatus | None
    start_time: datetime.datetime | None
    close_time: datetime.datetime | None
    execution_time: datetime.datetime | None
    history_length: int
    memo: Mapping[str, Any]
    search_attributes: Mapping[str, Any]
    parent_id: str | None = None
    parent_run_id: str | None = None
    first_run_id: str = ""
    pending_activities: Sequence[PendingActivity] = ()
    pending_children: Sequence[PendingChild] = ()
    versioning_info: WorkflowExecutionVersioningInfo | None = None
    raw: Message | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def workflow_id(self) -> str:
        """Alias of ``id``."""
        return self.id

    def _info(self) -> svc.WorkflowExecutionInfo:
        raw = self.raw
        if isinstance(raw, svc.DescribeWorkflowExecutionResponse):
            return raw.workflow_execution_info
        if isinstance(raw, svc.WorkflowExecutionInfo):
            return raw
        raise ValueError("this description was not made from a server response (no raw message)")

    @functools.cached_property
    def raw_description(self) -> RawWorkflowDescription:
        """The describe response in the shape of Temporal's ``DescribeWorkflowExecutionResponse``.

        ``raw_description.pending_activities[0].activity_type.name``,
        ``raw_description.workflow_execution_info.execution.run_id`` ... (see
        :mod:`spindle.client._raw_description`). ``raw`` is Spindle's own message.

        Raises:
            ValueError: this row came from ``list_workflows`` (use :attr:`raw_info`),
                which does not carry pending work.
        """
        if not isinstance(self.raw, svc.DescribeWorkflowExecutionResponse):
            raise ValueError("raw_description is only available on handle.describe() results; "
                             "list_workflows rows have raw_info")
        return raw_description(self.raw)

    @functools.cached_property
    def raw_info(self) -> RawWorkflowExecutionInfo:
        """The execution's info in the shape of Temporal's ``WorkflowExecutionInfo`` (describe and list rows)."""
        return raw_execution_info(self._info())

    @functools.cached_property
    def typed_search_attributes(self) -> TypedSearchAttributes:
        """The search attributes as :class:`~spindle.common.TypedSearchAttributes`.

        A value's type is the one it was set with as a typed attribute; a value set
        from a plain mapping gets the type its JSON value suggests (str -> Keyword,
        list of str -> KeywordList, int -> Int, float -> Double, bool -> Bool), so an
        untyped Text or Datetime value appears as a Keyword string. ``list_workflows``
        rows carry no type tags, and their Datetime values are Unix milliseconds
        (they appear as Int).
        """
        return typed_from_payloads(self._info().search_attributes.indexed_fields)


def _decode_map(converter: DataConverter, fields: Mapping[str, pb.Payload]) -> dict[str, Any]:
    """Each payload decoded as a plain value; one that is not JSON-like stays a ``Payload``."""
    out: dict[str, Any] = {}
    for k, p in fields.items():
        try:
            out[k] = converter.from_payload(p)
        except ValueError:
            out[k] = p
    return out


def describe_execution(converter: DataConverter, info: svc.WorkflowExecutionInfo,
                       resp: svc.DescribeWorkflowExecutionResponse | None = None) -> WorkflowExecutionDescription:
    """The description of a list row (``info``) or of a describe response (``resp``, whose info ``info`` is).

    Pending activities and children are read from ``resp`` only; ``raw`` is ``resp`` when
    given, else ``info``. An unknown status (a newer server) gives ``status=None``.
    """
    pending: list[PendingActivity] = []
    children: list[PendingChild] = []
    if resp is not None:
        for a in resp.pending_activities:
            pending.append(PendingActivity(
                activity_id=a.activity_id, activity_type=a.activity_type, state=a.state, attempt=a.attempt,
                scheduled_event_id=a.scheduled_event_id, last_started_time=time_from_ms(a.last_started_time_ms),
                last_heartbeat_time=time_from_ms(a.last_heartbeat_time_ms),
                heartbeat_details=converter._safe_decode(a.heartbeat_details),
                last_failure=converter.from_failure(a.last_failure) if a.HasField("last_failure") else None))
        for c in resp.pending_children:
            children.append(PendingChild(c.workflow_id, c.run_id, c.workflow_type, c.initiated_event_id))
    try:
        status: WorkflowExecutionStatus | None = WorkflowExecutionStatus(info.status)
    except ValueError:
        status = None
    parent = info.parent_execution if info.HasField("parent_execution") else None
    return WorkflowExecutionDescription(
        id=info.execution.workflow_id,
        run_id=info.execution.run_id,
        workflow_type=info.workflow_type,
        task_queue=info.task_queue,
        status=status,
        start_time=time_from_ms(info.start_time_ms),
        close_time=time_from_ms(info.close_time_ms),
        execution_time=time_from_ms(info.execution_time_ms),
        history_length=info.history_length,
        memo=_decode_map(converter, info.memo.fields),
        search_attributes=_decode_map(converter, info.search_attributes.indexed_fields),
        parent_id=parent.workflow_id if parent and parent.workflow_id else None,
        parent_run_id=parent.run_id if parent and parent.run_id else None,
        first_run_id=info.first_run_id,
        pending_activities=pending,
        pending_children=children,
        versioning_info=versioning_info(info),
        raw=resp if resp is not None else info,
    )
