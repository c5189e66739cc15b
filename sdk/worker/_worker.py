"""``Worker``: hosts workflows and activities for one task queue.

Registration is explicit (``Worker(client, task_queue=..., workflows=[...],
activities=[...])``); nothing is registered globally. Run it with ``async with
worker:`` (it runs in the background until the block ends) or ``await
worker.run()`` (until cancelled or :meth:`Worker.shutdown`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import functools
import logging
import os

from collections.abc import Callable, Sequence
from typing import Any

from spindle._activity.shared_state import SharedStateManager
from spindle._interceptors.worker import Interceptor, check_interceptors
from spindle._runtime._context import bind_runtime
from spindle.worker._activity_worker import ActivityWorker
from spindle.worker._deployment import WorkerDeploymentConfig, deployment_options, versioning_behaviors
from spindle.worker._metrics import WorkerMetrics
from spindle.worker._workflow_worker import WorkflowWorker
from spindle.worker.workflow_sandbox import WorkflowRunner

__all__ = ["Worker", "WorkflowDeterminismCheckError"]

log = logging.getLogger("spindle.worker")


class WorkflowDeterminismCheckError(ValueError):
    """The static determinism check found problems in a registered workflow.

    ``findings`` maps workflow type names to what was found. Fix the code, or opt
    the workflow out with ``@workflow.defn(check_determinism=False)``.
    """

    def __init__(self, findings: dict[str, list[str]]) -> None:
        lines = ["workflow code may not be deterministic:"]
        for name, items in findings.items():
            lines += [f"  {name}: {item}" for item in items]
        lines.append("fix it, or opt out with @workflow.defn(check_determinism=False)")
        super().__init__("\n".join(lines))
        self.findings = findings


def _debug_from_env() -> bool:
    value = os.environ.get("SPINDLE_DEBUG", "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


def _check_determinism(defn: Any, unrestricted: frozenset[str] = frozenset()) -> list[str]:
    if not getattr(defn, "check_determinism", True):
        return []
    try:
        from spindle._workflow.determinism_check import check_workflow
    except ImportError:  # the checker is optional at this layer
        return []
    findings = check_workflow(defn)
    return [str(f) for f in (findings or []) if f.call.split(".", 1)[0] not in unrestricted]


class Worker:
    """Polls one task queue and runs the given workflows and activities.

    Args:
        client: a connected :class:`~spindle.client.Client` (its namespace, converter and codecs are used).
        task_queue: the queue to serve.
        workflows: ``@workflow.defn`` classes or functions (or DSL definitions).
        activities: ``@activity.defn`` functions or bound methods.
        max_concurrent_workflow_tasks: workflow tasks processed at once.
        max_concurrent_activities: activity attempts running at once.
        max_cached_workflows: runs kept in memory between tasks (sticky cache);
            0 disables stickiness (every task replays the full history).
        activity_executor: where sync (plain ``def``) activities run; by default a
            thread pool with ``max_concurrent_activities`` threads is created. Any
            other executor (e.g. a ``ProcessPoolExecutor``) needs ``shared_state_manager``.
        shared_state_manager: carries heartbeats and cancellation between this process
            and sync activities running in a non-thread ``activity_executor``, e.g.
            ``SharedStateManager.create_from_multiprocessing(multiprocessing.Manager())``.
        graceful_shutdown_timeout: on shutdown, how long running activities may
            finish before they are cancelled.
        identity: names this worker in histories (default: the client's identity).
        sticky_schedule_to_start_timeout: how long the server holds a task for this
            worker's sticky queue before giving it to any worker.
        max_task_queue_activities_per_second: a rate limit for the whole task queue's
            activities, enforced by the server across every worker polling it (protects
            what the activities call); ``None`` = unlimited.
        deadlock_detection_timeout: how long workflow code may run without yielding
            (an activation, a query handler, an eviction's cleanup) before its workflow task
            fails with "[TMPRL1101] Potential deadlock detected" naming the workflow, and
            the interrupted instance is evicted (Temporal's deadlock detection; the Go
            SDK's ``DeadlockDetectionTimeout``). The worker keeps serving other workflows;
            the server retries the task with backoff. ``None`` disables detection. Code
            stuck inside one C-level call is interrupted only when that call returns (see
            :mod:`spindle._workflow.deadlock`).
        debug_mode: disable deadlock detection, e.g. to step through workflow code in a
            debugger (Temporal's name); also on when the ``SPINDLE_DEBUG`` environment
            variable is set to a non-empty value other than ``0``/``false``.
        interceptors: :class:`spindle.worker.Interceptor` objects wrapping each activity
            attempt and each workflow run (the first is the outermost). A client's
            interceptors that are also worker interceptors are not added automatically:
            pass them here too.
        metrics: a :class:`spindle.worker.WorkerMetrics` naming the ``prometheus_client``
            registry this worker records its ``spindle_worker_*`` metrics into (poll and
            task latency, slots in use, sticky cache size/hits/misses, activity and workflow
            task failures, replay latency; see docs/OBSERVABILITY.md). ``None`` (the
            default) records nothing.
        deployment_config: this worker's build of a worker deployment (worker build versioning,
            temporalio's parameter): sent on every poll and workflow task completion, with the
            behavior each workflow declares (``@workflow.defn(versioning_behavior=...)``, else the
            config's ``default_versioning_behavior``). ``None``: an unversioned worker.
        workflow_runner: a :mod:`spindle.worker.workflow_sandbox` runner (temporalio's parameter). Spindle has
            no sandbox: the runner only tells the determinism check which modules its restrictions leave
            unrestricted (not reported).
        workflow_task_executor: accepted for temporalio code and kept as ``worker.workflow_task_executor``;
            Spindle runs workflow activations on the worker's event loop, not on this executor.
        nexus_service_handlers: ``nexusrpc.handler.service_handler`` instances; the worker then polls this
            task queue's Nexus tasks and answers them (at most ``max_concurrent_nexus_tasks`` at once; ``def``
            operation handlers run on ``nexus_task_executor``, required for them).

    Raises:
        TypeError: ``interceptors`` holds something that is not a ``spindle.worker.Interceptor``,
            or ``metrics`` is not a ``WorkerMetrics``, or ``deployment_config`` not a ``WorkerDeploymentConfig``.
        ValueError: with ``deployment_config(use_worker_versioning=True)`` and no default behavior, a
            workflow that declares no versioning behavior (the message names it); a deployment version
            with an empty name or build id; no workflows, activities or Nexus handlers, an empty task queue, two
            workflows or activities with the same name, a sync activity with a
            non-thread ``activity_executor`` but no ``shared_state_manager``, a
            ``deadlock_detection_timeout`` that is not positive, or (as
            :class:`WorkflowDeterminismCheckError`) the determinism check's findings.
        TypeError: an entry is not a decorated workflow or activity, or a sync
            activity for a ``ProcessPoolExecutor`` cannot be pickled.
    """

    def __init__(
        self,
        client: Any,
        *,
        task_queue: str,
        workflows: Sequence[Any] = (),
        activities: Sequence[Callable[..., Any]] = (),
        max_concurrent_workflow_tasks: int = 100,
        max_concurrent_activities: int = 100,
        max_cached_workflows: int = 1000,
        activity_executor: concurrent.futures.Executor | None = None,
        graceful_shutdown_timeout: datetime.timedelta = datetime.timedelta(seconds=10),
        identity: str | None = None,
        sticky_schedule_to_start_timeout: datetime.timedelta = datetime.timedelta(seconds=5),
        workflow_task_pollers: int = 2,
        activity_task_pollers: int = 4,
        max_task_queue_activities_per_second: float | None = None,
        shared_state_manager: SharedStateManager | None = None,
        deadlock_detection_timeout: datetime.timedelta | None = datetime.timedelta(seconds=2),
        debug_mode: bool = False,
        interceptors: Sequence[Interceptor] = (),
        metrics: WorkerMetrics | None = None,
        deployment_config: WorkerDeploymentConfig | None = None,
        workflow_runner: WorkflowRunner | None = None,
        workflow_task_executor: concurrent.futures.ThreadPoolExecutor | None = None,
        nexus_service_handlers: Sequence[Any] = (),
        max_concurrent_nexus_tasks: int = 100,
        nexus_task_executor: concurrent.futures.Executor | None = None,
    ) -> None:
        if workflow_runner is not None and not isinstance(workflow_runner, WorkflowRunner):
            raise TypeError(f"Worker(workflow_runner=...) takes a spindle.worker.workflow_sandbox runner, "
                            f"got {type(workflow_runner).__name__}")
        if workflow_task_executor is not None and not isinstance(workflow_task_executor, concurrent.futures.Executor):
            raise TypeError(f"Worker(workflow_task_executor=...) takes a concurrent.futures executor, "
                            f"got {type(workflow_task_executor).__name__}")
        self.workflow_task_executor = workflow_task_executor
        unrestricted = workflow_runner.unrestricted_modules() if workflow_runner is not None else frozenset()
        if deadlock_detection_timeout is not None and deadlock_detection_timeout <= datetime.timedelta(0):
            raise ValueError(f"deadlock_detection_timeout must be positive (or None to disable it), "
                             f"got {deadlock_detection_timeout}")
        if max_task_queue_activities_per_second is not None and max_task_queue_activities_per_second <= 0:
            raise ValueError("max_task_queue_activities_per_second must be positive (or None for no limit)")
        interceptors = check_interceptors(interceptors, "Worker(interceptors=...)", Interceptor,
                                          "spindle.worker.Interceptor")
        if metrics is not None and not isinstance(metrics, WorkerMetrics):
            raise TypeError(f"Worker(metrics=...) takes a spindle.worker.WorkerMetrics (or None), "
                            f"got {type(metrics).__name__}")
        options = deployment_options(deployment_config)
        if not task_queue:
            raise ValueError("Worker needs a task_queue")
        if not workflows and not activities and not nexus_service_handlers:
            raise ValueError("Worker needs at least one workflow, activity or Nexus service handler")
        self.client = client
        self.task_queue = task_queue
        self.identity = identity or client.identity
        self._grace = graceful_shutdown_timeout.total_seconds()
        self.debug_mode = debug_mode or _debug_from_env()
        deadlock_timeout = (None if self.debug_mode or deadlock_detection_timeout is None
                            else deadlock_detection_timeout.total_seconds())

        from spindle._workflow.defn import WorkflowDefinition

        defs: dict[str, Any] = {}
        findings: dict[str, list[str]] = {}
        for w in workflows:
            d = WorkflowDefinition.from_target(w)
            if d.name in defs:
                raise ValueError(f"two workflows are registered under the name {d.name!r}")
            defs[d.name] = d
            found = _check_determinism(d, unrestricted)
            if found:
                findings[d.name] = found
        behaviors = versioning_behaviors(deployment_config, defs)
        if findings:
            raise WorkflowDeterminismCheckError(findings)

        self._activity_worker: ActivityWorker | None = None
        self._workflow_worker: WorkflowWorker | None = None
        recorder = None
        runtime = getattr(client, "runtime", None)
        if runtime is not None:
            bind_runtime(client.namespace, task_queue, runtime)
            if metrics is None and runtime.records_worker_metrics:
                metrics = WorkerMetrics(runtime.prometheus_registry)
        if metrics is not None:
            from spindle._activity.definition import ActivityDefinition

            recorder = metrics._bind(client.namespace, task_queue, workflow_types=defs,
                                     activity_types=[ActivityDefinition.must_from_callable(a).name for a in activities])
        if defs:
            from spindle._workflow.instance import WorkflowInstance

            self._workflow_worker = WorkflowWorker(
                client, task_queue, defs,
                max_concurrent=max_concurrent_workflow_tasks,
                max_cached=max_cached_workflows,
                sticky_schedule_to_start_ms=int(sticky_schedule_to_start_timeout.total_seconds() * 1000),
                activity_worker=None,
                identity=self.identity,
                instance_factory=(functools.partial(WorkflowInstance, interceptors=interceptors)
                                  if interceptors else WorkflowInstance),
                pollers=workflow_task_pollers,
                deadlock_timeout=deadlock_timeout,
                metrics=recorder,
                deployment_options=options,
                versioning_behaviors=behaviors,
            )
        if activities:
            ww = self._workflow_worker
            self._activity_worker = ActivityWorker(
                client, task_queue, activities,
                max_concurrent=max_concurrent_activities,
                executor=activity_executor,
                sticky_queue=ww.sticky_queue if ww is not None else "",
                on_workflow_task=ww.submit if ww is not None else None,
                pollers=activity_task_pollers,
                identity=self.identity,
                max_tasks_per_second=max_task_queue_activities_per_second,
                shared_state_manager=shared_state_manager,
                interceptors=interceptors,
                metrics=recorder,
                deployment_options=options,
            )
            if ww is not None:
                ww._activities = self._activity_worker
        self._nexus_worker: Any = None
        if nexus_service_handlers:  # imported here: a worker without Nexus handlers never loads nexusrpc
            from spindle.worker._nexus_worker import NexusWorker

            self._nexus_worker = NexusWorker(client, task_queue, nexus_service_handlers,
                                             max_concurrent=max_concurrent_nexus_tasks, identity=self.identity,
                                             executor=nexus_task_executor, deployment_options=options)
        self._started = False
        self._stop = asyncio.Event()
        self._run_task: asyncio.Task[None] | None = None
        self._shutdown_done: asyncio.Event | None = None

    @property
    def sticky_task_queue(self) -> str:
        """This worker's sticky queue (empty when it runs no workflows or caching is off)."""
        return self._workflow_worker.sticky_queue if self._workflow_worker is not None else ""

    @property
    def cached_run_ids(self) -> list[str]:
        """Run ids in the sticky cache, least recently used first."""
        return self._workflow_worker.cached_run_ids if self._workflow_worker is not None else []

    @property
    def stats(self) -> dict[str, int]:
        """Counters: ``cache_hits`` (workflow tasks resumed from the sticky cache), ``replays`` (runs
        rebuilt from history), ``activities_polled`` and ``activities_eager`` (attempts started)."""
        out: dict[str, int] = {}
        if self._workflow_worker is not None:
            out.update(self._workflow_worker.stats)
        if self._activity_worker is not None:
            out.update({f"activities_{k}": v for k, v in self._activity_worker.stats.items()})
        return out

    async def run(self) -> None:
        """Serve until :meth:`shutdown` is called or this coroutine is cancelled; then shut down gracefully.

        Raises:
            RuntimeError: the worker already ran.
        """
        if self._started:
            raise RuntimeError("a Worker can run only once; create a new one")
        self._started = True
        self._shutdown_done = asyncio.Event()
        if self._workflow_worker is not None:
            self._workflow_worker.start()
        if self._activity_worker is not None:
            self._activity_worker.start()
        if self._nexus_worker is not None:
            self._nexus_worker.start()
        try:
            await self._stop.wait()
        finally:
            await asyncio.shield(self._graceful_stop())

    async def _graceful_stop(self) -> None:
        ww, aw, nw = self._workflow_worker, self._activity_worker, self._nexus_worker
        try:
            await asyncio.gather(*(w.stop_polling() for w in (ww, aw, nw) if w is not None))
            if nw is not None:
                await nw.drain(self._grace)
            if aw is not None:
                await aw.drain(self._grace)
            if ww is not None:
                await ww.drain(self._grace)
        finally:
            if self._shutdown_done is not None:
                self._shutdown_done.set()

    async def shutdown(self) -> None:
        """Stop polling, let running activities finish within the grace period (then
        cancel them), evict cached workflows, and wait until all that is done."""
        self._stop.set()
        if self._run_task is not None:
            await asyncio.gather(self._run_task, return_exceptions=True)
        elif self._shutdown_done is not None:
            await self._shutdown_done.wait()

    async def __aenter__(self) -> Worker:
        self._run_task = asyncio.get_running_loop().create_task(self.run(), name=f"worker-{self.task_queue}")
        await asyncio.sleep(0)  # let the pollers start
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()
