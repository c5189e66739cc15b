"""The Spindle client: start and manage workflows, namespaces and async activities.

``Client.connect("host:port")`` talks gRPC to a control plane;
``Client.connect("embedded:./spindle.db")`` starts an in-process control plane on a
SQLite file that the client owns and stops on ``close()``. Every payload of every
request is encoded by the client's codec chain and every payload of every response
decoded, so the server only ever stores encoded bytes.
"""

from __future__ import annotations

import asyncio

import dataclasses
import datetime
import functools
import os
import socket
import uuid

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

import grpc
import grpc.aio

from google.protobuf.message import Message

from spindle.api import WORKFLOW_ALREADY_STARTED_KEY
from spindle.api import messages_pb2 as pb, service_pb2 as svc, service_pb2_grpc
from spindle import exceptions as E
from spindle.client import _batch
from spindle.client._batch import BatchOperationSummary
from spindle.client._reset import ResetType, reset_workflow
from spindle.client._api_keys import ApiKey, MetadataStub, check_api_key, create_request
from spindle.converter._serialization_context import SerializationContext, WorkflowSerializationContext
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._data_converter import DataConverter
from spindle.common._enums import WorkflowExecutionStatus, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from spindle.common._history import History, HistoryEvent
from spindle._interceptors.client import (
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowInput,
    StartWorkflowUpdateInput,
)
from spindle._interceptors.worker import check_interceptors
from spindle.converter._payload_visitor import decode_message, encode_message
from spindle.client._raw_description import RawWorkflowDescription, RawWorkflowExecutionInfo, raw_description, raw_execution_info
from spindle.client._schedule import ScheduleAsyncIterator, ScheduleHandle, create_schedule
from spindle.client._schedule_types import Schedule, ScheduleBackfill
from spindle.client._retry_delay import call_with_retries, retry_delay, throttled_wait
from spindle.common._search_attributes import TypedSearchAttributes, search_attributes_to_payloads, typed_from_payloads
from spindle.client._tls import TLSConfig, as_tls_config, explain_connect_failure, is_tls_refusal, open_channel
from spindle.client._update import WorkflowUpdateHandle, WorkflowUpdateStage, send_update

__all__ = [
    "Client",
    "WorkflowHandle",
    "WorkflowExecutionDescription",
    "PendingActivity",
    "PendingChild",
    "NamespaceDescription",
    "AsyncActivityHandle",
    "WorkflowUpdateHandle",
    "WorkflowUpdateStage",
]

R = TypeVar("R")
U = TypeVar("U")

_UTC = datetime.timezone.utc
_EMBEDDED_PREFIX = "embedded:"
# A long poll for a result is answered by the server within 60 s; give it headroom.
_LONG_POLL_TIMEOUT = 70.0
#: How long idempotent calls keep retrying while the server is unavailable (e.g. restarting).
_RETRY_BUDGET = 15.0
#: Calls that may be repeated safely: reads, and writes deduplicated by their request id.
_IDEMPOTENT = frozenset({
    "GetSystemInfo", "DescribeNamespace", "ListNamespaces", "StartWorkflowExecution", "SignalWorkflowExecution",
    "SignalWithStartWorkflowExecution", "RequestCancelWorkflowExecution", "DescribeWorkflowExecution",
    "GetWorkflowExecutionHistory", "ListWorkflowExecutions", "CountWorkflowExecutions", "QueryWorkflow",
    "CreateSchedule", "DescribeSchedule", "ListSchedules",  # a create is deduplicated by its request id
})
_SA_PREFIX = "SEARCH_ATTRIBUTE_TYPE_"
_QUERY_ATTR = "__spindle_query_definition__"
_SIGNAL_ATTR = "__spindle_signal_definition__"
_UPDATE_ATTR = "__spindle_update_definition__"
# A definition may rewrite its start arguments (a DslWorkflow wraps its inputs with
# its DAG): ``defn.__spindle_start_args__(args) -> args``. Looked up by name so
# that this module never imports ``spindle.dsl``.
_START_ARGS_ATTR = "__spindle_start_args__"


def _default_identity() -> str:
    return f"{os.getpid()}@{socket.gethostname()}"


def _ms(d: datetime.timedelta | None) -> int:
    return 0 if d is None else int(d.total_seconds() * 1000)


def _time(ms: int) -> datetime.datetime | None:
    return datetime.datetime.fromtimestamp(ms / 1000, _UTC) if ms else None


def _status_name(e: grpc.aio.AioRpcError) -> str:
    code = e.code()
    return code.name if code is not None else "UNKNOWN"


def map_rpc_error(e: grpc.aio.AioRpcError, *, not_found: str = "workflow", workflow_id: str = "",
                  workflow_type: str = "") -> E.RPCError:
    """Translate a gRPC error into the SDK's taxonomy.

    ``not_found`` says what a NOT_FOUND means for this call: ``"workflow"`` (a
    :class:`WorkflowNotFoundError`), or ``"rpc"`` (a plain :class:`RPCError`). A
    message that mentions a namespace always gives :class:`NamespaceNotFoundError`.
    An ALREADY_EXISTS that carries a refused start's details (the existing run's id, in
    the trailing metadata) gives :class:`WorkflowAlreadyStartedError` with ``run_id``
    filled; ``workflow_id`` / ``workflow_type`` are the refused start's.
    """
    msg = e.details() or _status_name(e)
    code = e.code()
    if code == grpc.StatusCode.ALREADY_EXISTS:
        run_id = _already_started_run_id(e)
        if run_id is not None:
            return E.WorkflowAlreadyStartedError(msg, workflow_id=workflow_id, workflow_type=workflow_type,
                                                 run_id=run_id)
    if code == grpc.StatusCode.NOT_FOUND:
        if "namespace" in msg.lower():
            return E.NamespaceNotFoundError(msg)
        if not_found == "workflow":
            return E.WorkflowNotFoundError(msg)
    return E.RPCError(msg, status=_status_name(e))


def _already_started_run_id(e: grpc.aio.AioRpcError) -> str | None:
    """The existing run's id from an ALREADY_EXISTS status's details, or None when it carries none."""
    try:
        trailing = e.trailing_metadata() or ()
    except Exception:  # noqa: BLE001 - a hand-made error without metadata
        return None
    for key, value in trailing:
        if key == WORKFLOW_ALREADY_STARTED_KEY and isinstance(value, bytes):
            details = pb.WorkflowExecutionAlreadyStartedFailure()
            try:
                details.ParseFromString(value)
            except Exception:  # noqa: BLE001 - not a details message: as if absent
                return None
            return details.run_id
    return None


def _type_name(target: Any) -> tuple[str, Any]:
    """(workflow type name, result type hint) of a definition, decorated target or name."""
    if isinstance(target, str):
        return target, None
    from spindle._workflow.defn import WorkflowDefinition

    d = WorkflowDefinition.from_target(target)
    return d.name, d.return_type


def _handler(target: Any, attr: str) -> tuple[str, Any]:
    """(wire name, return type hint) of a signal/query/update given its method or name."""
    if isinstance(target, str):
        return target, None
    d = getattr(target, attr, None)
    if d is None:
        for a in (_SIGNAL_ATTR, _QUERY_ATTR, _UPDATE_ATTR):
            d = getattr(target, a, None)
            if d is not None:
                break
    if d is None:
        raise TypeError(
            f"expected a handler name or a method decorated with @workflow.signal/query/update, got {target!r}"
        )
    return str(d.name), d.handler.return_type


def _sa_type_value(t: Any) -> Any:
    if isinstance(t, int):
        return t
    s = str(t)
    if s.startswith(_SA_PREFIX):
        key = s
    else:
        # "KeywordList" / "keyword_list" / "KEYWORD_LIST" -> SEARCH_ATTRIBUTE_TYPE_KEYWORD_LIST
        if "_" in s or s.isupper() or s.islower():
            snake = s
        else:
            snake = "".join("_" + c if c.isupper() and i else c for i, c in enumerate(s))
        key = _SA_PREFIX + snake.upper()
    try:
        return int(svc.SearchAttributeType.Value(key))
    except ValueError:
        allowed = "Keyword, Text, Int, Double, Bool, Datetime, KeywordList"
        raise ValueError(f"unknown search attribute type {t!r} (use one of: {allowed})") from None


def _sa_type_name(v: int) -> str:
    name = svc.SearchAttributeType.Name(v).removeprefix(_SA_PREFIX)
    return "".join(part.capitalize() for part in name.split("_"))


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


@dataclasses.dataclass(frozen=True)
class NamespaceDescription:
    """A namespace as ``describe_namespace``/``list_namespaces`` report it.

    ``search_attributes`` maps custom attribute names to type names such as
    ``"Keyword"``. ``rps_limit`` is the namespace's request rate limit (requests per
    second per server process; 0 = unlimited).
    """

    name: str
    id: str
    description: str
    owner_email: str
    retention: datetime.timedelta | None
    search_attributes: Mapping[str, str]
    archival_uri: str
    state: str
    create_time: datetime.datetime | None
    update_time: datetime.datetime | None
    rps_limit: float = 0.0

    @classmethod
    def from_proto(cls, info: svc.NamespaceInfo) -> NamespaceDescription:
        """Build from the wire message."""
        return cls(
            name=info.name,
            id=info.id,
            description=info.description,
            owner_email=info.owner_email,
            retention=datetime.timedelta(milliseconds=info.retention_ms) if info.retention_ms else None,
            search_attributes={k: _sa_type_name(v) for k, v in info.search_attributes.items()},
            archival_uri=info.archival_uri,
            state=info.state,
            create_time=_time(info.create_time_ms),
            update_time=_time(info.update_time_ms),
            rps_limit=info.rps_limit,
        )


class Client:
    """A connection to a Spindle control plane, bound to one namespace.

    Create with :meth:`connect`; close with :meth:`close` (or ``async with``). A
    client is cheap to share between tasks and workers of one event loop.
    """

    def __init__(
        self,
        stub: Any,
        *,
        namespace: str = "default",
        data_converter: DataConverter | None = None,
        codecs: Sequence[PayloadCodec] = (),
        identity: str | None = None,
        channel: grpc.aio.Channel | None = None,
        embedded: Any = None,
        interceptors: Sequence[Interceptor] = (),
    ) -> None:
        self._stub = stub
        self.namespace = namespace
        self.data_converter = data_converter or DataConverter.default
        chain = tuple(codecs)
        if self.data_converter.payload_codec is not None:
            chain += (self.data_converter.payload_codec,)
        #: The codec chain every payload goes through: ``codecs``, then ``data_converter.payload_codec``.
        self.codecs: tuple[PayloadCodec, ...] = chain
        self.identity = identity or _default_identity()
        self._channel = channel
        self._embedded = embedded
        self._closed = False
        self._api_key = stub.api_key if isinstance(stub, MetadataStub) else None
        self.interceptors: tuple[Interceptor, ...] = check_interceptors(
            interceptors, "Client.connect(interceptors=...)", Interceptor, "spindle.client.Interceptor")
        outbound: OutboundInterceptor = _ClientOutboundImpl(self)
        for interceptor in reversed(self.interceptors):
            outbound = interceptor.intercept_client(outbound)
        self._outbound = outbound

    @classmethod
    async def connect(
        cls,
        target_host: str,
        *,
        namespace: str = "default",
        data_converter: DataConverter | None = None,
        codecs: Sequence[PayloadCodec] = (),
        identity: str | None = None,
        api_key: str | None = None,
        tls: bool | TLSConfig | None = None,
        interceptors: Sequence[Interceptor] = (),
    ) -> Client:
        """Connect to ``target_host`` (Temporal's parameter name: ``Client.connect(**{"target_host": ...})`` works).

        Args:
            target_host: ``"host:port"`` or ``"embedded:PATH"`` for an
                in-process control plane on the SQLite file ``PATH`` (``:memory:``
                works too); the client owns it and stops it on :meth:`close`.
            namespace: the namespace every call of this client addresses.
            data_converter: converts values (default: :attr:`DataConverter.default`). Its
                ``payload_codec``, if set, is applied after ``codecs``.
            codecs: payload codecs, applied in order on the way out (reverse on the way in).
            identity: names this client (and its workers) in histories.
            api_key: an API key (``spk_...``) sent with every call of this client and its
                workers, as ``authorization: Bearer ...`` metadata; change it later with
                :attr:`api_key`. Ignored by an embedded control plane (it is your own process).
            tls: ``None``/``False``: plaintext. ``True``: TLS, the server's certificate
                checked against gRPC's default (public) roots. A :class:`spindle.service.TLSConfig`:
                TLS with its CA, server name and client certificate (mutual TLS). Not
                used with ``embedded:``.
            interceptors: :class:`spindle.client.Interceptor` objects; starts, signals,
                queries and updates go through them (the first is the outermost), and
                they may add headers that travel with the request.

        Raises:
            RPCError: the server cannot be reached (``status="UNAVAILABLE"``), or it refuses
                the key (``status="UNAUTHENTICATED"``: unknown, wrong, revoked or expired); a
                TLS problem (an untrusted server certificate, a server that refuses this
                client's certificate or wants one) says so in the message and is not retried.
            ValueError: ``target_host`` is empty or not a string, ``api_key`` is not a
                printable key, or ``tls`` is given with ``embedded:``.
            TypeError: ``tls`` is not a bool, None or a TLSConfig, or ``interceptors`` holds
                something that is not a ``spindle.client.Interceptor``.
            Exception: the embedded control plane's errors (e.g. the file is locked
                by another process) propagate unchanged.
        """
        if not isinstance(target_host, str) or not target_host:
            raise ValueError(f"target_host: expected 'host:port' or 'embedded:PATH', got {target_host!r}")
        api_key = check_api_key(api_key)
        tls_config = as_tls_config(tls)
        interceptors = check_interceptors(interceptors, "Client.connect(interceptors=...)", Interceptor,
                                          "spindle.client.Interceptor")
        if target_host.startswith(_EMBEDDED_PREFIX):
            if tls_config is not None:
                raise ValueError("tls: an embedded control plane runs in this process; there is no connection to secure")
            from spindle.controlplane import embedded

            cp = await embedded.start(target_host[len(_EMBEDDED_PREFIX):])
            client = cls(cp.stub, namespace=namespace, data_converter=data_converter, codecs=codecs,
                         identity=identity, embedded=cp, interceptors=interceptors)
            client._api_key = api_key
            return client
        channel = open_channel(
            target_host,
            tls_config,
            options=[
                ("grpc.max_receive_message_length", 128 * 1024 * 1024),
                ("grpc.max_send_message_length", 128 * 1024 * 1024),
                # gRPC's default reconnect backoff grows to 120 s: after a server restart (or a few
                # in a row) workers and clients would keep failing fast with UNAVAILABLE long after
                # the server is back. Retry the connection every 100 ms .. 2 s instead.
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 2000),
            ],
        )
        client = cls(MetadataStub(service_pb2_grpc.WorkflowServiceStub(channel), api_key), namespace=namespace,
                     data_converter=data_converter, codecs=codecs, identity=identity, channel=channel,
                     interceptors=interceptors)
        closed_in_a_row = 0

        def refused(e: grpc.aio.AioRpcError) -> bool:
            # A failed handshake is not transient. A connection the server closes again and again
            # (three times, 0.35 s) is a refused handshake too: a server that requires a client
            # certificate, or a TLS server reached in plaintext (a restarting server refuses the
            # connection instead).
            nonlocal closed_in_a_row
            details = e.details() or ""
            closed_in_a_row = closed_in_a_row + 1 if "socket closed" in details.lower() else 0
            return is_tls_refusal(details) or closed_in_a_row >= 3

        try:
            await client._rpc("GetSystemInfo", svc.GetSystemInfoRequest(), timeout=10.0, not_found="rpc",
                              stop_retrying=refused)
        except E.RPCError as e:
            await channel.close()
            hint = explain_connect_failure(e.message, target_host, tls_config) if e.status == "UNAVAILABLE" else None
            if hint is not None:
                raise E.RPCError(hint, status=e.status) from e
            raise
        except BaseException:
            await channel.close()
            raise
        return client

    async def close(self) -> None:
        """Close the connection (and stop the embedded control plane this client owns). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._channel is not None:
            await self._channel.close()
        if self._embedded is not None:
            await self._embedded.stop()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def api_key(self) -> str | None:
        """The API key sent with every call (None: none). Setting it applies to every later call of this
        client and its workers (key rotation without reconnecting), as in temporalio."""
        return self._api_key

    @api_key.setter
    def api_key(self, value: str | None) -> None:
        value = check_api_key(value)
        if isinstance(self._stub, MetadataStub):
            self._stub.api_key = value
        self._api_key = value

    @property
    def stub(self) -> Any:
        """The raw ``WorkflowService`` stub (for tools; payloads there are not codec-processed)."""
        return self._stub

    # ------------------------------------------------------------------ plumbing

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None,
                   not_found: str = "workflow",
                   stop_retrying: Callable[[grpc.aio.AioRpcError], bool] | None = None) -> Any:
        """Call ``method``; calls that are safe to repeat are retried while the server is unavailable or throttles them.

        Starts and signals carry a request id set once per user call, so a retry after a
        reply lost in a crash is recorded once; reads are naturally repeatable. A throttled
        call (RESOURCE_EXHAUSTED with a retry delay: the namespace is over its request rate
        limit) is retried after the server's delay plus a jittered backoff. Retries stop
        after ``_RETRY_BUDGET`` seconds (or when the next wait would pass it), or at once
        when ``stop_retrying(error)`` says so, and the last error is raised.
        """
        fn = getattr(self._stub, method)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + _RETRY_BUDGET
        delay = 0.05
        attempt = 0
        while True:
            try:
                if timeout is None:
                    return await fn(request)
                return await fn(request, timeout=timeout)
            except grpc.aio.AioRpcError as e:
                attempt += 1
                wait = None
                if method in _IDEMPOTENT and not (stop_retrying is not None and stop_retrying(e)):
                    wait = delay if e.code() == grpc.StatusCode.UNAVAILABLE else throttled_wait(e, attempt)
                if wait is None or loop.time() + wait > give_up:
                    raise map_rpc_error(e, not_found=not_found) from e
            await asyncio.sleep(wait)
            delay = min(delay * 2, 1.0)

    async def _history_page(self, execution: pb.WorkflowExecution, token: bytes = b"", *, wait: bool,
                            close_event_only: bool = False) -> svc.GetWorkflowExecutionHistoryResponse:
        """One page of a run's history from ``token`` (payloads still encoded).

        With ``wait`` the server holds the call until there are events past ``token`` or the
        run closes (a long poll); a long poll that outlives its deadline is asked again from
        the same place, so callers never see DEADLINE_EXCEEDED.
        """
        req = svc.GetWorkflowExecutionHistoryRequest(namespace=self.namespace, execution=execution,
                                                     next_page_token=token, wait_new_event=wait,
                                                     close_event_only=close_event_only)
        while True:
            try:
                resp: svc.GetWorkflowExecutionHistoryResponse = await self._rpc(
                    "GetWorkflowExecutionHistory", req, timeout=_LONG_POLL_TIMEOUT)
                return resp
            except E.RPCError as e:
                if e.status != "DEADLINE_EXCEEDED":
                    raise

    async def _encode(self, msg: Message, workflow_id: str = "",
                      context: WorkflowSerializationContext | None = None) -> None:
        """Encode ``msg``'s payloads; ``workflow_id`` (or ``context``) names the workflow where ``msg`` does not."""
        if self.codecs:
            await encode_message(self.codecs, msg,
                                 context=context or WorkflowSerializationContext(self.namespace, workflow_id))

    async def _decode(self, msg: Message, workflow_id: str = "") -> None:
        """Decode ``msg``'s payloads; ``workflow_id`` names the workflow where ``msg`` does not."""
        if self.codecs:
            await decode_message(self.codecs, msg, context=WorkflowSerializationContext(self.namespace, workflow_id))

    def _payload_map(self, values: Mapping[str, Any] | None) -> dict[str, pb.Payload]:
        if not values:
            return {}
        return {k: self.data_converter.to_payload(v) for k, v in values.items()}

    def _decode_map(self, fields: Mapping[str, pb.Payload]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, p in fields.items():
            try:
                out[k] = self.data_converter.from_payload(p)
            except ValueError:
                out[k] = p
        return out

    def _describe(self, info: svc.WorkflowExecutionInfo, resp: svc.DescribeWorkflowExecutionResponse | None = None
                  ) -> WorkflowExecutionDescription:
        conv = self.data_converter
        pending: list[PendingActivity] = []
        children: list[PendingChild] = []
        if resp is not None:
            for a in resp.pending_activities:
                pending.append(PendingActivity(
                    activity_id=a.activity_id, activity_type=a.activity_type, state=a.state, attempt=a.attempt,
                    scheduled_event_id=a.scheduled_event_id, last_started_time=_time(a.last_started_time_ms),
                    last_heartbeat_time=_time(a.last_heartbeat_time_ms),
                    heartbeat_details=conv._safe_decode(a.heartbeat_details),
                    last_failure=conv.from_failure(a.last_failure) if a.HasField("last_failure") else None))
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
            start_time=_time(info.start_time_ms),
            close_time=_time(info.close_time_ms),
            execution_time=_time(info.execution_time_ms),
            history_length=info.history_length,
            memo=self._decode_map(info.memo.fields),
            search_attributes=self._decode_map(info.search_attributes.indexed_fields),
            parent_id=parent.workflow_id if parent and parent.workflow_id else None,
            parent_run_id=parent.run_id if parent and parent.run_id else None,
            first_run_id=info.first_run_id,
            pending_activities=pending,
            pending_children=children,
            raw=resp if resp is not None else info,
        )

    # ------------------------------------------------------------------ workflows

    async def start_workflow(
        self,
        workflow: Any,
        *args: Any,
        id: str,
        task_queue: str,
        id_reuse_policy: WorkflowIDReusePolicy = WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        id_conflict_policy: WorkflowIDConflictPolicy = WorkflowIDConflictPolicy.FAIL,
        execution_timeout: datetime.timedelta | None = None,
        run_timeout: datetime.timedelta | None = None,
        task_timeout: datetime.timedelta | None = None,
        memo: Mapping[str, Any] | None = None,
        search_attributes: TypedSearchAttributes | Mapping[str, Any] | None = None,
        start_delay: datetime.timedelta | None = None,
        start_signal: Any = None,
        start_signal_args: Sequence[Any] = (),
        result_type: Any = None,
        request_id: str | None = None,
        cron_schedule: str = "",
    ) -> WorkflowHandle[Any]:
        """Start a workflow run and return its handle (without waiting for it).

        Args:
            workflow: a ``@workflow.defn`` class, its ``@workflow.run`` method, a
                decorated function, a DSL definition, or a workflow type name.
            *args: the workflow's arguments (converted by the data converter).
                For a DSL definition (``spindle.dsl.load(...)`` or its ``.definition``)
                the one argument is the inputs mapping: it is checked and sent
                with the compiled DAG (``DslWorkflow.start_input(inputs)``), so
                the execution keeps the DAG it started with.
            id: the workflow id (unique among running executions of the namespace).
            task_queue: where workers pick the run's tasks up.
            id_reuse_policy: may a *closed* run's id be reused.
            id_conflict_policy: what to do when a run with this id is *running*:
                ``FAIL`` (raise), ``USE_EXISTING`` (return its handle instead),
                ``TERMINATE_EXISTING`` (terminate it and start this one, in one step).
            execution_timeout / run_timeout / task_timeout: limits of the whole chain
                of runs, of one run, and of one workflow task.
            memo: non-indexed values shown by ``describe()``.
            search_attributes: indexed values for ``list_workflows`` queries, as a
                :class:`~spindle.common.TypedSearchAttributes` (values checked against
                their keys' types here) or a mapping of name to value (a list of str for
                a KeywordList); the names must be registered in the namespace.
            start_delay: wait this long before the first workflow task.
            start_signal / start_signal_args: signal-with-start: deliver this signal
                (starting the workflow if it is not running).
            result_type: type hint for ``handle.result()`` (default: the run method's
                return annotation).
            cron_schedule: legacy cron (prefer :meth:`create_schedule`): a five-field
                expression or an ``@daily``-style alias, in UTC. The first run waits for
                the first tick; each run that completes or fails is followed by a new run
                with the same arguments at the next tick; cancelling or terminating the
                current run ends the chain. Not combinable with ``start_delay``.

        Raises:
            WorkflowAlreadyStartedError: a run with this id exists and the policies forbid another.
            NamespaceNotFoundError: the client's namespace does not exist.
            RPCError: the server refused the request (e.g. an unknown search attribute;
                ``RESOURCE_EXHAUSTED`` when the namespace stayed over its request rate limit
                for longer than the client's retry budget, about 15 s: throttled starts are
                retried after the server's delay, and the request id keeps a retried start
                from starting twice).
            TypeError: an argument cannot be converted, or a typed search attribute's
                value does not fit its key.
            spindle.dsl.DslError: a DSL definition's inputs do not match its declarations
                (nothing is started).
        """
        name, hint = _type_name(workflow)
        prepare = getattr(workflow, _START_ARGS_ATTR, None) if not isinstance(workflow, str) else None
        if prepare is not None:
            args = tuple(prepare(args))
        signal_name = _handler(start_signal, _SIGNAL_ATTR)[0] if start_signal is not None else None
        return cast(WorkflowHandle[Any], await self._outbound.start_workflow(StartWorkflowInput(
            workflow=name, args=args, id=id, task_queue=task_queue, headers={}, result_type=result_type or hint,
            id_reuse_policy=id_reuse_policy, id_conflict_policy=id_conflict_policy,
            execution_timeout=execution_timeout, run_timeout=run_timeout, task_timeout=task_timeout, memo=memo,
            search_attributes=search_attributes, start_delay=start_delay, start_signal=signal_name,
            start_signal_args=start_signal_args, request_id=request_id, cron_schedule=cron_schedule)))

    async def _start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any]:
        """The end of the interceptor chain for :meth:`start_workflow`."""
        name, id, task_queue, args = input.workflow, input.id, input.task_queue, input.args
        execution_timeout, run_timeout, task_timeout = input.execution_timeout, input.run_timeout, input.task_timeout
        id_reuse_policy, id_conflict_policy = input.id_reuse_policy, input.id_conflict_policy
        memo, search_attributes, request_id = input.memo, input.search_attributes, input.request_id
        start_delay, start_signal, start_signal_args = input.start_delay, input.start_signal, input.start_signal_args
        conv = self.data_converter
        start = svc.StartWorkflowExecutionRequest(
            namespace=self.namespace,
            workflow_id=id,
            workflow_type=name,
            task_queue=task_queue,
            input=conv.to_payloads(args),
            execution_timeout_ms=_ms(execution_timeout),
            run_timeout_ms=_ms(run_timeout),
            task_timeout_ms=_ms(task_timeout),
            identity=self.identity,
            request_id=request_id or str(uuid.uuid4()),
            workflow_id_reuse_policy=int(id_reuse_policy),  # type: ignore[arg-type]
            workflow_id_conflict_policy=int(id_conflict_policy),  # type: ignore[arg-type]
            workflow_start_delay_ms=_ms(start_delay),
            cron_schedule=input.cron_schedule,
        )
        for k, v in self._payload_map(memo).items():
            start.memo.fields[k].CopyFrom(v)
        for k, v in search_attributes_to_payloads(search_attributes, conv).items():
            start.search_attributes.indexed_fields[k].CopyFrom(v)
        for k, v in input.headers.items():
            start.header.fields[k].CopyFrom(v)
        try:
            if start_signal is not None:
                req_sws = svc.SignalWithStartWorkflowExecutionRequest(
                    start=start, signal_name=start_signal, signal_input=conv.to_payloads(start_signal_args))
                await self._encode(req_sws, start.workflow_id)
                # retried while throttled: the request id makes a repeated start count once
                resp: Any = await call_with_retries(self._stub.SignalWithStartWorkflowExecution, req_sws,
                                                    budget=_RETRY_BUDGET)
            else:
                await self._encode(start)
                resp = await call_with_retries(self._stub.StartWorkflowExecution, start, budget=_RETRY_BUDGET)
        except grpc.aio.AioRpcError as e:
            mapped = map_rpc_error(e, workflow_id=id, workflow_type=name)
            if e.code() == grpc.StatusCode.ALREADY_EXISTS and not isinstance(mapped, E.WorkflowAlreadyStartedError):
                mapped = E.WorkflowAlreadyStartedError(e.details() or "workflow already started", workflow_id=id,
                                                       workflow_type=name)
            raise mapped from e
        return WorkflowHandle(self, id, run_id=resp.run_id, result_run_id=resp.run_id,
                              first_execution_run_id=resp.run_id, result_type=input.result_type,
                              target_run=False)

    async def execute_workflow(self, workflow: Any, *args: Any, **kwargs: Any) -> Any:
        """Start a workflow (same arguments as :meth:`start_workflow`) and wait for its result.

        Raises:
            WorkflowFailureError: the run failed, was cancelled, terminated or timed out.
            WorkflowAlreadyStartedError, RPCError: see :meth:`start_workflow`.
        """
        handle = await self.start_workflow(workflow, *args, **kwargs)
        return await handle.result()

    def get_workflow_handle(self, workflow_id: str, *, run_id: str | None = None,
                            first_execution_run_id: str | None = None, result_type: Any = None,
                            workflow: Any = None) -> WorkflowHandle[Any]:
        """A handle to an existing execution (no RPC is made).

        Without ``run_id`` the handle addresses the latest run of ``workflow_id``.
        ``workflow`` (a definition) supplies the result type hint.
        """
        if result_type is None and workflow is not None:
            result_type = _type_name(workflow)[1]
        return WorkflowHandle(self, workflow_id, run_id=run_id, result_run_id=run_id,
                              first_execution_run_id=first_execution_run_id, result_type=result_type,
                              target_run=True)

    def get_workflow_handle_for(self, workflow: Callable[..., Awaitable[U]], workflow_id: str, *,
                                run_id: str | None = None, first_execution_run_id: str | None = None
                                ) -> WorkflowHandle[U]:
        """A handle typed by ``workflow`` (its ``@workflow.run`` method or a decorated function); no RPC is made.

        As :meth:`get_workflow_handle` with ``workflow=``: ``result()`` decodes into the
        run method's return annotation (Temporal's ``get_workflow_handle_for``).

        Raises:
            TypeError: ``workflow`` is not a workflow definition.
        """
        return self.get_workflow_handle(workflow_id, run_id=run_id, first_execution_run_id=first_execution_run_id,
                                        workflow=workflow)

    async def list_workflows(self, query: str = "", *, page_size: int = 1000
                             ) -> AsyncIterator[WorkflowExecutionDescription]:
        """Iterate over the executions matching a visibility ``query`` (all pages).

        Example: ``async for wf in client.list_workflows("WorkflowType = 'Order' AND
        ExecutionStatus = 'Running'"): ...``

        Visibility is eventually consistent, as in Temporal: a run's row (its
        start, status, search attributes and history length) is written with the
        server's next acknowledgement batch, tens of milliseconds after the change,
        so a listing right after a start may not show the run yet. ``describe()``
        is always current.

        Raises:
            RPCError: the query is malformed (``status="INVALID_ARGUMENT"``).
        """
        token: bytes | None = None
        while True:
            rows, token = await self.list_workflows_page(query, page_size=page_size, next_page_token=token)
            for row in rows:
                yield row
            if token is None:
                return

    async def list_workflows_page(self, query: str = "", *, page_size: int = 100,
                                  next_page_token: bytes | None = None
                                  ) -> tuple[list[WorkflowExecutionDescription], bytes | None]:
        """One page of the executions matching ``query``, and the token of the next page.

        Pass the returned token back as ``next_page_token`` to read the next page;
        it is ``None`` after the last page. A token may lead to an empty page when
        the previous page happened to end exactly at the last row. Tokens are
        opaque and stay valid across calls (for paging back and forth in a UI,
        keep the token of each page).

        Raises:
            RPCError: the query is malformed or the token is not one the server
                gave (``status="INVALID_ARGUMENT"``).
        """
        req = svc.ListWorkflowExecutionsRequest(namespace=self.namespace, page_size=page_size,
                                                next_page_token=next_page_token or b"", query=query)
        resp = await self._rpc("ListWorkflowExecutions", req)
        await self._decode(resp)
        return [self._describe(info) for info in resp.executions], (resp.next_page_token or None)

    # ------------------------------------------------------------------ batch operations (docs/RESET.md)
    async def batch_terminate(self, query: str, *, reason: str = "", rps: float | None = None,
                              batch_id: str | None = None) -> BatchOperationSummary:
        """Terminate every execution ``query`` matches; returns the summary (done, skipped, failed with reasons).

        The matching executions are read first, then terminated at most ``rps`` a second.
        An execution already closed counts as skipped, so running the same batch again
        after an interruption is safe. Never raises for one execution's failure.

        Raises:
            RPCError: the query is malformed (``status="INVALID_ARGUMENT"``; nothing was changed).
            ValueError: an empty query or a non-positive ``rps``.
        """
        return await _batch.batch(self, "terminate", query, reason=reason, rps=rps, batch_id=batch_id)

    async def batch_cancel(self, query: str, *, reason: str = "", rps: float | None = None,
                           batch_id: str | None = None) -> BatchOperationSummary:
        """Request cancellation of every execution ``query`` matches (see :meth:`batch_terminate`)."""
        return await _batch.batch(self, "cancel", query, reason=reason, rps=rps, batch_id=batch_id)

    async def batch_signal(self, query: str, signal: Any, *args: Any, rps: float | None = None,
                           batch_id: str | None = None) -> BatchOperationSummary:
        """Signal every execution ``query`` matches with ``args`` (see :meth:`batch_terminate`).

        Each signal carries a request id derived from the batch id and the run, so a re-run
        of the batch does not deliver it twice; pass a new ``batch_id`` to signal again.
        """
        name, _ = _handler(signal, _SIGNAL_ATTR)
        return await _batch.batch(self, "signal", query, signal=name, args=args, rps=rps, batch_id=batch_id)

    async def batch_reset(self, query: str, *, type: ResetType = ResetType.LAST_WORKFLOW_TASK, reason: str = "",
                          reapply_signals: bool = True, rps: float | None = None,
                          batch_id: str | None = None) -> BatchOperationSummary:
        """Reset every execution ``query`` matches to its first or last completed workflow task.

        See :meth:`WorkflowHandle.reset` and :meth:`batch_terminate`. A re-run of the batch
        does not reset a workflow id twice (its request id derives from the batch id and
        the workflow id).
        """
        return await _batch.batch(self, "reset", query, reason=reason, reset_type=type,
                                  reapply_signals=reapply_signals, rps=rps, batch_id=batch_id)

    async def count_workflows(self, query: str = "") -> int:
        """The number of executions matching ``query``.

        Raises:
            RPCError: the query is malformed.
        """
        resp = await self._rpc("CountWorkflowExecutions",
                               svc.CountWorkflowExecutionsRequest(namespace=self.namespace, query=query))
        return int(resp.count)

    async def count_workflows_by(self, query: str = "", group_by: str | Sequence[str] = "ExecutionStatus"
                                 ) -> dict[Any, int]:
        """Count the executions matching ``query`` per value of ``group_by``, in one call.

        ``client.count_workflows_by("WorkflowType = 'Order'")`` returns e.g.
        ``{"Running": 3, "Completed": 40}`` (statuses by their visibility name;
        values with no execution are absent). When ``group_by`` is a sequence of
        field names the keys are tuples of values, one per field (the server
        decides which fields can be grouped by; today only ``ExecutionStatus``). ``sum(result.values())`` is ``count_workflows(query)``. The query
        must not have a ``GROUP BY`` of its own (this method adds it; ``ORDER BY``
        is ignored).

        Raises:
            RPCError: the query is malformed or the field cannot be grouped by
                (``status="INVALID_ARGUMENT"``; the message gives the position).
            ValueError: ``group_by`` is empty.
        """
        fields = [group_by] if isinstance(group_by, str) else list(group_by)
        if not fields or not all(fields):
            raise ValueError("group_by: name at least one field")
        text = f"{query} GROUP BY {', '.join(fields)}" if query.strip() else f"GROUP BY {', '.join(fields)}"
        resp = await self._rpc("CountWorkflowExecutions",
                               svc.CountWorkflowExecutionsRequest(namespace=self.namespace, query=text))
        out: dict[Any, int] = {}
        for group in resp.groups:
            values = tuple(group.group_values)
            key: Any = values[0] if isinstance(group_by, str) and values else values
            out[key] = out.get(key, 0) + int(group.count)
        return out

    def get_async_activity_handle(self, task_token: bytes) -> AsyncActivityHandle:
        """A handle to complete, fail or heartbeat an activity that called ``activity.raise_complete_async()``."""
        return AsyncActivityHandle(self, task_token)

    # ------------------------------------------------------------------ schedules (spindle.client._schedule)

    async def create_schedule(
        self,
        id: str,
        schedule: Schedule,
        *,
        trigger_immediately: bool = False,
        backfill: Sequence[ScheduleBackfill] = (),
        memo: Mapping[str, Any] | None = None,
        search_attributes: TypedSearchAttributes | Mapping[str, Any] | None = None,
    ) -> ScheduleHandle:
        """Create a schedule and return its handle (DESIGN.md section 8; Temporal's ``create_schedule``).

        The schedule lives in the control plane: from now on it starts, at each due time,
        the workflow ``{action id}-{due time in UTC, YYYY-MM-DDTHH:MM:SSZ}``.
        ``trigger_immediately`` takes one action at once and ``backfill`` the actions due
        in past ranges (both sent right after the create, in one more call).

        Args:
            memo, search_attributes: of the schedule itself; not stored by Spindle yet, so
                anything but ``None`` (or empty) is refused. Runs get the action's own
                ``memo`` / ``search_attributes``.

        Raises:
            ScheduleAlreadyRunningError: a schedule with this id exists (status ``ALREADY_EXISTS``).
            RPCError: the server refused the schedule (``INVALID_ARGUMENT`` naming the field,
                e.g. an unregistered search attribute of the action).
            ValueError: an empty id, a schedule memo or search attributes, an action with a
                ``retry_policy``, or action arguments with a context-binding EncryptionCodec.
            TypeError: an argument of the action cannot be converted.
        """
        return await create_schedule(self, id, schedule, trigger_immediately=trigger_immediately,
                                     backfill=backfill, memo=memo, search_attributes=search_attributes)

    def get_schedule_handle(self, id: str) -> ScheduleHandle:
        """A handle to the schedule ``id`` (no call is made; a missing schedule fails the handle's calls)."""
        return ScheduleHandle(self, id)

    def list_schedules(self, query: str | None = None, *, page_size: int = 100,
                       next_page_token: bytes | None = None) -> ScheduleAsyncIterator:
        """The namespace's schedules by id: ``async for entry in client.list_schedules(): ...``.

        Each :class:`~spindle.client.ScheduleListEntry` has ``id``, ``paused``, ``note``,
        ``workflow_type``, up to 3 ``recent_actions`` and 3 ``next_action_times``. Nothing is
        called until the iteration starts; ``await client.list_schedules()`` (Temporal's
        form) gives the same iterator.

        Raises:
            ValueError: ``query`` is given (filtering schedules by a visibility query is
                not supported yet) or ``page_size`` is not 1..1000.
        """
        if query:
            raise ValueError("query: filtering schedules by a visibility query is not supported yet; list them all "
                             "and filter the entries")
        return ScheduleAsyncIterator(self, page_size=page_size, next_page_token=next_page_token)

    # ------------------------------------------------------------------ namespaces

    async def create_namespace(
        self,
        name: str,
        *,
        retention: datetime.timedelta | None = None,
        description: str = "",
        owner_email: str = "",
        search_attributes: Mapping[str, Any] | None = None,
        archival_uri: str = "",
        rps_limit: float | None = None,
    ) -> NamespaceDescription:
        """Register a namespace.

        ``search_attributes`` maps names to types: ``"Keyword"``, ``"Text"``, ``"Int"``,
        ``"Double"``, ``"Bool"``, ``"Datetime"``, ``"KeywordList"``. ``archival_uri`` must be
        under a root the server allows (its ``archival_allowed_roots``). ``rps_limit``: the
        requests per second the namespace's clients may make (0 = unlimited; ``None`` = the
        server's default); calls over it are refused with ``RESOURCE_EXHAUSTED`` and a retry
        delay, which this client waits out for calls that are safe to repeat.

        Raises:
            RPCError: ``status="ALREADY_EXISTS"`` if it exists, ``"INVALID_ARGUMENT"``
                for a bad name, attribute, archival URI or rate limit.
            ValueError: an unknown search attribute type.
        """
        req = svc.CreateNamespaceRequest(
            name=name, description=description, owner_email=owner_email, retention_ms=_ms(retention),
            search_attributes={k: _sa_type_value(v) for k, v in (search_attributes or {}).items()},
            archival_uri=archival_uri)
        if rps_limit is not None:
            req.rps_limit = rps_limit
        resp = await self._rpc("CreateNamespace", req, not_found="rpc")
        return NamespaceDescription.from_proto(resp.namespace_info)

    async def describe_namespace(self, name: str | None = None) -> NamespaceDescription:
        """Describe ``name`` (default: the client's namespace).

        Raises:
            NamespaceNotFoundError: no such namespace.
        """
        try:
            resp = await self._rpc("DescribeNamespace",
                                   svc.DescribeNamespaceRequest(name=name or self.namespace), not_found="rpc")
        except E.RPCError as e:
            if e.status == "NOT_FOUND" and not isinstance(e, E.NamespaceNotFoundError):
                raise E.NamespaceNotFoundError(e.message) from e
            raise
        return NamespaceDescription.from_proto(resp.namespace_info)

    async def update_namespace(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        owner_email: str | None = None,
        retention: datetime.timedelta | None = None,
        search_attributes: Mapping[str, Any] | None = None,
        archival_uri: str | None = None,
        rps_limit: float | None = None,
    ) -> NamespaceDescription:
        """Change the given fields of a namespace (others keep their value).

        ``search_attributes`` replaces the whole set of custom attributes. ``rps_limit``:
        requests per second (0 = unlimited), in force at once.

        Raises:
            NamespaceNotFoundError: no such namespace.
            RPCError: e.g. ``FAILED_PRECONDITION`` when removing an attribute still in use,
                ``INVALID_ARGUMENT`` for an archival URI outside the server's allowed roots or
                a bad rate limit.
        """
        req = svc.UpdateNamespaceRequest(name=name or self.namespace)
        if description is not None:
            req.description = description
            req.update_mask.append("description")
        if owner_email is not None:
            req.owner_email = owner_email
            req.update_mask.append("owner_email")
        if retention is not None:
            req.retention_ms = _ms(retention)
            req.update_mask.append("retention")
        if search_attributes is not None:
            req.search_attributes.update({k: _sa_type_value(v) for k, v in search_attributes.items()})
            req.update_mask.append("search_attributes")
        if archival_uri is not None:
            req.archival_uri = archival_uri
            req.update_mask.append("archival_uri")
        if rps_limit is not None:
            req.rps_limit = rps_limit
            req.update_mask.append("rps_limit")
        try:
            resp = await self._rpc("UpdateNamespace", req, not_found="rpc")
        except E.RPCError as e:
            if e.status == "NOT_FOUND" and not isinstance(e, E.NamespaceNotFoundError):
                raise E.NamespaceNotFoundError(e.message) from e
            raise
        return NamespaceDescription.from_proto(resp.namespace_info)

    async def list_namespaces(self) -> list[NamespaceDescription]:
        """All registered namespaces."""
        out: list[NamespaceDescription] = []
        token = b""
        while True:
            resp = await self._rpc("ListNamespaces", svc.ListNamespacesRequest(page_size=100, next_page_token=token),
                                   not_found="rpc")
            out.extend(NamespaceDescription.from_proto(n) for n in resp.namespaces)
            token = resp.next_page_token
            if not token:
                return out

    async def delete_namespace(self, name: str, *, force: bool = False) -> int:
        """Delete a namespace; returns how many running executions ``force`` terminated.

        Raises:
            NamespaceNotFoundError: no such namespace.
            RPCError: ``FAILED_PRECONDITION`` while executions run and ``force`` is not set.
        """
        try:
            resp = await self._rpc("DeleteNamespace", svc.DeleteNamespaceRequest(name=name, force=force),
                                   not_found="rpc")
        except E.RPCError as e:
            if e.status == "NOT_FOUND" and not isinstance(e, E.NamespaceNotFoundError):
                raise E.NamespaceNotFoundError(e.message) from e
            raise
        return int(resp.terminated_executions)

    # ------------------------------------------------------------------ API keys

    async def create_api_key(
        self,
        name: str,
        *,
        grants: Mapping[str, str] | None = None,
        system_admin: bool = False,
        expires: datetime.timedelta | datetime.datetime | None = None,
    ) -> ApiKey:
        """Create an API key. The returned :class:`ApiKey` carries its ``secret``: the only time it is shown.

        Args:
            name: what the key is for (shown in listings and the audit log).
            grants: role per namespace name: ``"reader"``, ``"worker"``, ``"writer"`` or ``"admin"``.
            system_admin: may do everything, on every namespace (only a system_admin may create one).
            expires: how long the key works (a ``timedelta``) or until when (a ``datetime``); None: no expiry.

        Raises:
            RPCError: ``PERMISSION_DENIED`` unless the caller is a system_admin or holds ``admin`` on
                every namespace of ``grants``; ``INVALID_ARGUMENT`` for an unknown role, a namespace
                that does not exist, or no grants at all.
            ValueError: ``expires`` is in the past or not a duration/time.
        """
        resp = await self._rpc("CreateApiKey", create_request(name, grants, system_admin, expires), not_found="rpc")
        return ApiKey.from_proto(resp.key, secret=resp.secret)

    async def list_api_keys(self) -> list[ApiKey]:
        """The keys the caller may manage (a system_admin: all), revoked and expired ones included, by id."""
        resp = await self._rpc("ListApiKeys", svc.ListApiKeysRequest(), not_found="rpc")
        return [ApiKey.from_proto(k) for k in resp.keys]

    async def revoke_api_key(self, id: str) -> None:
        """Revoke a key: its next call fails with ``UNAUTHENTICATED`` (on other cluster members within the
        server's key cache time, 5 s by default). Revoking a revoked key changes nothing.

        Raises:
            RPCError: ``NOT_FOUND`` for an unknown id; ``PERMISSION_DENIED`` when the key has grants on
                namespaces the caller does not administer.
        """
        await self._rpc("RevokeApiKey", svc.RevokeApiKeyRequest(id=id), not_found="rpc")

    async def add_search_attributes(self, search_attributes: Mapping[str, Any]) -> None:
        """Register custom search attributes (name -> type name) in the client's namespace.

        Raises:
            RPCError: an attribute exists with another type, or a bad name.
            ValueError: an unknown type name.
        """
        req = svc.AddSearchAttributesRequest(
            namespace=self.namespace,
            search_attributes={k: _sa_type_value(v) for k, v in search_attributes.items()})
        await self._rpc("AddSearchAttributes", req, not_found="rpc")


class WorkflowHandle(Generic[R]):
    """A reference to a workflow execution (made by ``start_workflow`` or ``get_workflow_handle``).

    ``run_id`` is the run the handle was made for (``None`` when only the id is
    known). Signals, queries, updates, cancel, terminate and describe address the
    latest run unless the handle was created with an explicit ``run_id``;
    ``result()`` waits for the run the handle was made for and follows
    continue-as-new.
    """

    def __init__(self, client: Client, id: str, *, run_id: str | None = None, result_run_id: str | None = None,
                 first_execution_run_id: str | None = None, result_type: Any = None, target_run: bool = True) -> None:
        self._client = client
        self.id = id
        self.run_id = run_id
        self.result_run_id = result_run_id
        self.first_execution_run_id = first_execution_run_id
        self.result_type = result_type
        self._target_run_id = (run_id or "") if target_run else ""

    @property
    def workflow_id(self) -> str:
        """Alias of ``id``."""
        return self.id

    @property
    def client(self) -> Client:
        """The :class:`Client` this handle talks through (read-only)."""
        return self._client

    def __repr__(self) -> str:
        return f"WorkflowHandle(id={self.id!r}, run_id={self.run_id!r})"

    def _execution(self, run_id: str | None = None) -> pb.WorkflowExecution:
        return pb.WorkflowExecution(workflow_id=self.id,
                                    run_id=self._target_run_id if run_id is None else run_id)

    async def result(self, *, follow_runs: bool = True, result_type: Any = None) -> R:
        """Wait for the run to close and return its result, decoded by the result type hint.

        Long-polls the server (no busy polling). With ``follow_runs`` a run that
        continued-as-new is followed to the run that finally closes.

        Raises:
            WorkflowFailureError: the run failed (``cause`` is the ApplicationError or
                other error it failed with), was cancelled (``CancelledError``),
                terminated (``TerminatedError`` with the reason) or timed out
                (``TimeoutError``).
            WorkflowContinuedAsNewError: the run continued-as-new and ``follow_runs`` is false.
            WorkflowNotFoundError: no such execution.
        """
        client = self._client
        conv = client.data_converter
        hint = result_type if result_type is not None else self.result_type
        run_id = self.result_run_id or ""
        while True:
            resp = await client._history_page(pb.WorkflowExecution(workflow_id=self.id, run_id=run_id), wait=True,
                                              close_event_only=True)
            events = resp.history.events
            if not events:
                continue
            event = events[-1]
            await client._decode(event, self.id)
            et = event.event_type
            if et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
                values = conv.from_payloads(event.workflow_execution_completed_event_attributes.result,
                                            [hint] if hint is not None else None)
                return values[0] if values else None  # type: ignore[return-value]
            if et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
                new_run = event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                if not follow_runs:
                    raise E.WorkflowContinuedAsNewError(new_run)
                run_id = new_run
                continue
            raise self._close_error(event)

    def _close_error(self, event: pb.HistoryEvent) -> E.WorkflowFailureError:
        conv = self._client.data_converter
        et = event.event_type
        cause: BaseException
        if et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
            cause = conv.from_failure(event.workflow_execution_failed_event_attributes.failure)
            status = WorkflowExecutionStatus.FAILED
        elif et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
            details = conv._safe_decode(event.workflow_execution_canceled_event_attributes.details)
            cause = E.CancelledError("workflow cancelled", *details)
            status = WorkflowExecutionStatus.CANCELED
        elif et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
            cause = E.TerminatedError(event.workflow_execution_terminated_event_attributes.reason)
            status = WorkflowExecutionStatus.TERMINATED
        elif et == pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
            cause = E.TimeoutError("workflow execution timed out", timeout_type=E.TimeoutType.WORKFLOW_EXECUTION)
            status = WorkflowExecutionStatus.TIMED_OUT
        else:
            cause = E.ServerError(f"unexpected close event type {et}")
            status = None
        return E.WorkflowFailureError(cause, status=status)

    async def signal(self, signal: Any, *args: Any) -> None:
        """Send a signal (a ``@workflow.signal`` method or its name) with ``args``.

        Raises:
            WorkflowNotFoundError: no running execution with this id (and run id).
        """
        name, _ = _handler(signal, _SIGNAL_ATTR)
        await self._client._outbound.signal_workflow(SignalWorkflowInput(
            id=self.id, run_id=self._target_run_id or None, signal=name, args=args, headers={}))

    async def _signal(self, input: SignalWorkflowInput) -> None:
        client = self._client
        req = svc.SignalWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(), signal_name=input.signal,
            input=client.data_converter.to_payloads(input.args), identity=client.identity,
            request_id=str(uuid.uuid4()))
        for k, v in input.headers.items():
            req.header.fields[k].CopyFrom(v)
        await client._encode(req)
        await client._rpc("SignalWorkflowExecution", req)

    async def query(self, query: Any, *args: Any, result_type: Any = None, timeout: datetime.timedelta | None = None
                    ) -> Any:
        """Ask the workflow a question (a ``@workflow.query`` method or its name).

        Raises:
            QueryFailedError: the workflow has no such query handler, the handler
                raised, or no worker answered in time.
            WorkflowNotFoundError: no such execution.
        """
        name, hint = _handler(query, _QUERY_ATTR)
        return await self._client._outbound.query_workflow(QueryWorkflowInput(
            id=self.id, run_id=self._target_run_id or None, query=name, args=args, headers={}, result_type=result_type or hint,
            timeout=timeout))

    async def _query(self, input: QueryWorkflowInput) -> Any:
        client = self._client
        req = svc.QueryWorkflowRequest(
            namespace=client.namespace, execution=self._execution(),
            query=pb.WorkflowQuery(query_type=input.query, query_args=client.data_converter.to_payloads(input.args)),
            timeout_ms=_ms(input.timeout))
        for k, v in input.headers.items():
            req.query.header.fields[k].CopyFrom(v)
        await client._encode(req)
        try:
            resp = await call_with_retries(client._stub.QueryWorkflow, req, budget=_RETRY_BUDGET)
        except grpc.aio.AioRpcError as e:
            mapped = map_rpc_error(e)
            if isinstance(mapped, (E.WorkflowNotFoundError, E.NamespaceNotFoundError)) and "query" not in \
                    mapped.message.lower():
                raise mapped from e
            if mapped.status in ("UNAVAILABLE", "UNAUTHENTICATED", "PERMISSION_DENIED") or retry_delay(e) is not None:
                raise mapped from e  # not the query's failure: the server's (a throttle outlasted the retries)
            raise E.QueryFailedError(mapped.message) from e
        await client._decode(resp, self.id)
        values = client.data_converter.from_payloads(resp.query_result, [input.result_type])
        return values[0] if values else None

    async def update(self, update: Any, *args: Any, id: str | None = None, result_type: Any = None,
                     timeout: datetime.timedelta | None = None) -> Any:
        """Run an update (a ``@workflow.update`` method or its name) and return its result.

        One call: the server waits up to ``timeout`` (default 60 s) for the outcome.
        :meth:`execute_update` (Temporal's name) waits as long as the update takes.

        Raises:
            WorkflowUpdateFailedError: the validator rejected it or the handler raised
                (``cause`` says why). (``UpdateFailedError`` is the same class.)
            WorkflowNotFoundError: no running execution.
            RPCError: ``status="DEADLINE_EXCEEDED"`` when there is no outcome within ``timeout``.
        """
        name, hint = _handler(update, _UPDATE_ATTR)
        client = self._client
        req = svc.UpdateWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(),
            request=pb.UpdateRequest(update_id=id or str(uuid.uuid4()), name=name,
                                     input=client.data_converter.to_payloads(args), identity=client.identity),
            timeout_ms=_ms(timeout))
        await client._encode(req)
        resp = await client._rpc("UpdateWorkflowExecution", req)
        await client._decode(resp, self.id)
        if resp.WhichOneof("outcome") == "failure":
            raise E.WorkflowUpdateFailedError(client.data_converter.from_failure(resp.failure), update_name=name)
        values = client.data_converter.from_payloads(resp.success, [result_type or hint])
        return values[0] if values else None

    def _update_request(self, update: Any, positional: Sequence[Any], args: Sequence[Any], id: str | None
                        ) -> tuple[svc.UpdateWorkflowExecutionRequest, Any]:
        if positional and args:
            raise ValueError("pass the update's arguments either positionally or as args=[...], not both")
        if isinstance(args, (str, bytes)):
            raise TypeError("args must be a sequence of arguments, not a str")
        name, hint = _handler(update, _UPDATE_ATTR)
        client = self._client
        req = svc.UpdateWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(),
            request=pb.UpdateRequest(update_id=id or str(uuid.uuid4()), name=name,
                                     input=client.data_converter.to_payloads(list(positional or args)),
                                     identity=client.identity))
        return req, hint

    async def execute_update(self, update: Any, *positional: Any, args: Sequence[Any] = (), id: str | None = None,
                             result_type: Any = None, rpc_timeout: datetime.timedelta | None = None) -> Any:
        """Send an update and wait for its result (Temporal's ``execute_update``).

        ``update`` is a ``@workflow.update`` method or its name; its arguments are given
        positionally (``execute_update(W.set_stage, "x")``) or as ``args=[...]``. ``id``
        is the update id (default: a new UUID); the server runs an update id once, so
        sending the same id again returns the same outcome. Waits as long as the update
        takes (unless ``rpc_timeout``), logging a warning each minute without an answer.

        Raises:
            WorkflowUpdateFailedError: the validator rejected the update or its handler
                raised; ``cause`` is the error (usually an ``ApplicationError``).
            WorkflowUpdateRPCTimeoutOrCancelledError: ``rpc_timeout`` passed first.
            WorkflowNotFoundError: no such execution.
            RPCError: the server refused the request (e.g. the run is closed).
            ValueError: arguments given both positionally and as ``args``.
        """
        h = await self.start_update(update, *positional, args=args, id=id, result_type=result_type,
                                    wait_for_stage=WorkflowUpdateStage.COMPLETED, rpc_timeout=rpc_timeout)
        return await h.result()

    async def start_update(self, update: Any, *positional: Any, wait_for_stage: WorkflowUpdateStage,
                           args: Sequence[Any] = (), id: str | None = None, result_type: Any = None,
                           rpc_timeout: datetime.timedelta | None = None) -> WorkflowUpdateHandle[Any]:
        """Send an update and return its handle once it reached ``wait_for_stage`` (Temporal's ``start_update``).

        ``WorkflowUpdateStage.ACCEPTED``: returns when the workflow accepted the update
        (its validator passed and the acceptance is in the history) while the handler
        may still run; ``await handle.result()`` waits for the outcome. If the update
        completes or is rejected before acceptance is seen, the handle already knows
        the outcome (``result()`` returns it or raises ``WorkflowUpdateFailedError``).
        ``COMPLETED``: returns when the outcome is known. Arguments as :meth:`execute_update`.

        Raises:
            ValueError: ``wait_for_stage`` is ``ADMITTED`` (not supported), or arguments
                given both positionally and as ``args``.
            WorkflowUpdateRPCTimeoutOrCancelledError: ``rpc_timeout`` passed first.
            WorkflowNotFoundError: no such execution.
            RPCError: the server refused the request (e.g. the run is closed).
        """
        req, hint = self._update_request(update, positional, args, id)
        return cast(WorkflowUpdateHandle[Any], await self._client._outbound.start_workflow_update(
            StartWorkflowUpdateInput(
                id=self.id, run_id=self._target_run_id or None, update_id=req.request.update_id, update=req.request.name,
                args=list(positional or args), headers={}, wait_for_stage=wait_for_stage,
                result_type=result_type or hint, rpc_timeout=rpc_timeout)))

    async def _start_update(self, input: StartWorkflowUpdateInput) -> WorkflowUpdateHandle[Any]:
        client = self._client
        req = svc.UpdateWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(),
            request=pb.UpdateRequest(update_id=input.update_id, name=input.update,
                                     input=client.data_converter.to_payloads(list(input.args)),
                                     identity=client.identity))
        for k, v in input.headers.items():
            req.request.header.fields[k].CopyFrom(v)
        return await send_update(client, req, stage=input.wait_for_stage, result_type=input.result_type,
                                 rpc_timeout=input.rpc_timeout)

    def get_update_handle(self, id: str, *, workflow_run_id: str | None = None, result_type: Any = None
                          ) -> WorkflowUpdateHandle[Any]:
        """A handle to the update ``id`` of this workflow (no RPC is made).

        ``result()`` reads the outcome from the run's history (``workflow_run_id``, else
        this handle's ``run_id``, else the current run), waiting while the update is
        accepted but not completed.
        """
        return WorkflowUpdateHandle(self._client, id, self.id, workflow_run_id=workflow_run_id or self.run_id,
                                    result_type=result_type)

    def get_update_handle_for(self, update: Callable[..., Awaitable[U]] | Callable[..., U], id: str, *,
                              workflow_run_id: str | None = None) -> WorkflowUpdateHandle[U]:
        """:meth:`get_update_handle` typed by the ``@workflow.update`` method (its return annotation decodes the result).

        Raises:
            TypeError: ``update`` is not an update method.
        """
        name, hint = _handler(update, _UPDATE_ATTR)
        h: WorkflowUpdateHandle[U] = self.get_update_handle(id, workflow_run_id=workflow_run_id, result_type=hint)
        h._name = name
        return h

    async def cancel(self, reason: str = "") -> None:
        """Request cancellation: the workflow sees ``asyncio.CancelledError`` and may clean up.

        Raises:
            WorkflowNotFoundError: no running execution.
        """
        client = self._client
        await client._rpc("RequestCancelWorkflowExecution", svc.RequestCancelWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(), identity=client.identity,
            request_id=str(uuid.uuid4()), reason=reason))

    async def terminate(self, reason: str = "", *details: Any) -> None:
        """Stop the execution at once (no workflow code runs).

        Raises:
            WorkflowNotFoundError: no running execution.
        """
        client = self._client
        req = svc.TerminateWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=self._execution(), reason=reason,
            details=client.data_converter.to_payloads(details), identity=client.identity)
        await client._encode(req)
        await client._rpc("TerminateWorkflowExecution", req)

    async def reset(self, event_id: int | None = None, *, type: ResetType = ResetType.LAST_WORKFLOW_TASK, reason: str = "",
                    reapply_signals: bool = True, request_id: str | None = None) -> str:
        """Reset the workflow to a point of this run's history; returns the new run's id.

        ``event_id`` names a ``WorkflowTaskCompleted`` event of the run (as shown by
        ``fetch_history()`` or ``spindle workflow show``); without it, ``type`` picks the
        first or (default) last completed workflow task. The new run (same workflow id)
        keeps the history up to that point and then runs the worker's current code from
        there; signals received after the point are re-applied (each once) unless
        ``reapply_signals=False``; activities after the point run again. The current run, if
        still running, ends ``TERMINATED`` with ``reason``; a closed one stays as it is.
        Safe to retry with the same ``request_id``. See docs/RESET.md.

        Raises:
            WorkflowNotFoundError: no such workflow or run.
            RPCError: ``status="INVALID_ARGUMENT"`` when the event is not a
                WorkflowTaskCompleted event of the run (the message names the allowed ids),
                or a child workflow is still pending at the point.
            ValueError: the run has no completed workflow task yet, or ``event_id`` is not positive.
        """
        return await reset_workflow(self._client, self.id, self._execution().run_id, event_id=event_id,
                                    reset_type=type,
                                    reason=reason, reapply_signals=reapply_signals, request_id=request_id)

    async def describe(self) -> WorkflowExecutionDescription:
        """Status, times, memo, search attributes and pending work of the run.

        Raises:
            WorkflowNotFoundError: no such execution.
        """
        client = self._client
        resp = await client._rpc("DescribeWorkflowExecution", svc.DescribeWorkflowExecutionRequest(
            namespace=client.namespace, execution=self._execution()))
        await client._decode(resp, self.id)
        return client._describe(resp.workflow_execution_info, resp)

    async def fetch_history(self) -> History:
        """The run's full event history, with payloads decoded by the codec chain.

        Raises:
            WorkflowNotFoundError: no such execution.
        """
        client = self._client
        run_id = self.run_id or ""
        if not run_id:
            run_id = (await self.describe()).run_id
        events: list[pb.HistoryEvent] = []
        token = b""
        while True:
            resp = await client._history_page(pb.WorkflowExecution(workflow_id=self.id, run_id=run_id), token,
                                              wait=False)
            await client._decode(resp, self.id)
            events.extend(resp.history.events)
            token = resp.next_page_token
            if not token:
                break
        return History.from_proto(self.id, run_id, events)

    async def watch_history(self, *, start_event_id: int = 1) -> AsyncIterator[HistoryEvent]:
        """Yield the run's history events as they are written, until the run closes.

        ``async for event in handle.watch_history(): ...`` first yields the events
        already written, then waits for new ones: each call long-polls the server
        (``GetWorkflowExecutionHistory`` with ``wait_new_event`` and the page
        token), so nothing is fetched while the run is idle. The iteration ends
        after the close event (completed, failed, cancelled, terminated, timed
        out or continued-as-new; a new run is not followed). Events before
        ``start_event_id`` are skipped. Payloads are decoded by the codec chain.
        Break out of the loop (or cancel the task) to stop watching.

        A handle without a run id watches the run that is current when the
        watch starts.

        Raises:
            WorkflowNotFoundError: no such execution.
            ValueError: ``start_event_id`` is below 1.
        """
        if start_event_id < 1:
            raise ValueError(f"start_event_id must be at least 1, got {start_event_id}")
        client = self._client
        run_id = self.run_id or ""
        if not run_id:
            run_id = (await self.describe()).run_id
        execution = pb.WorkflowExecution(workflow_id=self.id, run_id=run_id)
        token = b""
        while True:
            resp = await client._history_page(execution, token, wait=True)
            await client._decode(resp, self.id)
            for event in resp.history.events:
                if event.event_id >= start_event_id:
                    yield HistoryEvent.from_proto(event)
            if not resp.next_page_token:
                return  # the last page of a closed run
            token = resp.next_page_token


class _ClientOutboundImpl(OutboundInterceptor):
    """The end of a client's interceptor chain: the client's own calls."""

    def __init__(self, client: Client) -> None:  # noqa: D107 - no next: this is the end
        self._client = client

    def _handle(self, id: str, run_id: str | None) -> WorkflowHandle[Any]:
        return WorkflowHandle(self._client, id, run_id=run_id)

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any]:
        return await self._client._start_workflow(input)

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        await self._handle(input.id, input.run_id)._signal(input)

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        return await self._handle(input.id, input.run_id)._query(input)

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> WorkflowUpdateHandle[Any]:
        return await self._handle(input.id, input.run_id)._start_update(input)


class AsyncActivityHandle:
    """Completes an activity attempt from outside the activity function.

    Made by ``client.get_async_activity_handle(task_token)`` for an activity that
    called ``activity.raise_complete_async()``. A stale token (the attempt timed
    out, or was already completed) raises :class:`RPCError` with ``status="NOT_FOUND"``.

    A task token does not say which workflow the activity belongs to: with a codec that
    binds payloads to their workflow (``EncryptionCodec``), give it with
    :meth:`with_context` (the activity can pass on ``activity.info().workflow_id``).
    """

    def __init__(self, client: Client, task_token: bytes,
                 context: WorkflowSerializationContext | None = None) -> None:
        self._client = client
        self.task_token = task_token
        self._context = context

    def with_context(self, context: SerializationContext) -> AsyncActivityHandle:
        """This handle, encoding its payloads for ``context`` (a :class:`WorkflowSerializationContext`
        naming the activity's namespace and workflow id), as Temporal's ``with_context``.

        Raises:
            TypeError: ``context`` is not a ``WorkflowSerializationContext``.
        """
        if not isinstance(context, WorkflowSerializationContext):
            raise TypeError(f"AsyncActivityHandle.with_context takes a WorkflowSerializationContext, "
                            f"got {type(context).__name__}")
        return AsyncActivityHandle(self._client, self.task_token, context)

    async def complete(self, result: Any = None) -> None:
        """Complete the attempt with ``result``."""
        c = self._client
        req = svc.RespondActivityTaskCompletedRequest(
            task_token=self.task_token, result=c.data_converter.to_payloads([result]), identity=c.identity,
            namespace=c.namespace)
        await c._encode(req, context=self._context)
        await c._rpc("RespondActivityTaskCompleted", req, not_found="rpc")

    async def fail(self, error: BaseException, *, last_heartbeat_details: Sequence[Any] = ()) -> None:
        """Fail the attempt with ``error`` (retried per the activity's retry policy)."""
        c = self._client
        req = svc.RespondActivityTaskFailedRequest(
            task_token=self.task_token, failure=c.data_converter.to_failure(error), identity=c.identity,
            namespace=c.namespace)
        if last_heartbeat_details:
            req.last_heartbeat_details.CopyFrom(c.data_converter.to_payloads(last_heartbeat_details))
        await c._encode(req, context=self._context)
        await c._rpc("RespondActivityTaskFailed", req, not_found="rpc")

    async def report_cancellation(self, *details: Any) -> None:
        """Report that the attempt stopped because cancellation was requested."""
        c = self._client
        req = svc.RespondActivityTaskCanceledRequest(
            task_token=self.task_token, details=c.data_converter.to_payloads(details), identity=c.identity,
            namespace=c.namespace)
        await c._encode(req, context=self._context)
        await c._rpc("RespondActivityTaskCanceled", req, not_found="rpc")

    async def heartbeat(self, *details: Any) -> None:
        """Record a heartbeat.

        Raises:
            CancelledError: the workflow requested cancellation of this activity
                (stop and call :meth:`report_cancellation`).
        """
        c = self._client
        req = svc.RecordActivityTaskHeartbeatRequest(
            task_token=self.task_token, details=c.data_converter.to_payloads(details), identity=c.identity,
            namespace=c.namespace)
        await c._encode(req, context=self._context)
        resp = await c._rpc("RecordActivityTaskHeartbeat", req, not_found="rpc")
        if resp.cancel_requested:
            raise E.CancelledError("activity cancellation requested")
