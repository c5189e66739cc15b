"""OpenTelemetry tracing for clients and workers: :class:`TracingInterceptor` (needs ``opentelemetry-api``,
the ``spindle[opentelemetry]`` extra).

One interceptor object serves both sides: pass it to ``Client.connect(..., interceptors=[...])`` and
to ``Worker(..., interceptors=[...])``. Spans, all in the trace of the client's start:

- ``StartWorkflow:TYPE`` (client): around ``start_workflow``; its context goes into the start's header.
- ``RunWorkflow:TYPE`` (workflow): child of ``StartWorkflow``, emitted once, when the run's first
  workflow task runs live (never while replaying: a worker restart or a cache eviction replays the
  history without emitting it again; nor when that first task is retried after it failed or timed
  out, e.g. its worker was killed: the first attempt emitted it). The workflow's spans are points in time (started and ended
  at once): a run outlives workers, and a span cannot.
- ``StartActivity:TYPE`` / ``StartChildWorkflow:TYPE`` (workflow): children of ``RunWorkflow``,
  emitted when the command is issued live; their context goes into the activity's or child's
  header. A command issued live after the worker replayed the run (the ``RunWorkflow`` span was
  emitted by another worker process) is parented to the start's context instead: same trace.
- ``RunActivity:TYPE`` (activity): one per attempt, child of its ``StartActivity``, lasting as long as
  the attempt, recording the exception if it raises.
- ``SignalWorkflow:NAME``, ``QueryWorkflow:NAME``, ``StartWorkflowUpdate:NAME`` (client).

Inside a workflow, spans are made with the runtime's determinism guards lifted (the SDK's clock and
id generator are not deterministic); that never changes what the workflow does, and nothing is made
while replaying.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import opentelemetry.context
import opentelemetry.propagate
import opentelemetry.trace

from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode

from spindle import workflow
from spindle._interceptors.client import (
    Interceptor as _ClientInterceptor,
)
from spindle._interceptors.client import (
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowInput,
    StartWorkflowUpdateInput,
)
from spindle._interceptors.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    StartActivityInput,
    StartChildWorkflowInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)
from spindle._interceptors.worker import (
    Interceptor as _WorkerInterceptor,
)
from spindle._workflow.context import instance as _workflow_instance
from spindle.api import messages_pb2 as pb
from spindle.converter._data_converter import DataConverter

__all__ = ["TracingInterceptor", "DEFAULT_HEADER_KEY"]

#: The header the span context travels in (a JSON object of the propagator's fields).
DEFAULT_HEADER_KEY = "_tracer-data"

_conv = DataConverter.default


class TracingInterceptor(_ClientInterceptor, _WorkerInterceptor):
    """Client and worker interceptor making OpenTelemetry spans (see the module docs for which).

    Args:
        tracer: the tracer to use (default: ``opentelemetry.trace.get_tracer("spindle")``, i.e. the
            global tracer provider's, looked up when a span is made).
        header_key: the header carrying the span context.
    """

    def __init__(self, tracer: opentelemetry.trace.Tracer | None = None, *,
                 header_key: str = DEFAULT_HEADER_KEY) -> None:
        self._tracer = tracer
        self.header_key = header_key

    @property
    def tracer(self) -> opentelemetry.trace.Tracer:
        """The tracer spans are made with."""
        return self._tracer or opentelemetry.trace.get_tracer("spindle")

    # ------------------------------------------------------------ carrying the context

    def inject(self, headers: dict[str, pb.Payload], context: Context | None = None) -> None:
        """Put ``context`` (default: the current one) into ``headers``."""
        carrier: dict[str, str] = {}
        opentelemetry.propagate.inject(carrier, context=context)
        if carrier:
            headers[self.header_key] = _conv.to_payload(carrier)

    def extract(self, headers: Mapping[str, pb.Payload]) -> Context | None:
        """The context carried in ``headers`` (``None`` if there is none or it cannot be read)."""
        payload = headers.get(self.header_key)
        if payload is None:
            return None
        try:
            carrier = _conv.from_payload(payload, dict)
        except (TypeError, ValueError):
            return None
        if not isinstance(carrier, dict):
            return None
        return opentelemetry.propagate.extract({str(k): str(v) for k, v in carrier.items()})

    @contextmanager
    def span(self, name: str, *, context: Context | None, kind: SpanKind,
             attributes: Mapping[str, Any] | None = None) -> Iterator[opentelemetry.trace.Span]:
        """A span made current for the block; an exception out of the block is recorded and re-raised."""
        with self.tracer.start_as_current_span(name, context=context, kind=kind, attributes=dict(attributes or {}),
                                               record_exception=False, set_status_on_exception=False) as span:
            try:
                yield span
            except BaseException as e:
                span.record_exception(e)
                span.set_status(Status(StatusCode.ERROR, f"{type(e).__name__}: {e}"))
                raise

    def point_span(self, name: str, *, context: Context | None, kind: SpanKind,
                   attributes: Mapping[str, Any] | None = None) -> Context:
        """Emit a span that starts and ends now; return a context with it as the current span."""
        span = self.tracer.start_span(name, context=context, kind=kind, attributes=dict(attributes or {}))
        span.end()
        return opentelemetry.trace.set_span_in_context(span, context)

    # ------------------------------------------------------------ the client

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _TracingClientOutbound(next, self)

    # ------------------------------------------------------------ the worker

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _TracingActivityInbound(next, self)

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput
                                   ) -> type[WorkflowInboundInterceptor]:
        root = self

        class _Bound(_TracingWorkflowInbound):
            interceptor = root

        return _Bound


class _TracingClientOutbound(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, root: TracingInterceptor) -> None:
        super().__init__(next)
        self.root = root

    async def start_workflow(self, input: StartWorkflowInput) -> Any:
        with self.root.span(f"StartWorkflow:{input.workflow}", context=None, kind=SpanKind.CLIENT,
                            attributes={"spindle.workflow_id": input.id}):
            self.root.inject(input.headers)
            return await super().start_workflow(input)

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        with self.root.span(f"SignalWorkflow:{input.signal}", context=None, kind=SpanKind.CLIENT,
                            attributes={"spindle.workflow_id": input.id}):
            self.root.inject(input.headers)
            await super().signal_workflow(input)

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        with self.root.span(f"QueryWorkflow:{input.query}", context=None, kind=SpanKind.CLIENT,
                            attributes={"spindle.workflow_id": input.id}):
            self.root.inject(input.headers)
            return await super().query_workflow(input)

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> Any:
        with self.root.span(f"StartWorkflowUpdate:{input.update}", context=None, kind=SpanKind.CLIENT,
                            attributes={"spindle.workflow_id": input.id, "spindle.update_id": input.update_id}):
            self.root.inject(input.headers)
            return await super().start_workflow_update(input)


class _TracingActivityInbound(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, root: TracingInterceptor) -> None:
        super().__init__(next)
        self.root = root

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        from spindle import activity

        info = activity.info()
        with self.root.span(f"RunActivity:{info.activity_type}", context=self.root.extract(input.headers),
                            kind=SpanKind.SERVER,
                            attributes={"spindle.workflow_id": info.workflow_id, "spindle.activity_id": info.activity_id,
                                        "spindle.attempt": info.attempt}):
            return await super().execute_activity(input)


class _TracingWorkflowInbound(WorkflowInboundInterceptor):
    interceptor: TracingInterceptor  # set on the subclass workflow_interceptor_class returns

    def __init__(self, next: WorkflowInboundInterceptor) -> None:
        super().__init__(next)
        #: The context the run's outbound spans are children of.
        self.context: Context | None = None

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_TracingWorkflowOutbound(outbound, self))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        root = self.interceptor
        self.context = root.extract(input.headers)
        # a retried first workflow task runs live again: the failed (or timed-out) attempt already emitted it
        if not workflow.unsafe.is_replaying() and not _workflow_instance("tracing").earlier_task_failed:
            info = workflow.info()
            with workflow.unsafe.sandbox_unrestricted():
                self.context = root.point_span(
                    f"RunWorkflow:{input.type}", context=self.context, kind=SpanKind.SERVER,
                    attributes={"spindle.workflow_id": info.workflow_id, "spindle.run_id": info.run_id})
        return await super().execute_workflow(input)


class _TracingWorkflowOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, inbound: _TracingWorkflowInbound) -> None:
        super().__init__(next)
        self.inbound = inbound

    def _started(self, name: str, headers: dict[str, pb.Payload], attributes: Mapping[str, Any]) -> None:
        root = self.inbound.interceptor
        with workflow.unsafe.sandbox_unrestricted():
            context = self.inbound.context
            if not workflow.unsafe.is_replaying():
                context = root.point_span(name, context=context, kind=SpanKind.CLIENT, attributes=attributes)
            root.inject(headers, context if context is not None else opentelemetry.context.Context())

    def start_activity(self, input: StartActivityInput) -> Any:
        self._started(f"StartActivity:{input.activity}", input.headers,
                      {"spindle.workflow_id": workflow.info().workflow_id})
        return super().start_activity(input)

    async def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        self._started(f"StartChildWorkflow:{input.workflow}", input.headers,
                      {"spindle.workflow_id": workflow.info().workflow_id})
        return await super().start_child_workflow(input)
