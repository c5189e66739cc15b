"""Histories recorded with the Temporal-named workflow APIs replay, today's and the committed ones.

Local activities (scheduled as regular activities on the workflow's queue),
activity methods, ``args=[...]``, ``@workflow.init``, ``all_handlers_finished``,
``workflow.wait`` and ``workflow.as_completed`` with durable-timer timeouts. The
committed histories under ``histories/`` were recorded by ``record_fixtures()``
(run this file as a script to re-record); they must keep replaying whatever
changes later (e.g. if local activities ever run truly locally).
"""

from __future__ import annotations

import asyncio
import uuid

from datetime import timedelta
from pathlib import Path

import pytest

from spindle import activity, workflow
from spindle.client import Client, History
from spindle.exceptions import NonDeterminismError
from spindle.testing import Replayer
from spindle.worker import Worker

HISTORIES = Path(__file__).parent / "histories"
T10 = timedelta(seconds=10)


@activity.defn
async def double(x: int) -> int:
    return 2 * x


@activity.defn
async def echo(x: str) -> str:
    return x


class Ledger:
    def __init__(self) -> None:
        self.entries: list[str] = []

    @activity.defn
    async def write(self, entry: str) -> int:
        self.entries.append(entry)
        return len(entry)


@workflow.defn(name="LocalActivities")
class LocalActivities:
    @workflow.init
    def __init__(self, start: int) -> None:
        self.start = start
        self.noted: list[str] = []

    @workflow.run
    async def run(self, start: int) -> list[int]:
        a = await workflow.execute_local_activity(double, self.start, start_to_close_timeout=T10,
                                                  local_retry_threshold=timedelta(seconds=2))
        b = await workflow.execute_local_activity_method(Ledger.write, "entry-1", start_to_close_timeout=T10)
        c = await workflow.execute_activity(double, args=[a], start_to_close_timeout=T10)
        await workflow.wait_condition(lambda: bool(self.noted))
        await workflow.wait_condition(workflow.all_handlers_finished)
        return [a, b, c, len(self.noted)]

    @workflow.update
    async def note(self, text: str) -> int:
        n = await workflow.execute_activity_method(Ledger.write, text, start_to_close_timeout=T10)
        self.noted.append(text)
        return n


@workflow.defn(name="WaitsAndRaces")
class WaitsAndRaces:
    @workflow.run
    async def run(self) -> list[list[str]]:
        fast = [workflow.start_activity(echo, w, start_to_close_timeout=T10) for w in ("x", "y")]
        done, pending = await workflow.wait(fast, timeout=timedelta(hours=1))  # finishes first: timer cancelled
        nap = asyncio.ensure_future(workflow.sleep(timedelta(days=1)))
        first, _ = await workflow.wait([workflow.start_activity(echo, "z", start_to_close_timeout=T10), nap],
                                       return_when=asyncio.FIRST_COMPLETED)
        nap.cancel()
        raced: list[str] = []
        for next_done in workflow.as_completed(
                [workflow.start_activity(echo, w, start_to_close_timeout=T10) for w in ("p", "q")],
                timeout=timedelta(hours=1)):
            raced.append(await next_done)
        return [[h.result() for h in done], [str(len(pending))], [str(len(first))], sorted(raced)]


async def _record(client: Client, ledger: Ledger) -> dict[str, History]:
    queue = f"q-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[LocalActivities, WaitsAndRaces],
                      activities=[double, echo, ledger.write], graceful_shutdown_timeout=timedelta(0)):
        local = await client.start_workflow(LocalActivities.run, 5, id="local-activities", task_queue=queue)
        assert await local.update(LocalActivities.note, "hello") == 5
        assert await local.result() == [10, 7, 20, 1]
        races = await client.start_workflow(WaitsAndRaces.run, id="waits-and-races", task_queue=queue)
        assert await races.result() == [["x", "y"], ["0"], ["1"], ["p", "q"]]
        return {"local_activities": await local.fetch_history(), "waits_and_races": await races.fetch_history()}


@pytest.fixture
async def client(tmp_path):  # type: ignore[no-untyped-def]
    c = await Client.connect("embedded:" + str(tmp_path / "replay.db"))
    yield c
    await c.close()


async def test_histories_recorded_now_replay(client: Client) -> None:
    histories = await _record(client, Ledger())
    local_types = [e.event_type for e in histories["local_activities"].events]
    # local activities are regular activities in history: scheduled on the workflow's own queue
    assert local_types.count("ActivityTaskScheduled") == 4 and "MarkerRecorded" not in local_types
    scheduled = [e.attributes for e in histories["local_activities"].events if e.event_type == "ActivityTaskScheduled"]
    assert {a["task_queue"] for a in scheduled} == {histories["local_activities"].events[0].attributes["task_queue"]}
    race_types = [e.event_type for e in histories["waits_and_races"].events]
    assert "TimerCanceled" in race_types  # wait()'s timeout timer is durable and cancelled when it is not needed
    replayer = Replayer(workflows=[LocalActivities, WaitsAndRaces])
    for h in histories.values():
        await replayer.replay_workflow(h)
        await replayer.replay_workflow(History.from_json(h.to_json()))


@pytest.mark.parametrize("name", ["local_activities", "waits_and_races"])
async def test_committed_histories_replay(name: str) -> None:
    history = History.from_json((HISTORIES / f"{name}.json").read_text())
    await Replayer(workflows=[LocalActivities, WaitsAndRaces]).replay_workflow(history)


async def test_changed_local_activity_code_fails_replay() -> None:
    @workflow.defn(name="LocalActivities")
    class Reordered:
        @workflow.init
        def __init__(self, start: int) -> None:
            self.noted: list[str] = []

        @workflow.run
        async def run(self, start: int) -> list[int]:
            b = await workflow.execute_local_activity_method(Ledger.write, "entry-1", start_to_close_timeout=T10)
            return [b]

        @workflow.update
        async def note(self, text: str) -> int:
            return 0

    history = History.from_json((HISTORIES / "local_activities.json").read_text())
    with pytest.raises(NonDeterminismError, match="write"):
        await Replayer(workflows=[Reordered]).replay_workflow(history)


async def record_fixtures() -> None:
    """Re-record the committed histories (``python tests/sdk/replay/test_replay_temporal_names.py``)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        c = await Client.connect("embedded:" + str(Path(d) / "fixtures.db"))
        try:
            histories = await _record(c, Ledger())
        finally:
            await c.close()
    HISTORIES.mkdir(exist_ok=True)
    for name, h in histories.items():
        (HISTORIES / f"{name}.json").write_text(h.to_json() + "\n")


if __name__ == "__main__":
    asyncio.run(record_fixtures())
