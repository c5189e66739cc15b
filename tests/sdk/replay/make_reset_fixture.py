"""Record the reset-run fixture: ``python tests/sdk/replay/make_reset_fixture.py``.

Writes ``fixtures/h17_reset_run.json``: the history of a run made by ResetWorkflowExecution
(issue 17), as the control plane wrote it then. Executions with this shape exist once reset
is used, so ``test_replay_reset.py`` replays the committed file under the current SDK;
re-record it only if the shape changes on purpose.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _reset_shape_workflows import run_reset_shape  # noqa: E402

from spindle.client import Client  # noqa: E402
from spindle.controlplane import embedded  # noqa: E402


async def record(directory: str) -> None:
    cp = await embedded.start(str(Path(directory) / "fixture.db"))
    client = Client(cp.stub, namespace="default")
    try:
        _, new_run = await run_reset_shape(client, "reset-shape", "reset-shape")
        history = await client.get_workflow_handle("reset-shape", run_id=new_run).fetch_history()
        path = HERE / "fixtures" / "h17_reset_run.json"
        path.write_text(history.to_json(indent=1) + "\n")
        print(f"{path}: {len(history.events)} events")
    finally:
        await client.close()
        await cp.stop()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        asyncio.run(record(d))
