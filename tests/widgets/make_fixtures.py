"""Record the histories the widget tests read: ``python tests/widgets/make_fixtures.py``.

Runs the workflows of ``widget_workflows.py`` on an embedded control plane (a
temporary SQLite file) and writes ``History.to_json()`` files under
``tests/widgets/fixtures/``:

- ``kitchen.json`` / ``kitchen_child.json``: every node kind, and the child's run;
- ``doomed.json``: an activity that fails every attempt, so the workflow fails;
- ``dsl_done.json``, ``dsl_running.json``: the YAML DAG finished, and waiting for
  its ``approve`` signal (the DAG document is ``dsl.yaml``);
- ``big.json.gz``: a Fanout run of at least 5,000 events (for the render benchmark).
"""

from __future__ import annotations

import asyncio
import gzip
import os
import sys
import tempfile

from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

import widget_workflows as ww  # noqa: E402

from spindle import dsl  # noqa: E402
from spindle.client import Client, History  # noqa: E402 - after the sys.path set-up above
from spindle.worker import Worker  # noqa: E402 - after the sys.path set-up above

FIXTURES = HERE / "fixtures"
QUEUE = "widgets"


def _save(name: str, history: History) -> None:
    text = history.to_json(indent=1)
    path = FIXTURES / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        path.write_text(text + "\n")
    print(f"{path.relative_to(HERE.parents[1])}: {len(history.events)} events")


async def _wait_for(handle: object, event_type: str, count: int = 1, timeout: float = 10.0) -> History:
    """Poll ``handle.fetch_history()`` until ``event_type`` occurs ``count`` times."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        history: History = await handle.fetch_history()  # type: ignore[attr-defined]
        if len(history.events_of_type(event_type)) >= count:
            return history
        if loop.time() > deadline:
            raise TimeoutError(f"no {event_type} x{count} in {timeout}s")
        await asyncio.sleep(0.05)


async def record(directory: str) -> None:
    """Run every fixture workflow and save its history."""
    FIXTURES.mkdir(exist_ok=True)
    report = dsl.load_text(ww.DSL_YAML, file="dsl.yaml")
    (FIXTURES / "dsl.yaml").write_text(ww.DSL_YAML)
    client = await Client.connect("embedded:" + os.path.join(directory, "fixtures.db"))
    try:
        async with Worker(client, task_queue=QUEUE, workflows=[*ww.WORKFLOWS, report], activities=ww.ACTIVITIES):
            kitchen = await client.start_workflow(ww.Kitchen.run, "order-7", id="kitchen-1", task_queue=QUEUE)
            await _wait_for(kitchen, "ChildWorkflowExecutionCompleted")
            await kitchen.update(ww.Kitchen.set_discount, 15)
            await kitchen.signal(ww.Kitchen.approve, "alice")
            await kitchen.result()
            _save("kitchen.json", await kitchen.fetch_history())
            _save("kitchen_child.json", await client.get_workflow_handle("kitchen-1-child").fetch_history())

            doomed = await client.start_workflow(ww.Doomed.run, id="doomed-1", task_queue=QUEUE)
            try:
                await doomed.result()
            except Exception:  # noqa: BLE001 - it is meant to fail
                pass
            _save("doomed.json", await doomed.fetch_history())

            run = await client.start_workflow(report, {"date": "2024-05-01"}, id="sales-1", task_queue=QUEUE)
            _save("dsl_running.json", await _wait_for(run, "TimerFired"))
            await run.signal("approve", "yes")
            await run.result()
            _save("dsl_done.json", await run.fetch_history())

            big = await client.start_workflow(ww.Fanout.run, 25, 66, id="fanout-1", task_queue=QUEUE)
            await big.result()
            _save("big.json.gz", await big.fetch_history())
    finally:
        await client.close()


def main() -> None:
    """Entry point."""
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(record(directory))


if __name__ == "__main__":
    main()
