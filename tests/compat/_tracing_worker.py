"""A worker process for the tracing restart test: ``python _tracing_worker.py ADDRESS TASK_QUEUE SPAN_FILE``.

Runs ``TracedParent``/``TracedChild`` with ``TracingInterceptor`` and writes every finished span
to SPAN_FILE as one JSON object per line, at once (a SimpleSpanProcessor: nothing is lost when
the process is killed with SIGKILL after a span ended). Prints "worker ready" once it polls;
runs until SIGTERM or SIGKILL.
"""

from __future__ import annotations

import asyncio
import collections
import signal
import sys
from datetime import timedelta

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from spindle import Client, RetryPolicy, activity, workflow
from spindle.contrib.opentelemetry import TracingInterceptor
from spindle.worker import Worker

attempts: collections.Counter[str] = collections.Counter()


@activity.defn
async def greet(name: str) -> str:
    return f"hello {name}"


@activity.defn
async def flaky(key: str) -> str:
    attempts[key] += 1
    if attempts[key] < 2:
        raise RuntimeError("first attempt fails")
    return "ok"


@workflow.defn
class TracedChild:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(greet, name, start_to_close_timeout=timedelta(seconds=10))


@workflow.defn
class TracedParent:
    def __init__(self) -> None:
        self.go = False

    @workflow.signal
    def proceed(self) -> None:
        self.go = True

    @workflow.run
    async def run(self, key: str) -> list[str]:
        a = await workflow.execute_activity(greet, "a", start_to_close_timeout=timedelta(seconds=10))
        await workflow.wait_condition(lambda: self.go)
        b = await workflow.execute_activity(
            flaky, key, start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=3))
        c = await workflow.execute_child_workflow(TracedChild.run, "child", id=f"{workflow.info().workflow_id}-child")
        return [a, b, c]


async def main(address: str, task_queue: str, span_file: str) -> None:
    out = open(span_file, "a", buffering=1)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(
        out=out, formatter=lambda span: span.to_json(indent=None) + "\n")))
    tracing = TracingInterceptor(provider.get_tracer("worker"))
    client = await Client.connect(address, interceptors=[tracing])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    async with Worker(client, task_queue=task_queue, workflows=[TracedParent, TracedChild], activities=[greet, flaky],
                      interceptors=[tracing], sticky_schedule_to_start_timeout=timedelta(milliseconds=500),
                      graceful_shutdown_timeout=timedelta(milliseconds=100)):
        print("worker ready", flush=True)
        await stop.wait()
    await client.close()
    provider.shutdown()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
