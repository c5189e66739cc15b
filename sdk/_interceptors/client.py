"""Client interceptors, shaped as temporalio's ``temporalio.client.Interceptor``.

``Client.connect(..., interceptors=[...])`` takes :class:`Interceptor` objects; each one's
:meth:`Interceptor.intercept_client` wraps the next :class:`OutboundInterceptor` (the first
interceptor of the list is the outermost). Every call that starts, signals, queries or updates a
workflow goes through the chain with an input whose ``headers`` the interceptor may change: the
headers travel with the request (a start's reach the workflow's ``execute_workflow``, a signal's
its ``handle_signal``). The base class passes each call on to ``next`` unchanged: subclass and
override what you need, calling ``super()``.
"""

from __future__ import annotations

import dataclasses

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from spindle.api import messages_pb2 as pb

__all__ = [
    "Interceptor",
    "OutboundInterceptor",
    "StartWorkflowInput",
    "SignalWorkflowInput",
    "QueryWorkflowInput",
    "StartWorkflowUpdateInput",
]


@dataclasses.dataclass
class StartWorkflowInput:
    """A workflow start (``Client.start_workflow``); ``workflow`` is the type name."""

    workflow: str
    args: Sequence[Any]
    id: str
    task_queue: str
    headers: dict[str, pb.Payload]
    result_type: Any = None
    id_reuse_policy: Any = None
    id_conflict_policy: Any = None
    execution_timeout: timedelta | None = None
    run_timeout: timedelta | None = None
    task_timeout: timedelta | None = None
    memo: Mapping[str, Any] | None = None
    search_attributes: Any = None
    start_delay: timedelta | None = None
    start_signal: str | None = None
    start_signal_args: Sequence[Any] = ()
    request_id: str | None = None
    cron_schedule: str = ""


@dataclasses.dataclass
class SignalWorkflowInput:
    """A signal (``WorkflowHandle.signal``); ``signal`` is the signal's name."""

    id: str
    run_id: str | None
    signal: str
    args: Sequence[Any]
    headers: dict[str, pb.Payload]


@dataclasses.dataclass
class QueryWorkflowInput:
    """A query (``WorkflowHandle.query``); ``query`` is the query's name."""

    id: str
    run_id: str | None
    query: str
    args: Sequence[Any]
    headers: dict[str, pb.Payload]
    result_type: Any = None
    timeout: timedelta | None = None


@dataclasses.dataclass
class StartWorkflowUpdateInput:
    """An update (``WorkflowHandle.update``/``start_update``/``execute_update``); ``update`` is its name."""

    id: str
    run_id: str | None
    update_id: str
    update: str
    args: Sequence[Any]
    headers: dict[str, pb.Payload]
    wait_for_stage: Any
    result_type: Any = None
    rpc_timeout: timedelta | None = None


class OutboundInterceptor:
    """Calls a client makes; pass them on to ``next`` (the base class does)."""

    def __init__(self, next: OutboundInterceptor) -> None:
        self.next = next

    async def start_workflow(self, input: StartWorkflowInput) -> Any:
        """Start the workflow; returns its ``WorkflowHandle``."""
        return await self.next.start_workflow(input)

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        """Send the signal."""
        await self.next.signal_workflow(input)

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        """Run the query; returns its decoded result."""
        return await self.next.query_workflow(input)

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> Any:
        """Send the update; returns its ``WorkflowUpdateHandle`` once ``wait_for_stage`` is reached."""
        return await self.next.start_workflow_update(input)


class Interceptor:
    """A client interceptor: :meth:`intercept_client` wraps the next outbound interceptor."""

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        """Return the interceptor the client calls instead of ``next`` (default: ``next`` itself)."""
        return next
