"""Answering a workflow task: complete it (asking for eager activities and the next task) or fail it.

A completion asks the server to return the next workflow task (and the eager activity
tasks this worker reserved slots for) in the response, saving a poll round trip. A task
that cannot be processed (a payload the codecs refuse, a result that cannot be converted
or encoded, an error in workflow code) is answered with ``RespondWorkflowTaskFailed``
carrying the error, so it shows in the history and the server retries it with backoff;
the run's cached instance is evicted.
"""

from __future__ import annotations

import logging

from collections.abc import Mapping, Sequence
from typing import Any, cast

import grpc
import grpc.aio

from spindle._workflow.deadlock import DeadlockError
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.converter._payload_codec import PayloadCodec
from spindle.converter._payload_visitor import encode_message
from spindle.converter._serialization_context import WorkflowSerializationContext
from spindle.exceptions import ApplicationError, NonDeterminismError
from spindle.worker._activity_worker import ActivityWorker
from spindle.worker._run_cache import CachedRun, RunCache

__all__ = ["UNHANDLED", "WorkflowTaskResponder", "describe_task", "log_task_failure", "task_context"]

log = logging.getLogger("spindle.worker")
#: The cause of a task failed by an error in workflow code or in the worker.
UNHANDLED = pb.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE
#: A task failure's stack trace is cut to this many characters (its end kept): each retry writes it again.
_MAX_TASK_FAILURE_STACK = 32 * 1024


def describe_task(task: svc.PollWorkflowTaskQueueResponse) -> str:
    """``'workflow W (id 'w', run r)'``, for messages."""
    wf = task.workflow_execution
    return f"workflow {task.workflow_type} (id {wf.workflow_id!r}, run {wf.run_id})"


def task_context(task: svc.PollWorkflowTaskQueueResponse, namespace: str) -> WorkflowSerializationContext:
    """What the codecs bind the task's payloads to (its namespace, else ``namespace``, and workflow)."""
    return WorkflowSerializationContext(task.namespace or namespace, task.workflow_execution.workflow_id)


def _safe_str(error: BaseException) -> str:
    try:
        return str(error)
    except Exception as e:  # noqa: BLE001 - an exception whose __str__ raises
        return f"<str() failed: {type(e).__name__}>"


def log_task_failure(task: svc.PollWorkflowTaskQueueResponse, error: BaseException) -> None:
    """A failed workflow task: ERROR with the traceback (the server retries the task, so each try logs)."""
    wf = task.workflow_execution
    what = "is not deterministic" if isinstance(error, NonDeterminismError) else "failed"
    log.error("workflow task of %s %s (run %s, attempt %d) %s: %s: %s", task.workflow_type, wf.workflow_id,
              wf.run_id, task.attempt or 1, what, type(error).__name__, _safe_str(error), exc_info=error,
              extra={"workflow_id": wf.workflow_id, "run_id": wf.run_id, "workflow_type": task.workflow_type})


def _failure_cause(cause: int, error: BaseException) -> str:
    """The ``cause`` label of a failed workflow task (see ``spindle.worker._metrics``)."""
    if cause == pb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR or isinstance(error, NonDeterminismError):
        return "non_determinism"
    if cause == pb.WORKFLOW_TASK_FAILED_CAUSE_UNREGISTERED_WORKFLOW_TYPE:
        return "unregistered_type"
    if isinstance(error, DeadlockError):
        return "deadlock"
    if isinstance(error, ApplicationError) and error.type in ("PayloadDecodeError", "PayloadEncodeError"):
        return "payload"
    return "other"


class WorkflowTaskResponder:
    """Sends a workflow task's outcome to the server, and evicts the run from ``runs`` when the outcome is lost.

    Args:
        stub: the client's stub.
        namespace: the worker's namespace.
        identity: names the worker in histories.
        converter: the data converter (for the failure of a failed task).
        codecs: the client's codec chain (encodes what is sent).
        sticky_attributes: asks the server to send the run's next task to this worker's sticky queue
            (``None`` when caching is off).
        runs: the worker's sticky cache.
        metrics: records ``spindle_worker_*`` metrics, or ``None``.
        deployment_options: the worker's build, sent with every completion with the behavior
            ``versioning_behaviors`` gives the task's workflow type (``None``: an unversioned worker,
            whose completions carry neither).
    """

    def __init__(self, stub: Any, namespace: str, identity: str, converter: Any, codecs: Sequence[PayloadCodec],
                 sticky_attributes: svc.StickyExecutionAttributes | None, runs: RunCache, metrics: Any,
                 deployment_options: pb.WorkerDeploymentOptions | None = None,
                 versioning_behaviors: Mapping[str, int] | None = None) -> None:
        self._stub = stub
        self._ns = namespace
        self._identity = identity
        self._conv = converter
        self._codecs = codecs
        self._sticky_attrs = sticky_attributes
        self._runs = runs
        self._metrics = metrics
        self._deployment_options = deployment_options
        self._behaviors = versioning_behaviors or {}

    async def complete(self, task: svc.PollWorkflowTaskQueueResponse, commands: Sequence[pb.Command], run_id: str,
                       entry: CachedRun, closing: bool, acts: ActivityWorker | None
                       ) -> svc.PollWorkflowTaskQueueResponse | None:
        """Complete the task with ``commands``, running eagerly (on ``acts``) the activities it gets back.

        Returns the run's next workflow task when the server returned one. Never raises for
        a refused completion: a lost completion evicts the run, and commands the codecs
        cannot encode fail the task instead.
        """
        reserved = 0
        if acts is not None and not closing:
            for c in commands:
                if c.command_type == pb.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK:
                    a = c.schedule_activity_task_command_attributes
                    if acts.try_reserve(a.activity_type, a.task_queue):
                        a.request_eager_execution = True
                        reserved += 1
        req = svc.RespondWorkflowTaskCompletedRequest(
            task_token=task.task_token, commands=commands, identity=self._identity,
            return_new_workflow_task=not closing, namespace=self._ns)
        if self._sticky_attrs is not None and not closing:
            req.sticky_attributes.CopyFrom(self._sticky_attrs)
        if self._deployment_options is not None:
            req.deployment_options.CopyFrom(self._deployment_options)
            req.versioning_behavior = self._behaviors.get(task.workflow_type, 0)  # type: ignore[assignment]
        try:
            if self._codecs:
                await encode_message(self._codecs, req, context=task_context(task, self._ns))
            resp = await self._stub.RespondWorkflowTaskCompleted(req)
        except grpc.aio.AioRpcError as e:
            for _ in range(reserved):
                acts.run_reserved(None)  # type: ignore[union-attr]
            self._runs.evict(run_id, entry)
            level = logging.DEBUG if e.code() == grpc.StatusCode.NOT_FOUND else logging.WARNING
            log.log(level, "completing workflow task of %s failed: %s %s", run_id, e.code(), e.details())
            return None
        except Exception as e:  # noqa: BLE001 - a codec refused the commands' payloads
            for _ in range(reserved):
                acts.run_reserved(None)  # type: ignore[union-attr]
            self._runs.evict(run_id, entry)
            error = ApplicationError(f"the payloads of the workflow task's commands cannot be encoded by the codec "
                                     f"chain: {type(e).__name__}: {e}", type="PayloadEncodeError")
            log_task_failure(task, error)
            await self.fail(task, UNHANDLED, error)
            return None
        if reserved:
            got = list(resp.activity_tasks)
            for t in got[:reserved]:
                acts.run_reserved(t)  # type: ignore[union-attr]
            for _ in range(reserved - min(reserved, len(got))):
                acts.run_reserved(None)  # type: ignore[union-attr]
            for t in got[reserved:]:  # more than we asked for: should not happen; run them anyway
                if acts.slots.try_acquire():  # type: ignore[union-attr]
                    acts.run_reserved(t)  # type: ignore[union-attr]
        if resp.HasField("workflow_task") and resp.workflow_task.task_token:
            return cast("svc.PollWorkflowTaskQueueResponse | None", resp.workflow_task)
        return None

    async def undecodable(self, task: svc.PollWorkflowTaskQueueResponse, error: Exception) -> None:
        """A task whose payloads the codecs refuse: answer it with the error (a query gets it as its answer)."""
        message = f"cannot decode the payloads of a task of {describe_task(task)}: {type(error).__name__}: {error}"
        if task.HasField("query"):
            log.warning("%s", message)
            req = svc.RespondQueryTaskCompletedRequest(task_token=task.task_token, namespace=self._ns,
                                                       error_message=message)
            try:
                await self._stub.RespondQueryTaskCompleted(req)
            except grpc.aio.AioRpcError as e:
                log.debug("answering a query failed: %s %s", e.code(), e.details())
            return
        self._runs.evict(task.workflow_execution.run_id)
        failure = ApplicationError(message, type="PayloadDecodeError")
        log_task_failure(task, failure)
        await self.fail(task, UNHANDLED, failure)

    def task_failure(self, error: BaseException) -> pb.Failure:
        """``error`` as a Failure that never fails to build, never has an empty message and has a bounded stack."""
        try:
            failure = self._conv.to_failure(error)
        except BaseException as e:  # noqa: BLE001 - e.g. MemoryError again, or a __str__ that raises
            failure = pb.Failure(message=f"{type(error).__name__} (its details cannot be converted: "
                                         f"{type(e).__name__})", source="spindle-python")
            failure.application_failure_info.type = type(error).__name__
        if not failure.message:
            failure.message = type(error).__name__
        if isinstance(error, DeadlockError) and error.stack_trace:
            failure.stack_trace = error.stack_trace  # where the workflow code was stuck, not where we noticed
        if len(failure.stack_trace) > _MAX_TASK_FAILURE_STACK:
            failure.stack_trace = "...\n" + failure.stack_trace[-_MAX_TASK_FAILURE_STACK:]
        return cast("pb.Failure", failure)

    async def fail(self, task: svc.PollWorkflowTaskQueueResponse, cause: int, error: BaseException) -> None:
        """Fail the task with ``error`` and ``cause`` (a ``WORKFLOW_TASK_FAILED_CAUSE_*``); never raises for the server."""
        if self._metrics is not None:
            self._metrics.workflow_task_failed(task.workflow_type, _failure_cause(cause, error))
        req = svc.RespondWorkflowTaskFailedRequest(task_token=task.task_token, cause=cause,  # type: ignore[arg-type]
                                                   failure=self.task_failure(error), identity=self._identity,
                                                   namespace=self._ns)
        if self._codecs:
            try:
                await encode_message(self._codecs, req, context=task_context(task, self._ns))
            except Exception as e:  # noqa: BLE001 - the codec cannot encode the failure either
                # Say only what cannot leak a secret: the kinds of the two errors.
                req.failure.CopyFrom(pb.Failure(
                    message=f"{type(error).__name__} (the failure cannot be encoded by the codec chain: "
                            f"{type(e).__name__})", source="spindle-python"))
        try:
            await self._stub.RespondWorkflowTaskFailed(req)
        except grpc.aio.AioRpcError as e:
            log.debug("failing workflow task failed: %s %s", e.code(), e.details())
