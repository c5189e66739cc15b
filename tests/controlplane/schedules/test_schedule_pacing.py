"""A large backfill is paced by the namespace's rps_limit in virtual time (security issue 26, finding 2).

The time-skipping environment moves the clock to the schedule's timer, which pacing writes
for when the namespace's next token is due: 200 actions at ``rps_limit`` 5 take about 40
virtual seconds, none lost and none started twice, and a reopened server (an outage in the
middle) carries on from the record. The wall-time check at a small scale is
``tests/controlplane/test_cp_schedule_pacing.py``.
"""

from __future__ import annotations

import sqlite3

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from schedule_stores import Stores
from test_schedule_firing import ALLOW_ALL, T0, create, describe, ms, schedule, worker

from spindle.api import service_pb2 as svc

N = 200
RPS = 5


@pytest.fixture
async def sqlite_stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    s = Stores("sqlite", tmp_path, request)
    try:
        yield s
    finally:
        await s.close_all()


def starts(db: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return sorted(conn.execute("SELECT workflow_id, start_time_ms FROM executions WHERE workflow_id LIKE 'bf-%'")
                      .fetchall(), key=lambda r: r[1])
    finally:
        conn.close()


async def set_rps(env: Any, rps: float) -> None:
    await env.client.stub.UpdateNamespace(svc.UpdateNamespaceRequest(name="default", update_mask=["rps_limit"],
                                                                     rps_limit=rps))


async def test_a_backfill_of_200_at_rps_limit_5_takes_40_virtual_seconds_and_survives_an_outage(
        sqlite_stores: Stores, tmp_path: Path) -> None:
    db = tmp_path / "sched.db"
    env = await sqlite_stores.open(T0)
    await create(env, "bf", schedule("bf", ALLOW_ALL, minutes=0, every_ms=1000, paused=True))
    await set_rps(env, RPS)
    patch = svc.PatchScheduleRequest(namespace="default", schedule_id="bf")
    patch.patch.backfill_request.add(start_time_ms=ms(T0) - N * 1000, end_time_ms=ms(T0) - 1000)
    await env.client.stub.PatchSchedule(patch)  # a full bucket (5 tokens), less this call's
    async with worker(env):
        await env.sleep(timedelta(seconds=20))
    first = starts(db)
    assert 90 <= len(first) <= 110, len(first)  # 4 at once, then 5 per virtual second
    await env.shutdown()  # an outage in the middle of the paced backfill

    env = await sqlite_stores.open(T0 + timedelta(seconds=21))
    async with worker(env):
        await env.sleep(timedelta(seconds=30))
    got = starts(db)
    ids = [w for w, _ in got]
    assert len(ids) == N and len(set(ids)) == N, "every action started once: none lost, none doubled"
    # paced, not bursted: never more than the bucket allows (a second's worth, refilled at 5 a second; a new
    # process starts with a full bucket) in any virtual second
    times = [t for _, t in got]
    for i in range(len(times) - 2 * RPS):
        assert times[i + 2 * RPS] - times[i] >= 1000, (i, times[i:i + 2 * RPS + 1])
    assert (times[-1] - times[0]) / 1000 >= (N - 2 * RPS) / RPS - 1  # about 40 virtual seconds in all
    await set_rps(env, 2400)
    d = await describe(env, "bf")
    assert d.info.action_count == N and not d.info.running_workflows
