"""``spindle workflow delete`` and ``delete-status`` (issue 26) through the CLI's ``main`` against ``start-dev --auth``:
bad flags refused before any call, one run, the dry run, the confirmation, the job with its progress, a reader refused.
"""

from __future__ import annotations

import asyncio
import io
import json

from collections.abc import Iterator

import pytest

from spindle_procs import AuthDevServer

from spindle.cli import main
from spindle.client import Client

pytestmark = pytest.mark.timeout(120)

Q = "CustomKeywordField = 'c-42'"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthDevServer]:
    with AuthDevServer(tmp_path_factory.mktemp("erasure-cli") / "dev.db") as dev:
        yield dev


def run(capsys: pytest.CaptureFixture[str], address: str, *argv: str) -> tuple[int, str, str]:
    code = main(["workflow", *argv, "--address", address])
    shown = capsys.readouterr()
    return code, shown.out, shown.err


async def _client(server: AuthDevServer, key: str | None = None) -> Client:
    return await Client.connect(server.address, api_key=key or server.key)


def start(server: AuthDevServer, customer: str, *ids: str) -> None:
    async def go() -> None:
        client = await _client(server)
        try:
            for wid in ids:
                await client.start_workflow("Order", id=wid, task_queue="nobody",
                                            search_attributes={"CustomKeywordField": customer})
        finally:
            await client.close()

    asyncio.run(go())


def count(server: AuthDevServer, query: str) -> int:
    async def go() -> int:
        client = await _client(server)
        try:
            return await client.count_workflows(query)
        finally:
            await client.close()

    return asyncio.run(go())


def settle(server: AuthDevServer, query: str, want: int, timeout: float = 10) -> None:
    import time

    end = time.monotonic() + timeout
    while (got := count(server, query)) != want:
        assert time.monotonic() < end, f"{query!r}: {got}, expected {want}"
        time.sleep(0.05)


@pytest.mark.parametrize(("argv", "flag"), [
    (["--reason", "x"], "one of --workflow-id or --query is required"),
    (["-w", "a", "-q", Q, "--reason", "x"], "give either --workflow-id or --query, not both"),
    (["-w", "a", "--reason", "  "], "--reason: must not be empty"),
    (["-q", Q, "--reason", ""], "--reason: must not be empty"),
    (["-q", " ", "--reason", "x"], "--query: must not be empty"),
    (["-w", "a", "--reason", "x", "--dry-run"], "--dry-run goes with --query"),
    (["-w", "a", "--reason", "x", "--job-id", "j"], "--job-id goes with --query"),
    (["-q", Q, "--reason", "x", "-r", "r1"], "--run-id names one run"),
    (["-w", "a"], "Missing option '--reason'"),
])
def test_bad_flags_exit_2_naming_the_flag_before_any_call(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                          flag: str) -> None:
    code, out, err = run(capsys, "127.0.0.1:1", "delete", *argv)  # nothing listens there: a call would exit 1
    assert code == 2 and flag in err and not out, err


def test_delete_one_run_then_the_same_again(server: AuthDevServer, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPINDLE_API_KEY", server.key)
    start(server, "c-solo", "solo-1")
    settle(server, "CustomKeywordField = 'c-solo'", 1)
    code, out, err = run(capsys, server.address, "delete", "-w", "solo-1", "--reason", "gdpr 1")
    assert (code, out) == (0, "deleted workflow solo-1\n"), err
    settle(server, "CustomKeywordField = 'c-solo'", 0)
    code, out, err = run(capsys, server.address, "describe", "-w", "solo-1")
    assert code == 1 and "not found" in err.lower(), err
    assert run(capsys, server.address, "delete", "-w", "solo-1", "--reason", "gdpr 1")[0] == 0  # idempotent


def test_query_dry_run_confirmation_and_the_job(server: AuthDevServer, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPINDLE_API_KEY", server.key)
    start(server, "c-42", "c42-a", "c42-b", "c42-c")
    start(server, "c-7", "c7-a")
    settle(server, Q, 3)

    # the dry run: counts (all three run: terminated first), nothing changes
    code, out, err = run(capsys, server.address, "delete", "-q", Q, "--reason", "gdpr 2", "--dry-run")
    assert code == 0, err
    assert json.loads(out) | {"archived": None} == {"namespace": "default", "query": Q, "total": 3, "running": 3,
                                                    "archived": None}
    assert "3 execution(s) match" in err and "3 running (terminated first)" in err
    assert count(server, Q) == 3

    # no confirmation: exit 2, the count was shown, nothing changed
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, out, err = run(capsys, server.address, "delete", "-q", Q, "--reason", "gdpr 2")
    assert code == 2 and "erase 3 execution(s)" in err and "nothing was done" in err, err
    assert count(server, Q) == 3

    # confirmed: the job runs, progress on stderr, the final counts on stdout
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, out, err = run(capsys, server.address, "delete", "-q", Q, "--reason", "gdpr 2", "--job-id", "gdpr-2")
    assert code == 0, err
    final = json.loads(out)
    assert (final["job_id"], final["state"], final["total"], final["erased"], final["terminated"]) == (
        "gdpr-2", "COMPLETED", 3, 3, 3), final
    assert "erasure job gdpr-2 started" in err and "gdpr-2: completed: erased 3 of 3 found" in err, err
    settle(server, Q, 0)
    assert count(server, "CustomKeywordField = 'c-7'") == 1  # untouched

    # delete-status: one job, and the list
    code, out, err = run(capsys, server.address, "delete-status", "--job-id", "gdpr-2")
    assert code == 0 and json.loads(out)["state"] == "COMPLETED", err
    code, out, err = run(capsys, server.address, "delete-status")
    assert code == 0 and "gdpr-2" in [j["job_id"] for j in json.loads(out)], err
    code, out, err = run(capsys, server.address, "delete-status", "--job-id", "no-such-job")
    assert code == 1 and err.startswith("spindle: error:"), err

    # --no-wait returns the job id at once; --wait on delete-status follows it to the end
    start(server, "c-43", "c43-a")
    settle(server, "CustomKeywordField = 'c-43'", 1)
    code, out, err = run(capsys, server.address, "delete", "-q", "CustomKeywordField = 'c-43'", "--reason", "gdpr 3",
                         "--yes", "--no-wait")
    assert code == 0, err
    job_id = json.loads(out)["job_id"]
    code, out, err = run(capsys, server.address, "delete-status", "--job-id", job_id, "--wait")
    assert code == 0 and json.loads(out)["erased"] == 1, err
    settle(server, "CustomKeywordField = 'c-43'", 0)

    # a malformed query: the server's error, exit 1
    code, out, err = run(capsys, server.address, "delete", "-q", "CustomKeywordField = ", "--reason", "x", "--yes")
    assert code == 1 and "spindle: error:" in err, err


def test_a_reader_may_follow_jobs_but_not_erase(server: AuthDevServer, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    async def reader_key() -> str:
        client = await _client(server)
        try:
            return (await client.create_api_key("dpo-reader", grants={"default": "reader"})).secret or ""
        finally:
            await client.close()

    monkeypatch.setenv("SPINDLE_API_KEY", asyncio.run(reader_key()))
    start(server, "c-50", "c50-a")
    settle(server, "CustomKeywordField = 'c-50'", 1)
    code, out, err = run(capsys, server.address, "delete", "-w", "c50-a", "--reason", "x")
    assert code == 1 and "requires role 'admin'" in err, err
    code, out, err = run(capsys, server.address, "delete", "-q", "CustomKeywordField = 'c-50'", "--reason", "x", "--yes")
    assert code == 1 and "StartBatchOperation requires role 'admin'" in err, err  # the dry-run count (a read) went
    assert count(server, "CustomKeywordField = 'c-50'") == 1  # nothing erased
    code, out, err = run(capsys, server.address, "delete-status")
    assert code == 0, err
