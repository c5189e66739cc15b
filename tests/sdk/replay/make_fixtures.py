"""Record the history-shape fixtures: ``python tests/sdk/replay/make_fixtures.py PREFIX``.

Runs the workflows of ``_history_shape_workflows.py`` on an embedded control plane
and writes ``fixtures/PREFIX_retries.json`` and ``fixtures/PREFIX_cancel_race.json``
(``History.to_json()``).

The ``pre_h13_*`` files were recorded by the control plane as it was before issue 13
(commit 1bcf189): every failed activity attempt wrote ActivityTaskStarted +
ActivityTaskFailed/TimedOut (retry_state IN_PROGRESS), and an activity cancelled while
its completion was buffered got both ActivityTaskCanceled and ActivityTaskCompleted.
Servers still hold executions with those shapes, so they must never be re-recorded:
``test_replay_history_shapes.py`` replays them under the current SDK.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _history_shape_workflows import (  # noqa: E402
    CancelRace,
    RetriesThenSucceeds,
    always_fails,
    fails_twice,
    run_cancel_race,
    slow_first,
)

from spindle.client import Client, History  # noqa: E402
from spindle.controlplane import embedded  # noqa: E402
from spindle.worker import Worker  # noqa: E402 - after the sys.path set-up above

FIXTURES = HERE / "fixtures"
QUEUE = "history-shapes"


def _save(name: str, history: History) -> None:
    path = FIXTURES / name
    path.write_text(history.to_json(indent=1) + "\n")
    print(f"{path}: {len(history.events)} events")


async def record_all(directory: str, prefix: str) -> None:
    cp = await embedded.start(str(Path(directory) / "fixtures.db"))
    client = Client(cp.stub, namespace="default")
    try:
        async with Worker(client, task_queue=QUEUE, workflows=[RetriesThenSucceeds, CancelRace],
                          activities=[fails_twice, slow_first, always_fails]):
            retries = await client.start_workflow(RetriesThenSucceeds.run, id="retries", task_queue=QUEUE)
            print("retries:", await retries.result())
            _save(f"{prefix}_retries.json", await retries.fetch_history())
            race = await run_cancel_race(client, cp.control_plane.engine, task_queue=QUEUE, workflow_id="cancel-race")
            _save(f"{prefix}_cancel_race.json", await race.fetch_history())  # type: ignore[attr-defined]
    finally:
        await client.close()
        await cp.stop()


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    with tempfile.TemporaryDirectory() as d:
        asyncio.run(record_all(d, sys.argv[1]))


if __name__ == "__main__":
    main()
