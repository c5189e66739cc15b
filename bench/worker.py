"""The benchmark's worker process: ``python bench/worker.py ADDRESS`` (prints "worker ready").

TLS settings and the API key come from the SPINDLE_TLS_* and SPINDLE_API_KEY variables (``spindle.envconfig``), as bench.py --tls sets them.
SPINDLE_BENCH_WORKER_METRICS=1: the worker records its ``spindle_worker_*`` metrics (``Worker(metrics=...)``) into a
registry that is collected (rendered in the text format) once a second, as a scraper would.
SPINDLE_BENCH_VERSIONING=1: the worker is build ``bench.1`` of a worker deployment (worker build versioning,
its workflows PINNED); bench.py makes that version current.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workloads import ACTIVITIES, TASK_QUEUE, WORKFLOWS  # noqa: E402

from spindle import Client, Worker  # noqa: E402
from spindle.envconfig import ClientConfig  # noqa: E402


async def main(address: str) -> None:
    env = ClientConfig.load_client_connect_config()
    client = await Client.connect(address, tls=env.get("tls", False), api_key=env.get("api_key"))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    metrics = scraper = None
    if os.environ.get("SPINDLE_BENCH_WORKER_METRICS"):
        from prometheus_client import CollectorRegistry, generate_latest

        from spindle.worker import WorkerMetrics

        metrics = WorkerMetrics(CollectorRegistry())

        async def scrape() -> None:
            while True:
                await asyncio.sleep(1.0)
                generate_latest(metrics.registry)

        scraper = loop.create_task(scrape())
    deployment = None
    if os.environ.get("SPINDLE_BENCH_VERSIONING"):
        from spindle.common import VersioningBehavior, WorkerDeploymentVersion
        from spindle.worker import WorkerDeploymentConfig

        deployment = WorkerDeploymentConfig(version=WorkerDeploymentVersion("bench", "1"), use_worker_versioning=True,
                                            default_versioning_behavior=VersioningBehavior.PINNED)
    async with Worker(client, task_queue=TASK_QUEUE, workflows=WORKFLOWS, activities=ACTIVITIES,
                      max_cached_workflows=4000, max_concurrent_workflow_tasks=200, max_concurrent_activities=200,
                      metrics=metrics, deployment_config=deployment):
        print("worker ready", flush=True)
        await stop.wait()
    if scraper is not None:
        scraper.cancel()
    await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
