"""The activity half of a worker: poll, run attempts, heartbeat, report.

Async activities run as tasks on the worker's loop; sync ones run in a thread
pool (or, with a :class:`SharedStateManager`, in another executor such as a
process pool: :mod:`spindle.worker._activity_registry`). Each attempt is run by the
:class:`~spindle.worker._activity_attempt.AttemptRunner`, which reports its heartbeats
and outcome through the :class:`~spindle.worker._activity_outcomes.OutcomeReporter`. A
completion that makes a workflow task for this worker's sticky queue returns it in the
response, and it is handed straight to the workflow half.

Every attempt that does not complete is logged on ``spindle.worker``: a failure
at WARNING with its traceback (DEBUG for an ``ApplicationError`` whose category
is ``BENIGN``), a cancellation at DEBUG; each record carries the attempt's
details as ``extra`` (see :func:`spindle._activity.logger.logger_details`).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures

from collections.abc import Callable, Sequence
from typing import Any

from spindle._activity.shared_state import SharedStateManager
from spindle._interceptors.worker import Interceptor
from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.worker._activity_attempt import AttemptRunner
from spindle.worker._activity_outcomes import OutcomeReporter
from spindle.worker._activity_registry import check_executor, register_activities, sync_executor
from spindle.worker._polling import Slots, cancel_and_wait, poll_loop

__all__ = ["ActivityWorker", "Slots"]


class ActivityWorker:
    """Runs the activities registered on one worker.

    Args:
        client: the worker's client (stub, namespace, identity, converter, codecs).
        task_queue: the queue to poll.
        activities: ``@activity.defn`` callables (functions or bound methods).
        max_concurrent: the most attempts running at once.
        executor: where sync activities run (a thread pool is created if needed and ``None``).
        shared_state_manager: required when ``executor`` is not a ``ThreadPoolExecutor``
            and a sync activity is registered (heartbeats and cancellation cross processes).
        sticky_queue: this worker's sticky workflow queue (for completions that
            return a workflow task).
        on_workflow_task: called with a workflow task returned by a completion.
        pollers: concurrent long polls.
        deployment_options: the worker's build, sent on every poll (``None``: an unversioned worker).

    Raises:
        TypeError: an entry is not an activity, or (with a ``ProcessPoolExecutor``) a
            sync activity cannot be pickled.
        ValueError: two activities share a name, or a sync activity would run in a
            non-thread executor without a ``shared_state_manager``.
    """

    def __init__(
        self,
        client: Any,
        task_queue: str,
        activities: Sequence[Callable[..., Any]],
        *,
        max_concurrent: int,
        executor: concurrent.futures.Executor | None,
        sticky_queue: str,
        on_workflow_task: Callable[[svc.PollWorkflowTaskQueueResponse], None] | None,
        pollers: int = 4,
        identity: str,
        max_tasks_per_second: float | None = None,
        shared_state_manager: SharedStateManager | None = None,
        interceptors: Sequence[Interceptor] = (),
        metrics: Any = None,
        deployment_options: pb.WorkerDeploymentOptions | None = None,
    ) -> None:
        self._client = client
        self._deployment_options = deployment_options
        self._rate = max_tasks_per_second
        self._stub = client._stub
        self._ns = client.namespace
        self._identity = identity
        self.task_queue = task_queue
        self._pollers = max(1, pollers)
        self.registered = register_activities(activities)
        check_executor(self.registered.values(), executor, shared_state_manager)
        self.slots = Slots(max_concurrent)
        self._executor, self._own_executor = sync_executor(self.registered.values(), executor, max_concurrent,
                                                           task_queue)
        reporter = OutcomeReporter(self._stub, self._ns, identity, client.data_converter, client.codecs,
                                   sticky_queue, on_workflow_task)
        self._runner = AttemptRunner(
            namespace=self._ns, task_queue=task_queue, converter=client.data_converter, codecs=client.codecs,
            registered=self.registered, executor=self._executor, shared_state=shared_state_manager,
            interceptors=interceptors, reporter=reporter, slots=self.slots, metrics=metrics)
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False
        #: Counters for tests and metrics: attempts started from polls and eagerly.
        self.stats: collections.Counter[str] = collections.Counter()
        self._poll_tasks: list[asyncio.Task[None]] = []
        #: Records ``spindle_worker_*`` metrics (a recorder from ``WorkerMetrics``), or ``None``.
        self._metrics = metrics
        self._on_poll: Callable[[float, str], None] | None = None
        if metrics is not None:
            self._on_poll = lambda seconds, result: metrics.poll("activity", seconds, result)
            metrics.watch_slots("activity", lambda: len(self._tasks))

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the pollers on the running loop."""
        loop = asyncio.get_running_loop()
        self._poll_tasks = [loop.create_task(self._poll_loop(), name=f"activity-poller-{i}")
                            for i in range(self._pollers)]

    async def stop_polling(self) -> None:
        """Stop taking new attempts (in-flight polls are abandoned)."""
        self._stopping = True
        await cancel_and_wait(self._poll_tasks)
        self._poll_tasks = []

    async def drain(self, grace: float) -> None:
        """Let running attempts finish for ``grace`` seconds, then cancel them and wait."""
        tasks = list(self._tasks)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            if pending:
                self._runner.cancel_all()
                # Async attempts stop at once; sync ones only when they check is_cancelled().
                await asyncio.wait(pending, timeout=max(grace, 1.0))
        if self._own_executor and self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        if self._metrics is not None:
            self._metrics.close()

    def try_reserve(self, activity_type: str, task_queue: str) -> bool:
        """Reserve a slot for an eager activity this worker can run; ``False`` if it cannot."""
        if self._stopping or activity_type not in self.registered or self._rate:
            return False  # a rate-limited queue hands out every task through the server's limiter
        if task_queue and task_queue != self.task_queue:
            return False
        return self.slots.try_acquire()

    def run_reserved(self, task: svc.PollActivityTaskQueueResponse | None) -> None:
        """Start an attempt on a slot reserved by :meth:`try_reserve` (``None`` just frees the slot)."""
        if task is None or not task.task_token:
            self.slots.release()
            return
        self.stats["eager"] += 1
        self._spawn(task)

    # ------------------------------------------------------------------ polling

    async def _poll_loop(self) -> None:
        req = svc.PollActivityTaskQueueRequest(namespace=self._ns, task_queue=self.task_queue, identity=self._identity,
                                               max_tasks_per_second=self._rate or 0.0)
        if self._deployment_options is not None:
            req.deployment_options.CopyFrom(self._deployment_options)

        def take(task: svc.PollActivityTaskQueueResponse) -> None:
            self.stats["polled"] += 1
            self._spawn(task)

        await poll_loop(f"activity poll on {self.task_queue!r}", self.slots, lambda: self._stopping,
                        lambda: self._stub.PollActivityTaskQueue(req), take, self._on_poll)

    def _spawn(self, task: svc.PollActivityTaskQueueResponse) -> None:
        t = asyncio.get_running_loop().create_task(self._runner.run_attempt(task))
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
