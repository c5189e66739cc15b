"""A worker process for the tracing restart test: ``python _tracing_worker.py ADDRESS TASK_QUEUE SPAN_FILE``.

Runs ``TracedParent``/``TracedChild`` with ``TracingInterceptor`` and writes every finished span
to SPAN_FILE as one JSON object per line, at once (a SimpleSpanProcessor: nothing is lost when
the process is killed with SIGKILL after a span ended). Prints "worker ready" once it polls;
runs until SIGTERM or SIGKILL.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from datetime import timedelta

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from tracing_workflows import TracedChild, TracedParent, flaky, greet  # this folder: sys.path[0]

from spindle.client import Client
from spindle.contrib.opentelemetry import TracingInterceptor
from spindle.worker import Worker


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
