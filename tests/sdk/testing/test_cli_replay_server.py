"""`spindle replay --query ...` against a real `spindle server start-dev`: fetch, replay, summary, exit codes.

Runs of ``ShipmentV1`` are made on the server first; the command replays them with the same
code (exit 0), with a version inserting an activity first (exit 1, each run named with the
non-determinism), saves what it replayed (which file mode then reads), and refuses bad
arguments with exit 2 before anything is read or written.
"""

from __future__ import annotations

import asyncio
import uuid

from collections.abc import Iterator
from pathlib import Path

import pytest

from replay_server_wfs import ACTIVITIES, ShipmentV1
from spindle_procs import DevServer
from waiting import until

from spindle.cli import main
from spindle.client import Client
from spindle.worker import Worker

pytestmark = pytest.mark.timeout(180)

N_RUNS = 3


async def _make_runs(address: str, queue: str) -> list[str]:
    client = await Client.connect(address)
    try:
        ids = [f"{queue}-{i}" for i in range(N_RUNS)]
        async with Worker(client, task_queue=queue, workflows=[ShipmentV1], activities=ACTIVITIES):
            for wid in ids:
                await client.execute_workflow(ShipmentV1.run, wid, id=wid, task_queue=queue)
        query = f"TaskQueue = '{queue}'"

        async def listed() -> bool:
            return await client.count_workflows(query) == N_RUNS

        await until(listed, "the runs are listed", timeout=20)
        return ids
    finally:
        await client.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevServer, str, list[str]]]:
    dev = DevServer(tmp_path_factory.mktemp("replay") / "dev.db").start()
    try:
        queue = f"parcels-{uuid.uuid4().hex[:8]}"
        ids = asyncio.run(_make_runs(dev.address, queue))
        yield dev, f"TaskQueue = '{queue}' AND WorkflowType = 'Shipment'", ids
    finally:
        dev.stop()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["replay", *argv])
    shown = capsys.readouterr()
    return code, shown.out, shown.err


def test_same_code_replays_every_run_and_saves_them(server: tuple[DevServer, str, list[str]], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    dev, query, ids = server
    save = tmp_path / "kept" / "histories"
    code, out, err = run(capsys, "-w", "replay_server_wfs:ShipmentV1", "--address", dev.address, "--query", query,
                         "--save", str(save))
    assert code == 0, out + err
    ok_lines = [line for line in out.splitlines() if line.startswith("ok ")]
    assert sorted(line.split()[1] for line in ok_lines) == sorted(ids)
    assert f"{N_RUNS} of {N_RUNS} histories replayed" in out
    assert f"{N_RUNS}/{N_RUNS}" in err  # the progress bar's final state
    saved = sorted(save.glob("*.json"))
    assert len(saved) == N_RUNS and all(p.name.split("__")[0] in ids for p in saved)
    # what was saved is what file mode reads
    code, out, err = run(capsys, "-w", "replay_server_wfs:ShipmentV1", str(save))
    assert code == 0 and f"{N_RUNS} of {N_RUNS} histories replayed" in out, out + err
    code, out, err = run(capsys, "-w", "replay_server_wfs:ShipmentNotifyFirst", str(save))
    assert code == 1, out + err


def test_inserted_activity_fails_naming_each_run(server: tuple[DevServer, str, list[str]],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    dev, query, ids = server
    code, out, err = run(capsys, "-w", "replay_server_wfs:ShipmentNotifyFirst", "--address", dev.address,
                         "--query", query)
    assert code == 1, out + err
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert sorted(line.split()[1] for line in failed) == sorted(ids)
    for line in failed:
        assert "NonDeterminismError" in line and "history event" in line and "notify_customer" in line
    assert f"0 of {N_RUNS} histories replayed; {N_RUNS} failed" in out


def test_limit_replays_at_most_that_many(server: tuple[DevServer, str, list[str]],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    dev, query, _ = server
    code, out, err = run(capsys, "-w", "replay_server_wfs:ShipmentV1", "--address", dev.address, "--query", query,
                         "--limit", "2")
    assert code == 0, out + err
    assert "2 of 2 histories replayed" in out


def test_bad_arguments_exit_2_and_change_nothing(server: tuple[DevServer, str, list[str]], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    dev, query, _ = server
    base = ["-w", "replay_server_wfs:ShipmentV1", "--address", dev.address]
    a_file = tmp_path / "h.json"
    a_file.write_text("{}")
    save = tmp_path / "never"

    code, out, err = run(capsys, *base, "--query", query, "--save", str(save), str(a_file))
    assert code == 2 and "not both" in err, err
    code, out, err = run(capsys, *base, "--query", query, "--limit", "0", "--save", str(save))
    assert code == 2 and "--limit" in err, err
    code, out, err = run(capsys, *base, "--query", query, "--save", str(a_file))
    assert code == 2 and "not a directory" in err, err
    code, out, err = run(capsys, *base, "--query", query, "--save", str(a_file / "below"))
    assert code == 2 and "not a directory" in err, err
    code, out, err = run(capsys, *base, "--query", "WorkflowType = 'Shipment' AND StartTime >", "--save", str(save))
    assert code == 2 and "position" in err and "--query" in err, err
    code, out, err = run(capsys, *base, "--limit", "3")
    assert code == 2 and "needs --query" in err, err
    code, out, err = run(capsys, "-w", "replay_server_wfs:ShipmentV1")
    assert code == 2 and "--query" in err, err
    assert not save.exists() and a_file.read_text() == "{}"


def test_no_matching_run_is_a_warning(server: tuple[DevServer, str, list[str]],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    dev, _, _ = server
    code, out, err = run(capsys, "-w", "replay_server_wfs:ShipmentV1", "--address", dev.address,
                         "--query", "WorkflowId = 'no-such-run'")
    assert code == 0, out + err
    assert "0 of 0 histories replayed" in out and "matched no runs" in err
