"""``spindle deployment list|describe|set-current|set-ramping`` against a real server (``spindle server start-dev``).

A worker deployment becomes known when a worker polls naming it (``_deployment_wire``:
deployment ``orders``, builds ``1.0``, ``2.0``); the commands' output is checked, and their
effect through ``describe`` again. Usage errors exit 2 before anything is sent; the server's
refusals exit 1 with its message.
"""

from __future__ import annotations

import json

from collections.abc import Iterator
from pathlib import Path

import pytest

from _deployment_wire import announce, run, start_on
from spindle_procs import DevServer
from waiting import until_sync

from spindle.cli import main

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    dev = DevServer(tmp_path_factory.mktemp("deploy") / "dev.db").start()
    try:
        yield dev
    finally:
        dev.stop()


def describe_json(capsys: pytest.CaptureFixture[str], address: str, name: str = "orders") -> dict:
    code, out, err = run(capsys, address, "deployment", "describe", name, "-o", "json")
    assert code == 0, err
    return json.loads(out)


def test_a_deployment_from_first_poll_to_a_ramp_and_a_new_current_version(server: DevServer,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    a = server.address
    announce(a, "1.0", "2.0")

    code, out, err = run(capsys, a, "deployment", "list", "-o", "json")
    assert code == 0, err
    (row,) = [r for r in json.loads(out) if r["name"] == "orders"]
    assert row["current_version"] is None and row["ramping_version"] is None

    code, out, err = run(capsys, a, "deployment", "describe", "orders")
    assert code == 0, err
    assert "current:   unversioned workers" in out and "ramping:   none" in out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line[:1].isdigit()}
    assert lines["1.0"][1:4] == ["INACTIVE", "-", "0"] and lines["1.0"][-1] == "orders-q", out
    assert "conflict token: " in out

    code, out, err = run(capsys, a, "deployment", "set-current", "orders", "1.0")
    assert (code, out, err) == (0, "orders: current version orders.1.0 (was none)\n", "")
    start_on(a, "pinned-on-1", "1.0")  # its first task ran on 1.0, PINNED: it stays there

    code, out, err = run(capsys, a, "deployment", "set-ramping", "orders", "2.0", "--percentage", "25")
    assert (code, out) == (0, "orders: ramping version orders.2.0 at 25% (was none)\n"), err
    d = describe_json(capsys, a)
    assert d["routing"]["current_version"] == "orders.1.0"
    assert (d["routing"]["ramping_version"], d["routing"]["ramping_percentage"]) == ("orders.2.0", 25)
    statuses = {v["build_id"]: v["status"] for v in d["versions"]}
    assert statuses == {"1.0": "CURRENT", "2.0": "RAMPING"}

    code, out, err = run(capsys, a, "deployment", "set-ramping", "orders", "--stop", "-o", "json")
    assert code == 0, err
    stopped = json.loads(out)
    assert (stopped["ramping_version"], stopped["previous_ramping_version"], stopped["previous_percentage"]) == (
        None, "orders.2.0", 25)
    assert describe_json(capsys, a)["routing"]["ramping_version"] is None

    code, out, err = run(capsys, a, "deployment", "set-current", "orders", "2.0")
    assert (code, out) == (0, "orders: current version orders.2.0 (was orders.1.0)\n"), err

    def drained_state() -> dict | None:
        v1 = {v["build_id"]: v for v in describe_json(capsys, a)["versions"]}["1.0"]
        return v1 if (v1["status"], v1["drainage"], v1["open_pinned_executions"]) == ("DRAINING", "DRAINING", 1) \
            else None

    until_sync(drained_state, "1.0 draining with its one pinned execution open", timeout=20)
    code, out, err = run(capsys, a, "deployment", "describe", "orders")
    v1 = next(line for line in out.splitlines() if line.startswith("1.0 "))
    assert v1.split()[1:4] == ["DRAINING", "DRAINING", "1"], out
    assert "current:   orders.2.0 (since " in out

    code, out, err = run(capsys, a, "workflow", "terminate", "-w", "pinned-on-1")
    assert code == 0, err

    def drained() -> bool:
        v = {v["build_id"]: v for v in describe_json(capsys, a)["versions"]}["1.0"]
        return (v["status"], v["open_pinned_executions"]) == ("DRAINED", 0)

    until_sync(drained, "1.0 drained once its pinned execution closed", timeout=20)
    code, out, err = run(capsys, a, "deployment", "describe", "orders")
    assert "DRAINED (no open execution waits for it; its workers can be stopped): 1.0" in out, out


def test_a_refused_change_exits_1_with_the_servers_message(server: DevServer,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    a = server.address
    announce(a, "1.0")
    code, out, err = run(capsys, a, "deployment", "set-current", "orders", "9.9")
    assert code == 1 and not out
    assert err.startswith("spindle: error: ") and "no poller of version 'orders.9.9' has been seen" in err, err
    assert "[--allow-no-pollers]" in err

    token = describe_json(capsys, a)["conflict_token"]
    code, out, err = run(capsys, a, "deployment", "set-ramping", "orders", "7.0", "--percentage", "5",
                         "--allow-no-pollers", "--conflict-token", token)
    assert code == 0, err
    code, out, err = run(capsys, a, "deployment", "set-current", "orders", "1.0", "--conflict-token", token)
    assert code == 1 and "conflict_token: deployment 'orders' changed" in err, err

    code, out, err = run(capsys, a, "deployment", "describe", "no-such-deployment")
    assert code == 1 and "no worker deployment 'no-such-deployment'" in err, err
    code, out, err = run(capsys, a, "deployment", "set-ramping", "orders", "--stop")
    assert code == 0, err


@pytest.mark.parametrize(("argv", "says"), [
    (["set-ramping", "orders", "2.0"], "spindle: error: --percentage is required with a BUILD (0 to 100)\n"),
    (["set-ramping", "orders", "--percentage", "5"], "spindle: error: give the BUILD to ramp (or --stop to end the "
                                                     "ramp)\n"),
    (["set-ramping", "orders", "2.0", "--stop"], "spindle: error: --stop takes no BUILD and no --percentage\n"),
    (["set-current", "orders"], "spindle: error: give a BUILD or --unversioned (one of them)\n"),
    (["set-current", "orders", "2.0", "--unversioned"], "spindle: error: give a BUILD or --unversioned (one of "
                                                        "them)\n"),
])
def test_flags_that_do_not_go_together_exit_2_before_connecting(argv: list[str], says: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deployment", *argv, "--address", "127.0.0.1:1"]) == 2
    assert capsys.readouterr().err == says


@pytest.mark.parametrize(("argv", "says"), [
    (["set-ramping", "orders", "2.0", "--percentage", "150"],
     "Error: Invalid value for '--percentage': '150': must be a percentage from 0 to 100"),
    (["set-ramping", "orders", "2.0", "--percentage", "nan"],
     "Error: Invalid value for '--percentage': 'nan': must be a percentage from 0 to 100"),
    (["set-ramping", "orders", "2.0", "--percentage", "lots"],
     "Error: Invalid value for '--percentage': 'lots' is not a number (a percentage from 0 to 100)"),
    (["set-current", "orders", "2.0", "--conflict-token", "not base64!"],
     "Error: Invalid value for '--conflict-token': 'not base64!' is not a token as 'spindle deployment describe' "
     "prints it (base64)"),
    (["describe"], "Error: Missing argument 'NAME'."),
])
def test_bad_values_exit_2_naming_the_flag(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deployment", *argv, "--address", "127.0.0.1:1"]) == 2
    assert says in capsys.readouterr().err


def test_an_unreachable_server_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["deployment", "list", "--address", "127.0.0.1:1"])
    assert code == 1 and capsys.readouterr().err.startswith("spindle: error: ")
