"""A worker process for the fault tests: ``python fault_worker.py ADDRESS`` (prints "worker ready").

Runs the workflows and activities of ``fault_workloads`` on task queue "fault" until SIGTERM or
SIGKILL. It survives the server going away (the SDK's pollers retry); the test restarts it when
it exits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fault_workloads import ACTIVITIES, TASK_QUEUE, WORKFLOWS  # noqa: E402

from spindle.client import Client  # noqa: E402
from spindle.worker import Worker


async def main(address: str) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    client = None
    for _ in range(100):  # the server may be restarting
        try:
            client = await Client.connect(address)
            break
        except Exception:  # noqa: BLE001
            await asyncio.sleep(0.1)
    if client is None:
        raise SystemExit("cannot connect to " + address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    async with Worker(client, task_queue=TASK_QUEUE, workflows=WORKFLOWS, activities=ACTIVITIES,
                      max_concurrent_workflow_tasks=100, max_concurrent_activities=100,
                      graceful_shutdown_timeout=timedelta(milliseconds=100),
                      sticky_schedule_to_start_timeout=timedelta(seconds=1)):
        print("worker ready", flush=True)
        await stop.wait()
    await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
