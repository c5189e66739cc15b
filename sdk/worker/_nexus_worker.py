"""Polls the worker's Nexus task queue and answers each task through its nexusrpc service handlers.

The same discipline as the activity worker: ``pollers`` long polls while a slot is free, at most
``max_concurrent`` tasks running, ``stop_polling`` then ``drain(grace)`` at shutdown (running
handlers see ``ctx.task_cancellation`` cancelled after the grace, then are cancelled).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging

from collections.abc import Sequence
from typing import Any

import grpc

from spindle.api import messages_pb2 as pb
from spindle.api import service_pb2 as svc
from spindle.nexus._operation_context import Info
from spindle.worker._nexus_tasks import NexusTaskRunner, TaskCancellation
from spindle.worker._polling import Slots, cancel_and_wait, poll_loop

log = logging.getLogger("spindle.worker")

#: An empty poll answered sooner than this is followed by a wait of the rest of it, so that a server
#: that answers Nexus polls at once (one that hands out no Nexus tasks) is not polled in a busy loop.
MIN_EMPTY_POLL_SECONDS = 1.0


class NexusWorker:
    """Runs the Nexus operation handlers registered on one worker (Temporal's ``nexus_service_handlers``).

    Raises (at construction) what nexusrpc raises for bad service handlers: e.g. a ``def``
    operation handler without an ``executor``.
    """

    def __init__(
        self,
        client: Any,
        task_queue: str,
        service_handlers: Sequence[Any],
        *,
        max_concurrent: int,
        identity: str,
        executor: concurrent.futures.Executor | None = None,
        pollers: int = 2,
        deployment_options: pb.WorkerDeploymentOptions | None = None,
    ) -> None:
        self._stub = client._stub
        self._ns = client.namespace
        self._identity = identity
        self.task_queue = task_queue
        self._pollers = max(1, pollers)
        self._deployment_options = deployment_options
        self._runner = NexusTaskRunner(
            service_handlers,
            data_converter=client.data_converter,
            info=Info(task_queue=task_queue, namespace=client.namespace),
            client=client,
            executor=executor,
        )
        self.slots = Slots(max_concurrent)
        self._tasks: dict[asyncio.Task[None], TaskCancellation] = {}
        self._poll_tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    def start(self) -> None:
        """Start the pollers on the running loop."""
        loop = asyncio.get_running_loop()
        self._poll_tasks = [loop.create_task(self._poll_loop(), name=f"nexus-poller-{i}") for i in range(self._pollers)]

    async def stop_polling(self) -> None:
        """Stop taking new Nexus tasks (in-flight polls are abandoned)."""
        self._stopping = True
        await cancel_and_wait(self._poll_tasks)
        self._poll_tasks = []

    async def drain(self, grace: float) -> None:
        """Let running handlers finish for ``grace`` seconds, then mark their tasks cancelled, cancel and wait."""
        tasks = list(self._tasks)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            self._tasks[task].cancel("worker is shutting down")
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=max(grace, 1.0))

    async def _poll_loop(self) -> None:
        req = svc.PollNexusTaskQueueRequest(namespace=self._ns, task_queue=self.task_queue, identity=self._identity)
        if self._deployment_options is not None:
            req.deployment_options.CopyFrom(self._deployment_options)
        await poll_loop(
            f"nexus poll on {self.task_queue!r}",
            self.slots,
            lambda: self._stopping,
            lambda: self._poll(req),
            self._spawn,
        )

    async def _poll(self, req: svc.PollNexusTaskQueueRequest) -> svc.PollNexusTaskQueueResponse:
        loop = asyncio.get_running_loop()
        started = loop.time()
        task: svc.PollNexusTaskQueueResponse = await self._stub.PollNexusTaskQueue(req)
        if not task.task_token:
            rest = MIN_EMPTY_POLL_SECONDS - (loop.time() - started)
            if rest > 0:
                await asyncio.sleep(rest)
        return task

    def _spawn(self, task: svc.PollNexusTaskQueueResponse) -> None:
        cancellation = TaskCancellation()
        t = asyncio.get_running_loop().create_task(self._answer(task, cancellation))
        self._tasks[t] = cancellation
        t.add_done_callback(lambda done: self._tasks.pop(done, None))

    async def _answer(self, task: svc.PollNexusTaskQueueResponse, cancellation: TaskCancellation) -> None:
        try:
            answer = await self._runner.run(task.request, cancellation)
            if isinstance(answer, pb.NexusResponse):
                await self._stub.RespondNexusTaskCompleted(
                    svc.RespondNexusTaskCompletedRequest(
                        namespace=self._ns, identity=self._identity, task_token=task.task_token, response=answer
                    )
                )
            else:
                await self._stub.RespondNexusTaskFailed(
                    svc.RespondNexusTaskFailedRequest(
                        namespace=self._ns, identity=self._identity, task_token=task.task_token, error=answer
                    )
                )
        except grpc.aio.AioRpcError as err:  # the task timed out or was answered: the server retries it
            log.warning("answering a Nexus task on %r failed: %s %s", self.task_queue, err.code(), err.details())
        finally:
            self.slots.release()
