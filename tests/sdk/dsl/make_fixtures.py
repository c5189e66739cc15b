"""Record DSL histories for the replay tests: ``python tests/sdk/dsl/make_fixtures.py PREFIX``.

Runs the YAML workflows of ``fixtures/`` (``every_kind.yaml`` uses every step
kind, ``when``, trigger rules, ``for_each``, a YAML child, ``on_failure``
handlers; ``saga.yaml`` fails and compensates) on an embedded control plane and
writes ``fixtures/PREFIX_*.json`` (``History.to_json()``).

The ``pre_markers_*`` files were recorded with the interpreter as it was
before it recorded ``DslStep`` markers (commit 6be9f4b); they must never be
re-recorded: ``test_dsl_replay_fixtures.py`` replays them to prove that old
executions still replay under the current interpreter. The ``markers_*`` files
are the same runs with step markers (``python make_fixtures.py markers``).
``checked_every_kind_pinned.json`` is the pinned run with the definition check
(its ``dsl-definition/<hash>`` Version marker; ``python make_fixtures.py
checked``, keeping only that file: the other runs start with bare inputs and
are the same as the ``markers_*`` ones).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile

from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from spindle import activity, dsl  # noqa: E402
from spindle.client import Client, History  # noqa: E402 - after the sys.path set-up above
from spindle.exceptions import ApplicationError  # noqa: E402
from spindle.worker import Worker  # noqa: E402 - after the sys.path set-up above

FIXTURES = HERE / "fixtures"
QUEUE = "dsl-fixtures"


@activity.defn(name="inc")
async def inc(n: int) -> int:
    """n + 1."""
    return n + 1


@activity.defn(name="record")
async def record(label: str) -> str:
    """Returns its label."""
    return label


@activity.defn(name="explode")
async def explode(message: str) -> None:
    """Always fails (non-retryable)."""
    raise ApplicationError(message, type="Exploded", non_retryable=True)


def workflows() -> dict[str, dsl.DslWorkflow]:
    """The fixture documents, by name."""
    return {name: dsl.load(FIXTURES / f"{name}.yaml") for name in ("every_kind", "child_flow", "saga")}


def _save(name: str, history: History) -> None:
    path = FIXTURES / name
    path.write_text(history.to_json(indent=1) + "\n")
    print(f"{path}: {len(history.events)} events")


async def record_all(directory: str, prefix: str) -> None:
    """Run the fixture workflows and save their histories as ``PREFIX_*.json``."""
    wfs = workflows()
    client = await Client.connect("embedded:" + os.path.join(directory, "fixtures.db"))
    try:
        async with Worker(client, task_queue=QUEUE, workflows=list(wfs.values()),
                          activities=[inc, record, explode]):
            every = wfs["every_kind"]
            # by type name: bare inputs (what start_workflow(every, ...) sent before it sent start_input)
            bare = await client.start_workflow(every.name, {"n": 1}, id="every-bare", task_queue=QUEUE)
            await bare.signal("approve", "yes")
            await bare.result()
            _save(f"{prefix}_every_kind_bare.json", await bare.fetch_history())
            _save(f"{prefix}_child_flow.json",
                  await client.get_workflow_handle("every-bare/child").fetch_history())

            pinned = await client.start_workflow(every, every.start_input({"n": 2}), id="every-pinned",
                                                 task_queue=QUEUE)
            await pinned.signal("approve", "no")
            await pinned.result()
            _save(f"{prefix}_every_kind_pinned.json", await pinned.fetch_history())

            saga = await client.start_workflow(wfs["saga"].name, {}, id="saga-1", task_queue=QUEUE)
            try:
                await saga.result()
            except Exception:  # noqa: BLE001 - it is meant to fail
                pass
            _save(f"{prefix}_saga.json", await saga.fetch_history())
    finally:
        await client.close()


def main() -> None:
    """Entry point."""
    if len(sys.argv) != 2:
        raise SystemExit("usage: make_fixtures.py PREFIX")
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(record_all(directory, sys.argv[1]))


if __name__ == "__main__":
    main()
