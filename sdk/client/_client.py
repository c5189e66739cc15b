"""The Spindle client, :class:`Client`: workflows, schedules, namespaces and API keys over one connection.

Its calls are documented here and done, as in temporalio's client package, by the modules that own each concept
(``_connection``, ``_impl``, ``_visibility``, ``_schedule``, ``_namespaces``, ``_batch`` ...): none imports this one.
"""

from __future__ import annotations

import datetime

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import grpc

from google.protobuf.message import Message

from spindle._interceptors.client import Interceptor
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client import _api_keys, _batch, _connection, _erasure, _namespaces, _schedule, _tls, _visibility
from spindle.client._async_activity import AsyncActivityHandle
from spindle.client._client_codecs import ClientCodecs
from spindle.client._impl import ARG_UNSET, check_client_interceptors, outbound_chain, start_input
from spindle.client._namespaces import NamespaceDescription
from spindle.client._operator_service import services
from spindle.client._reset import ResetType
from spindle.client._rpc import call_rpc, history_page
from spindle.client._schedule_types import Schedule, ScheduleBackfill
from spindle.client._workflow_description import WorkflowExecutionDescription
from spindle.client._workflow_handle import WorkflowHandle, existing_handle
from spindle.common._enums import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from spindle.common._search_attributes import TypedSearchAttributes
from spindle.common._versioning import VersioningOverride
from spindle.converter._data_converter import DataConverter
from spindle.converter._payload_codec import PayloadCodec

__all__ = ["Client"]

U = TypeVar("U")


class Client:
    """A connection to a Spindle control plane, bound to one namespace.

    Create with :meth:`connect` (gRPC, or a control plane in this process); close with :meth:`close` (or ``async
    with``). Cheap to share between tasks and workers of one event loop. Every payload of every request is encoded by
    the client's codec chain and every payload of every response decoded: the server only stores encoded bytes.
    """

    def __init__(self, stub: Any, *, namespace: str = "default", data_converter: DataConverter | None = None,
                 codecs: Sequence[PayloadCodec] = (), identity: str | None = None,
                 channel: grpc.aio.Channel | None = None, embedded: Any = None,
                 interceptors: Sequence[Interceptor] = ()) -> None:
        self._stub = stub
        self.namespace = namespace
        self.data_converter = data_converter or DataConverter.default
        codec = self.data_converter.payload_codec
        #: The codec chain every payload goes through: ``codecs``, then ``data_converter.payload_codec``.
        self.codecs: tuple[PayloadCodec, ...] = (*codecs, codec) if codec is not None else tuple(codecs)
        self._encode, self._decode = (payloads := ClientCodecs(namespace, self.codecs)).encode, payloads.decode
        self.identity = identity or _connection.default_identity()
        self._connection = _connection.Connection(stub, channel, embedded)
        self.interceptors: tuple[Interceptor, ...] = check_client_interceptors(interceptors)
        self._outbound = outbound_chain(self, self.interceptors)
        self.workflow_service, self.operator_service = services(self)  #: raw RPCs as async methods (temporalio's)

    @classmethod
    async def connect(cls, target_host: str, *, namespace: str = "default", data_converter: DataConverter | None = None,
                      codecs: Sequence[PayloadCodec] = (), identity: str | None = None, api_key: str | None = None,
                      tls: bool | _tls.TLSConfig | None = None, interceptors: Sequence[Interceptor] = (),
                      runtime: Any = None) -> Client:
        """Connect to ``target_host`` (Temporal's parameter name: ``Client.connect(**{"target_host": ...})`` works).

        Args:
            target_host: ``"host:port"``, or ``"embedded:PATH"``: an in-process control plane on the SQLite file
                ``PATH`` (or ``:memory:``) that the client owns and stops on :meth:`close`.
            namespace: the namespace every call of this client addresses.
            data_converter: converts values (default: :attr:`DataConverter.default`); its ``payload_codec``, if
                set, is applied after ``codecs``.
            codecs: payload codecs, applied in order on the way out (reverse on the way in).
            identity: names this client (and its workers) in histories (default: ``pid@host``).
            api_key: a key (``spk_...``) sent with every call of this client and its workers, as ``authorization:
                Bearer ...`` metadata (see :attr:`api_key`). Ignored by an embedded control plane (your own process).
            tls: ``True`` or a :class:`spindle.service.TLSConfig` (its CA, server name, client certificate for
                mutual TLS): TLS, by default against gRPC's public roots. ``None``/``False``: plaintext.
            interceptors: :class:`spindle.client.Interceptor` objects that starts, signals, queries and updates go
                through (the first is the outermost); they may add headers that travel with the request.
            runtime: a :class:`spindle.runtime.Runtime`, kept as ``client.runtime``: see :mod:`spindle.runtime`.

        Raises:
            RPCError: the first call (made before returning, over gRPC) failed: the server cannot be reached
                (``status="UNAVAILABLE"``) or refuses the key (``"UNAUTHENTICATED"``: unknown, wrong, revoked or
                expired); a TLS problem (an untrusted server certificate, a server that refuses this client's
                certificate or wants one) says so in the message and is not retried.
            ValueError: ``target_host`` is empty or not a string, ``api_key`` is not a printable key, or ``tls``
                is given with ``embedded:``.
            TypeError: ``tls`` is not a bool, None or a TLSConfig, or ``interceptors`` holds something that is not
                a ``spindle.client.Interceptor``.
            Exception: the embedded control plane's errors (e.g. the file is locked by another process), unchanged.
        """
        return await _connection.connect(cls, target_host, namespace=namespace, data_converter=data_converter,
            codecs=codecs, identity=identity, api_key=api_key, tls=tls, interceptors=interceptors, runtime=runtime)

    async def close(self) -> None:
        """Close the connection (and stop the embedded control plane this client owns). Idempotent."""
        await self._connection.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def api_key(self) -> str | None:
        """The API key sent with every call (None: none). Setting it (ValueError if not printable) applies to every
        later call of this client and its workers: key rotation without reconnecting, as in temporalio."""
        return self._connection.api_key

    @api_key.setter
    def api_key(self, value: str | None) -> None:
        self._connection.api_key = value

    @property
    def stub(self) -> Any:
        """The raw ``WorkflowService`` stub (for tools; payloads there are not codec-processed)."""
        return self._stub

    async def _rpc(self, method: str, request: Message, *, timeout: float | None = None, not_found: str = "workflow",
                   **options: Any) -> Any:
        return await call_rpc(self._stub, method, request, timeout=timeout, not_found=not_found, **options)

    async def _history_page(self, execution: pb.WorkflowExecution, token: bytes = b"", *, wait: bool,
                            close_event_only: bool = False) -> svc.GetWorkflowExecutionHistoryResponse:
        return await history_page(self._rpc, self.namespace, execution, token, wait=wait,
                                  close_event_only=close_event_only)

    async def start_workflow(self, workflow: Any, *positional: Any, arg: Any = ARG_UNSET, args: Sequence[Any] = (),
        id: str, task_queue: str, id_reuse_policy: WorkflowIDReusePolicy = WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        id_conflict_policy: WorkflowIDConflictPolicy = WorkflowIDConflictPolicy.FAIL,
        execution_timeout: datetime.timedelta | None = None, run_timeout: datetime.timedelta | None = None,
        task_timeout: datetime.timedelta | None = None, memo: Mapping[str, Any] | None = None,
        search_attributes: TypedSearchAttributes | Mapping[str, Any] | None = None,
        start_delay: datetime.timedelta | None = None, start_signal: Any = None, start_signal_args: Sequence[Any] = (),
        result_type: Any = None, request_id: str | None = None, cron_schedule: str = "", request_eager_start: bool = False,
    ) -> WorkflowHandle[Any]:
        """Start a workflow run and return its handle (without waiting for it).

        Args:
            workflow: a ``@workflow.defn`` class, its ``@workflow.run`` method, a decorated function, a DSL
                definition, or a workflow type name.
            *positional / arg / args: the workflow's arguments, one form of three (converted). For a DSL definition
                (``spindle.dsl.load(...)`` or its ``.definition``) the one argument is the inputs mapping: it is
                checked and sent with the compiled DAG, so the execution keeps the DAG it started with.
            id / task_queue: the workflow id (unique among the namespace's running runs); where workers take its tasks.
            id_reuse_policy: may a *closed* run's id be reused.
            id_conflict_policy: when a run with this id is *running*: ``FAIL`` (raise), ``USE_EXISTING`` (return
                its handle instead), ``TERMINATE_EXISTING`` (terminate it and start this one, in one step).
            execution_timeout / run_timeout / task_timeout: limits of the chain of runs, of one run, of one task.
            memo: non-indexed values shown by ``describe()``. start_delay: wait this long before the first task.
            search_attributes: indexed values for ``list_workflows`` queries, registered in the namespace: a
                :class:`~spindle.common.TypedSearchAttributes` (values checked against their keys' types here) or a
                mapping of name to value (a list of str for a KeywordList).
            start_signal / start_signal_args: signal-with-start: deliver this signal, starting the run if none runs.
            result_type: type hint for ``handle.result()`` (default: the run method's return annotation).
            request_id: makes a repeated start count once (default: a new one per call). request_eager_start: ignored.
            cron_schedule: legacy cron (prefer :meth:`create_schedule`), UTC: five fields or an ``@daily``-style
                alias. The first run waits for the first tick; a run that completes or fails is followed by one with
                the same arguments at the next tick; cancelling or terminating the run ends the chain. Not with
                ``start_delay``.

        Returns:
            A handle to the run started (signal-with-start, ``USE_EXISTING``: the run signalled or found).

        Raises:
            WorkflowAlreadyStartedError: a run with this id exists and the policies forbid another.
            NamespaceNotFoundError: the client's namespace does not exist.
            RPCError: the server refused the request (e.g. an unknown search attribute), or ``RESOURCE_EXHAUSTED``:
                the namespace stayed over its rate limit past the client's retry budget, about 15 s (throttled starts
                are retried after the server's delay; the request id keeps a retried start from starting twice).
            TypeError: an argument cannot be converted, or a typed search attribute's value does not fit its key.
            ValueError: arguments in more than one form (``arg`` and ``args``: "Cannot have arg and args").
            spindle.dsl.DslError: a DSL definition's inputs do not match its declarations (nothing is started).
        """
        return cast(WorkflowHandle[Any], await self._outbound.start_workflow(start_input(
            workflow, positional, arg=arg, args=args, start_signal=start_signal, result_type=result_type, id=id,
            task_queue=task_queue, id_reuse_policy=id_reuse_policy, id_conflict_policy=id_conflict_policy,
            execution_timeout=execution_timeout, run_timeout=run_timeout, task_timeout=task_timeout, memo=memo,
            search_attributes=search_attributes, start_delay=start_delay, start_signal_args=start_signal_args,
            request_id=request_id, cron_schedule=cron_schedule)))

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
        """A handle to an existing execution (no RPC is made): its run ``run_id``, or the latest run of the id.

        ``workflow`` (a definition) supplies the result type hint.

        Raises:
            TypeError: ``workflow`` is not a workflow definition.
        """
        return existing_handle(self, workflow_id, run_id=run_id, first_execution_run_id=first_execution_run_id,
                               result_type=result_type, workflow=workflow)

    def get_workflow_handle_for(self, workflow: Callable[..., Awaitable[U]], workflow_id: str, *,
                                run_id: str | None = None, first_execution_run_id: str | None = None
                                ) -> WorkflowHandle[U]:
        """A handle typed by ``workflow`` (its ``@workflow.run`` method or a decorated function); no RPC is made.

        As :meth:`get_workflow_handle` with ``workflow=``: ``result()`` decodes into the run method's return
        annotation (Temporal's ``get_workflow_handle_for``).

        Raises:
            TypeError: ``workflow`` is not a workflow definition.
        """
        return self.get_workflow_handle(workflow_id, run_id=run_id, first_execution_run_id=first_execution_run_id,
                                        workflow=workflow)

    def list_workflows(self, query: str = "", *, limit: int | None = None, page_size: int = 1000,
                       next_page_token: bytes | None = None) -> _visibility.WorkflowExecutionAsyncIterator:
        """Iterate over the executions matching a visibility ``query``: ``async for wf in client.list_workflows(q)``.

        Reads one page at a time, ``page_size`` rows a call, and stops after ``limit`` rows (None: all);
        ``next_page_token`` starts from a page a previous listing returned. ``.map_histories()`` on the result
        streams the listed runs' histories (for ``Replayer.replay_workflows``). Visibility is eventually
        consistent, as in Temporal: a run's row (its start, status, search attributes and history length) is
        written with the server's next acknowledgement batch, tens of milliseconds after the change, so a
        listing right after a start may not show the run yet. ``describe()`` is always current.

        Raises:
            ValueError: ``page_size`` < 1 or ``limit`` < 0 (at once).
            RPCError: (from the iteration) the query is malformed (``status="INVALID_ARGUMENT"``).
        """
        return _visibility.WorkflowExecutionAsyncIterator(self, query, page_size=page_size, limit=limit,
                                                          next_page_token=next_page_token)

    async def list_workflows_page(self, query: str = "", *, page_size: int = 100, next_page_token: bytes | None = None
                                  ) -> tuple[list[WorkflowExecutionDescription], bytes | None]:
        """One page of the executions matching ``query``, and the token of the next page (None after the last).

        Pass the token back as ``next_page_token`` for the next page (empty if the previous one ended at the last row).
        Tokens are opaque and stay valid across calls (keep each page's token to page back and forth in a UI).
        Eventually consistent: see :meth:`list_workflows`.

        Raises:
            RPCError: the query is malformed or the token is not one the server gave (``"INVALID_ARGUMENT"``).
        """
        return await _visibility.list_workflows_page(self, query, page_size=page_size, next_page_token=next_page_token)

    async def count_workflows(self, query: str = "") -> int:
        """The number of executions matching ``query`` (eventually consistent: see :meth:`list_workflows`).

        Raises:
            RPCError: the query is malformed.
        """
        return await _visibility.count_workflows(self, query)

    async def count_workflows_by(self, query: str = "", group_by: str | Sequence[str] = "ExecutionStatus"
                                 ) -> dict[Any, int]:
        """Count the executions matching ``query`` per value of ``group_by``, in one call.

        ``count_workflows_by("WorkflowType = 'Order'")`` returns e.g. ``{"Running": 3, "Completed": 40}`` (statuses
        by visibility name; values with no execution are absent); for a sequence of fields, keys are tuples of values
        (the server decides which fields can be grouped by; today only ``ExecutionStatus``). The counts sum to
        ``count_workflows(query)``. ``query`` must have no ``GROUP BY`` (this adds it; ``ORDER BY`` is ignored).

        Raises:
            RPCError: the query is malformed or the field cannot be grouped by (``status="INVALID_ARGUMENT"``;
                the message gives the position).
            ValueError: ``group_by`` is empty.
        """
        return await _visibility.count_workflows_by(self, query, group_by)

    def get_async_activity_handle(self, task_token: bytes) -> AsyncActivityHandle:
        """A handle to complete, fail or heartbeat an activity that called ``activity.raise_complete_async()``."""
        return AsyncActivityHandle(self, task_token)

    async def batch_terminate(self, query: str, *, reason: str = "", rps: float | None = None,
                              batch_id: str | None = None) -> _batch.BatchOperationSummary:
        """Terminate every execution ``query`` matches (docs/RESET.md); what all four ``batch_*`` share is said here.

        The matching executions are all read first (acting on them does not move the query's pages), then acted on
        at most ``rps`` a second, 8 at a time, each call with a request id derived from the batch id. An execution
        already closed (or gone) counts as skipped, so running the same batch again after an interruption is safe.

        Args:
            query: a non-empty visibility query, e.g. ``"WorkflowType = 'Order'"``.
            reason: recorded with each termination (``batch_cancel``: with each cancellation request).
            rps: at most this many calls a second (None: no limit).
            batch_id: the request ids' root. The default derives from the namespace, the operation, the query and
                its arguments, so the same call again resumes the batch; pass another to repeat it on purpose.

        Returns:
            How many matched, which were done, skipped or failed, and why (one execution's failure never raises).

        Raises:
            RPCError: the query is malformed (``status="INVALID_ARGUMENT"``; nothing was changed).
            ValueError: an empty query or a non-positive ``rps``.
        """
        return await _batch.batch(self, "terminate", query, reason=reason, rps=rps, batch_id=batch_id)

    async def batch_cancel(self, query: str, *, reason: str = "", rps: float | None = None,
                           batch_id: str | None = None) -> _batch.BatchOperationSummary:
        """Request cancellation of every execution ``query`` matches; Args, Returns, Raises: :meth:`batch_terminate`."""
        return await _batch.batch(self, "cancel", query, reason=reason, rps=rps, batch_id=batch_id)

    async def batch_signal(self, query: str, signal: Any, *args: Any, rps: float | None = None,
                           batch_id: str | None = None) -> _batch.BatchOperationSummary:
        """Signal every execution ``query`` matches with ``signal`` (its name or method) and ``args``.

        Each signal carries a request id derived from the batch id and the run, so a re-run of the batch does not
        deliver it twice; pass a new ``batch_id`` to signal again. Other Args, Returns, Raises: :meth:`batch_terminate`;
        also TypeError for a ``signal`` that is neither a name nor a signal method or an argument that cannot be
        converted, ValueError for an empty signal name.
        """
        return await _batch.batch(self, "signal", query, signal=signal, args=args, rps=rps, batch_id=batch_id)

    async def batch_reset(self, query: str, *, type: ResetType = ResetType.LAST_WORKFLOW_TASK, reason: str = "",
                          reapply_signals: bool = True, rps: float | None = None,
                          batch_id: str | None = None) -> _batch.BatchOperationSummary:
        """Reset every execution ``query`` matches to its first or last completed workflow task.

        ``type``, ``reason`` and ``reapply_signals`` are :meth:`WorkflowHandle.reset`'s. A reset acts once per
        workflow id (on its earliest matching run with a completed workflow task; none: a failure in the summary),
        and a re-run of the batch does not reset a workflow id twice (its request id derives from the batch id and
        the workflow id). Other Args, Returns, Raises: :meth:`batch_terminate`.
        """
        return await _batch.batch(self, "reset", query, reason=reason, reset_type=type,
                                  reapply_signals=reapply_signals, rps=rps, batch_id=batch_id)

    async def batch_set_versioning_override(self, query: str, override: VersioningOverride | None, *,
                                            rps: float | None = None, batch_id: str | None = None
                                            ) -> _batch.BatchOperationSummary:
        """Set (None: remove) the versioning override of every execution ``query`` matches, as
        :meth:`WorkflowHandle.set_versioning_override` does for one. Args, Returns, Raises: :meth:`batch_terminate`;
        also TypeError for an ``override`` that is neither a VersioningOverride nor None."""
        return await _batch.batch(self, "set_versioning_override", query, override=override, rps=rps, batch_id=batch_id)

    delete_workflow = _erasure.delete_workflow  # erasure (docs/ERASURE.md): documented in spindle.client._erasure
    count_erasure = _erasure.count_erasure
    start_erasure = _erasure.start_erasure
    list_batch_operations = _erasure.list_batch_operations

    async def create_schedule(self, id: str, schedule: Schedule, *, trigger_immediately: bool = False,
                              backfill: Sequence[ScheduleBackfill] = (), memo: Mapping[str, Any] | None = None,
                              search_attributes: TypedSearchAttributes | Mapping[str, Any] | None = None
                              ) -> _schedule.ScheduleHandle:
        """Create a schedule and return its handle (docs/SCHEDULES.md; Temporal's ``create_schedule``).

        The schedule lives in the control plane: from now on it starts, at each due time, the workflow
        ``{action id}-{due time in UTC, YYYY-MM-DDTHH:MM:SSZ}``.

        Args:
            trigger_immediately, backfill: take one action at once; take the actions due in past ranges (both sent
                right after the create, in one more call).
            memo, search_attributes: of the schedule itself; not stored by Spindle yet, so anything but ``None`` (or
                empty) is refused. Runs get the action's own ``memo`` / ``search_attributes``.

        Raises:
            ScheduleAlreadyRunningError: a schedule with this id exists (status ``ALREADY_EXISTS``).
            RPCError: the server refused the schedule (``INVALID_ARGUMENT`` naming the field, e.g. an unregistered
                search attribute of the action).
            ValueError: an empty id, a schedule memo or search attributes, an action with a ``retry_policy``, or
                action arguments with a context-binding EncryptionCodec.
            TypeError: an argument of the action cannot be converted.
        """
        return await _schedule.create_schedule(self, id, schedule, trigger_immediately=trigger_immediately,
                                               backfill=backfill, memo=memo, search_attributes=search_attributes)

    def get_schedule_handle(self, id: str) -> _schedule.ScheduleHandle:
        """A handle to the schedule ``id`` (no call is made; a missing schedule fails the handle's calls)."""
        return _schedule.ScheduleHandle(self, id)

    def list_schedules(self, query: str | None = None, *, page_size: int = 100,
                       next_page_token: bytes | None = None) -> _schedule.ScheduleAsyncIterator:
        """The namespace's schedules by id: ``async for entry in client.list_schedules(): ...``.

        Yields :class:`~spindle.client.ScheduleListEntry` objects (``id``, ``paused``, ``note``, ``workflow_type``,
        up to 3 ``recent_actions`` and 3 ``next_action_times``); no call is made until the iteration starts, and
        ``await client.list_schedules()`` (Temporal's form) gives the same iterator.

        Raises:
            ValueError: ``query`` is given (filtering schedules by a visibility query is not supported yet) or
                ``page_size`` is not 1..1000.
        """
        return _schedule.list_schedules(self, query, page_size=page_size, next_page_token=next_page_token)

    async def create_namespace(self, name: str, *, retention: datetime.timedelta | None = None, description: str = "",
                               owner_email: str = "", search_attributes: Mapping[str, Any] | None = None,
                               archival_uri: str = "", rps_limit: float | None = None) -> NamespaceDescription:
        """Register a namespace and return its description.

        ``search_attributes`` maps names to types: ``"Keyword"``, ``"Text"``, ``"Int"``, ``"Double"``, ``"Bool"``,
        ``"Datetime"``, ``"KeywordList"``. ``archival_uri`` must be under a root the server allows (its
        ``archival_allowed_roots``). ``rps_limit``: requests per second for the namespace's clients (0: unlimited;
        None: the server's default); calls over it are refused with ``RESOURCE_EXHAUSTED`` and a retry delay, which
        this client waits out for calls that are safe to repeat.

        Raises:
            RPCError: ``status="ALREADY_EXISTS"`` if it exists, ``"INVALID_ARGUMENT"`` for a bad name, attribute,
                archival URI or rate limit.
            ValueError: an unknown search attribute type.
        """
        return await _namespaces.create_namespace(
            self, name, retention=retention, description=description, owner_email=owner_email,
            search_attributes=search_attributes, archival_uri=archival_uri, rps_limit=rps_limit)

    async def describe_namespace(self, name: str | None = None) -> NamespaceDescription:
        """Describe ``name`` (default: the client's namespace).

        Raises:
            NamespaceNotFoundError: no such namespace.
        """
        return await _namespaces.describe_namespace(self, name)

    async def update_namespace(self, name: str | None = None, *, description: str | None = None,
                               owner_email: str | None = None, retention: datetime.timedelta | None = None,
                               search_attributes: Mapping[str, Any] | None = None, archival_uri: str | None = None,
                               rps_limit: float | None = None) -> NamespaceDescription:
        """Change the given fields of namespace ``name`` (default: the client's); return the new description.

        The fields are :meth:`create_namespace`'s; those not given keep their value. ``search_attributes`` replaces
        the whole set of custom attributes; ``rps_limit`` (0 = unlimited) is in force at once.

        Raises:
            NamespaceNotFoundError: no such namespace.
            RPCError: e.g. ``FAILED_PRECONDITION`` when removing an attribute still in use, ``INVALID_ARGUMENT`` for
                an archival URI outside the server's allowed roots or a bad rate limit.
            ValueError: an unknown search attribute type.
        """
        return await _namespaces.update_namespace(
            self, name, description=description, owner_email=owner_email, retention=retention,
            search_attributes=search_attributes, archival_uri=archival_uri, rps_limit=rps_limit)

    async def list_namespaces(self) -> list[NamespaceDescription]:
        """All registered namespaces."""
        return await _namespaces.list_namespaces(self)

    async def delete_namespace(self, name: str, *, force: bool = False) -> int:
        """Delete a namespace; returns how many running executions ``force`` terminated.

        Raises:
            NamespaceNotFoundError: no such namespace.
            RPCError: ``FAILED_PRECONDITION`` while executions run and ``force`` is not set.
        """
        return await _namespaces.delete_namespace(self, name, force=force)

    async def add_search_attributes(self, search_attributes: Mapping[str, Any]) -> None:
        """Register custom search attributes (name -> type, as :meth:`create_namespace`) in the client's namespace.

        Raises:
            RPCError: an attribute exists with another type, or a bad name.
            ValueError: an unknown type name.
        """
        await _namespaces.add_search_attributes(self, search_attributes)

    async def create_api_key(self, name: str, *, grants: Mapping[str, str] | None = None, system_admin: bool = False,
                             expires: datetime.timedelta | datetime.datetime | None = None,
                             task_queues: Mapping[str, Sequence[str]] | None = None) -> _api_keys.ApiKey:
        """Create an API key. The returned :class:`ApiKey` carries its ``secret``: the only time it is shown.

        Args:
            name: what the key is for (shown in listings and the audit log).
            grants: role per namespace name: ``"reader"``, ``"worker"``, ``"writer"`` or ``"admin"``.
            system_admin: may do everything, on every namespace (only a system_admin may create one).
            expires: how long the key works (a ``timedelta``) or until when (a ``datetime``); None: no expiry.
            task_queues: namespace -> the only task queues the key's ``worker`` grant there may poll and answer.

        Raises:
            RPCError: ``PERMISSION_DENIED`` unless the caller is a system_admin or holds ``admin`` on every namespace
                of ``grants``; ``INVALID_ARGUMENT`` for an unknown role, a missing namespace, no grants, bad task_queues.
            ValueError: ``expires`` is in the past or not a duration/time.
        """
        return await _api_keys.create_api_key(self, name, grants, system_admin, expires, task_queues)

    async def list_api_keys(self) -> list[_api_keys.ApiKey]:
        """The keys the caller may manage (a system_admin: all), revoked and expired ones included, by id."""
        return await _api_keys.list_api_keys(self)

    async def revoke_api_key(self, id: str) -> None:
        """Revoke the key ``id``: its next call fails with ``UNAUTHENTICATED`` (on other cluster members within
        the server's key cache time, 5 s by default). Revoking a revoked key changes nothing.

        Raises:
            RPCError: ``NOT_FOUND`` (unknown id); ``PERMISSION_DENIED`` (grants on namespaces the caller does not administer).
        """
        await _api_keys.revoke_api_key(self, id)
