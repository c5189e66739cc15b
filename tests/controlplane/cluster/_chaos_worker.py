"""The chaos run's worker, in a process of its own (the driver kills it with kill -9 and starts another).

    python _chaos_worker.py ADDRESS   (env: CHAOS_CA, CHAOS_CERT, CHAOS_KEY: the client TLS files;
                                       CHAOS_API_KEY; CHAOS_COMPLETIONS: see _chaos_workload)
"""

from __future__ import annotations

import asyncio
import os
import sys

from datetime import timedelta
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _chaos_workload import TASK_QUEUE, Chaos, step  # noqa: E402

from spindle.client import Client  # noqa: E402
from spindle.service import TLSConfig
from spindle.worker import Worker


async def main(address: str) -> None:
    tls = TLSConfig(server_root_ca_cert=Path(os.environ["CHAOS_CA"]).read_bytes(),
                    client_cert=Path(os.environ["CHAOS_CERT"]).read_bytes(),
                    client_private_key=Path(os.environ["CHAOS_KEY"]).read_bytes())
    client = await Client.connect(address, tls=tls, api_key=os.environ["CHAOS_API_KEY"])
    worker = Worker(client, task_queue=TASK_QUEUE, workflows=[Chaos], activities=[step],
                    max_concurrent_activities=200, graceful_shutdown_timeout=timedelta(seconds=1))
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
