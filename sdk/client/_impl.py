"""The end of a client's interceptor chain: :class:`_ClientOutboundImpl` makes the RPCs.

``Client.start_workflow`` and a handle's ``signal`` / ``query`` / ``start_update`` build an input
(``spindle.client.StartWorkflowInput`` ...) and pass it down the chain of the client's
interceptors; the last link is this class, which turns the input into the request, encodes its
payloads with the client's codec chain and sends it (as temporalio's ``_ClientImpl`` does).
:func:`outbound_chain` builds a client's chain and :func:`start_input` the input of a start.
"""

from __future__ import annotations

import uuid

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import grpc
import grpc.aio

from spindle import exceptions as E
from spindle._interceptors.client import (
    Interceptor,
    OutboundInterceptor,
    QueryWorkflowInput,
    SignalWorkflowInput,
    StartWorkflowInput,
    StartWorkflowUpdateInput,
)
from spindle._interceptors.worker import check_interceptors
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.client._call_args import ARG_UNSET, call_args
from spindle.client._definitions import SIGNAL_ATTR, START_ARGS_ATTR, handler_name_and_hint, workflow_name_and_hint
from spindle.client._retry_delay import call_with_retries, retry_delay
from spindle.client._rpc import RETRY_BUDGET, duration_ms, map_rpc_error
from spindle.client._update import WorkflowUpdateHandle, send_update
from spindle.client._workflow_handle import WorkflowClient, WorkflowHandle
from spindle.common._search_attributes import search_attributes_to_payloads
from spindle.converter._data_converter import DataConverter

__all__ = ["ARG_UNSET", "OutboundClient", "_ClientOutboundImpl", "check_client_interceptors", "outbound_chain", "start_input"]


class OutboundClient(WorkflowClient, Protocol):
    """What the chain's end uses of a :class:`spindle.client.Client` (which imports this module)."""

    _stub: Any


def _payload_map(converter: DataConverter, values: Mapping[str, Any] | None) -> dict[str, pb.Payload]:
    if not values:
        return {}
    return {k: converter.to_payload(v) for k, v in values.items()}


def check_client_interceptors(interceptors: Sequence[Any]) -> tuple[Interceptor, ...]:
    """``interceptors`` as a tuple; TypeError naming the first entry that is not a ``spindle.client.Interceptor``."""
    return check_interceptors(interceptors, "Client.connect(interceptors=...)", Interceptor,
                              "spindle.client.Interceptor")


def outbound_chain(client: OutboundClient, interceptors: Sequence[Interceptor]) -> OutboundInterceptor:
    """The chain the client's calls go down: the first of ``interceptors`` outermost, :class:`_ClientOutboundImpl` last."""
    outbound: OutboundInterceptor = _ClientOutboundImpl(client)
    for interceptor in reversed(interceptors):
        outbound = interceptor.intercept_client(outbound)
    return outbound


def start_input(workflow: Any, positional: Sequence[Any], *, start_signal: Any, result_type: Any, arg: Any = ARG_UNSET,
                args: Sequence[Any] = (), **fields: Any) -> StartWorkflowInput:
    """The input of ``Client.start_workflow``: ``workflow`` and ``start_signal`` by their wire names, the result type
    hint (``result_type`` or the run method's annotation), a DSL definition's ``args`` rewritten with its DAG.

    The arguments are ``positional``, ``arg`` or ``args`` (one form: see :func:`call_args`).

    Raises:
        TypeError: ``workflow`` or ``start_signal`` is not a definition or a name.
        ValueError: the arguments given in more than one form.
        spindle.dsl.DslError: a DSL definition's inputs do not match its declarations.
    """
    args = call_args("start_workflow", positional, arg, args)
    name, hint = workflow_name_and_hint(workflow)
    prepare = getattr(workflow, START_ARGS_ATTR, None) if not isinstance(workflow, str) else None
    if prepare is not None:
        args = tuple(prepare(args))
    signal_name = handler_name_and_hint(start_signal, SIGNAL_ATTR)[0] if start_signal is not None else None
    return StartWorkflowInput(workflow=name, args=args, headers={}, result_type=result_type or hint,
                              start_signal=signal_name, **fields)


def _execution(id: str, run_id: str | None) -> pb.WorkflowExecution:
    """The execution an input addresses: its run, or the latest run of its id (no run id)."""
    return pb.WorkflowExecution(workflow_id=id, run_id=run_id or "")


class _ClientOutboundImpl(OutboundInterceptor):
    """The end of a client's interceptor chain: the client's own calls."""

    def __init__(self, client: OutboundClient) -> None:  # noqa: D107 - no next: this is the end
        self._client = client

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any]:
        """Start (or signal-with-start) the run; the handle targets the run started (or signalled)."""
        client = self._client
        name, id = input.workflow, input.id
        conv = client.data_converter
        start = svc.StartWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_id=id,
            workflow_type=name,
            task_queue=input.task_queue,
            input=conv.to_payloads(input.args),
            execution_timeout_ms=duration_ms(input.execution_timeout),
            run_timeout_ms=duration_ms(input.run_timeout),
            task_timeout_ms=duration_ms(input.task_timeout),
            identity=client.identity,
            request_id=input.request_id or str(uuid.uuid4()),
            workflow_id_reuse_policy=int(input.id_reuse_policy),  # type: ignore[arg-type]
            workflow_id_conflict_policy=int(input.id_conflict_policy),  # type: ignore[arg-type]
            workflow_start_delay_ms=duration_ms(input.start_delay),
            cron_schedule=input.cron_schedule,
        )
        for k, v in _payload_map(conv, input.memo).items():
            start.memo.fields[k].CopyFrom(v)
        for k, v in search_attributes_to_payloads(input.search_attributes, conv).items():
            start.search_attributes.indexed_fields[k].CopyFrom(v)
        for k, v in input.headers.items():
            start.header.fields[k].CopyFrom(v)
        try:
            if input.start_signal is not None:
                req_sws = svc.SignalWithStartWorkflowExecutionRequest(
                    start=start, signal_name=input.start_signal, signal_input=conv.to_payloads(input.start_signal_args))
                await client._encode(req_sws, start.workflow_id)
                # retried while throttled: the request id makes a repeated start count once
                resp: Any = await call_with_retries(client._stub.SignalWithStartWorkflowExecution, req_sws,
                                                    budget=RETRY_BUDGET)
            else:
                await client._encode(start)
                resp = await call_with_retries(client._stub.StartWorkflowExecution, start, budget=RETRY_BUDGET)
        except grpc.aio.AioRpcError as e:
            mapped = map_rpc_error(e, workflow_id=id, workflow_type=name)
            if e.code() == grpc.StatusCode.ALREADY_EXISTS and not isinstance(mapped, E.WorkflowAlreadyStartedError):
                mapped = E.WorkflowAlreadyStartedError(e.details() or "workflow already started", workflow_id=id,
                                                       workflow_type=name)
            raise mapped from e
        return WorkflowHandle(client, id, run_id=resp.run_id, result_run_id=resp.run_id,
                              first_execution_run_id=resp.run_id, result_type=input.result_type,
                              target_run=False)

    async def signal_workflow(self, input: SignalWorkflowInput) -> None:
        """Send the signal, with a request id so that a retried send is delivered once."""
        client = self._client
        req = svc.SignalWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=_execution(input.id, input.run_id),
            signal_name=input.signal, input=client.data_converter.to_payloads(input.args), identity=client.identity,
            request_id=str(uuid.uuid4()))
        for k, v in input.headers.items():
            req.header.fields[k].CopyFrom(v)
        await client._encode(req)
        await client._rpc("SignalWorkflowExecution", req)

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        """Ask the query; a failure of the query itself is a ``QueryFailedError``, the server's an ``RPCError``."""
        client = self._client
        req = svc.QueryWorkflowRequest(
            namespace=client.namespace, execution=_execution(input.id, input.run_id),
            query=pb.WorkflowQuery(query_type=input.query, query_args=client.data_converter.to_payloads(input.args)),
            timeout_ms=duration_ms(input.timeout))
        for k, v in input.headers.items():
            req.query.header.fields[k].CopyFrom(v)
        await client._encode(req)
        try:
            resp = await call_with_retries(client._stub.QueryWorkflow, req, budget=RETRY_BUDGET)
        except grpc.aio.AioRpcError as e:
            mapped = map_rpc_error(e)
            if isinstance(mapped, (E.WorkflowNotFoundError, E.NamespaceNotFoundError)) and "query" not in \
                    mapped.message.lower():
                raise mapped from e
            if mapped.status in ("UNAVAILABLE", "UNAUTHENTICATED", "PERMISSION_DENIED") or retry_delay(e) is not None:
                raise mapped from e  # not the query's failure: the server's (a throttle outlasted the retries)
            raise E.QueryFailedError(mapped.message) from e
        await client._decode(resp, input.id)
        values = client.data_converter.from_payloads(resp.query_result, [input.result_type])
        return values[0] if values else None

    async def start_workflow_update(self, input: StartWorkflowUpdateInput) -> WorkflowUpdateHandle[Any]:
        """Send the update and wait until it reached ``input.wait_for_stage``."""
        client = self._client
        req = svc.UpdateWorkflowExecutionRequest(
            namespace=client.namespace, workflow_execution=_execution(input.id, input.run_id),
            request=pb.UpdateRequest(update_id=input.update_id, name=input.update,
                                     input=client.data_converter.to_payloads(list(input.args)),
                                     identity=client.identity))
        for k, v in input.headers.items():
            req.request.header.fields[k].CopyFrom(v)
        return await send_update(client, req, stage=input.wait_for_stage, result_type=input.result_type,
                                 rpc_timeout=input.rpc_timeout)
