"""Worker build versioning in ``spindle workflow`` (describe, update-options and its batch form) and the roles the
``spindle deployment`` commands need (``spindle server start-dev --auth``).
"""

from __future__ import annotations

import asyncio
import json

from collections.abc import Iterator

import pytest

from _deployment_wire import announce, run, start_on
from spindle_procs import AuthDevServer, DevServer
from waiting import until_sync

from spindle.cli import main
from spindle.client import Client

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    dev = DevServer(tmp_path_factory.mktemp("versioning") / "dev.db").start()
    try:
        yield dev
    finally:
        dev.stop()


def versioning(capsys: pytest.CaptureFixture[str], address: str, workflow_id: str) -> dict | None:
    code, out, err = run(capsys, address, "workflow", "describe", "-w", workflow_id)
    assert code == 0, err
    return json.loads(out).get("versioning")


def test_describe_shows_the_versioning_and_update_options_sets_and_removes_the_override(
        server: DevServer, capsys: pytest.CaptureFixture[str]) -> None:
    a = server.address
    announce(a, "1.0", "2.0")
    assert main(["deployment", "set-current", "orders", "1.0", "--address", a]) == 0
    start_on(a, "wf-pinned", "1.0")
    assert main(["workflow", "start", "-w", "wf-plain", "--type", "Plain", "-t", "plain-q", "--address", a]) == 0
    capsys.readouterr()

    assert versioning(capsys, a, "wf-plain") is None  # an unversioned run: nothing new
    assert versioning(capsys, a, "wf-pinned") == {"behavior": "PINNED", "deployment_version": "orders.1.0",
                                                  "override": None, "pinned_version": "orders.1.0"}

    code, out, err = run(capsys, a, "workflow", "update-options", "-w", "wf-pinned", "--pinned-version", "orders.2.0")
    assert (code, out) == (0, "versioning override of wf-pinned: pinned to orders.2.0\n"), err
    assert versioning(capsys, a, "wf-pinned") == {"behavior": "PINNED", "deployment_version": "orders.1.0",
                                                  "override": {"pinned_version": "orders.2.0"},
                                                  "pinned_version": "orders.2.0"}

    code, out, err = run(capsys, a, "workflow", "update-options", "-w", "wf-pinned", "--auto-upgrade")
    assert (code, out) == (0, "versioning override of wf-pinned: auto-upgrade\n"), err
    v = versioning(capsys, a, "wf-pinned")
    assert v is not None and v["override"] == {"auto_upgrade": True} and v["pinned_version"] is None

    code, out, err = run(capsys, a, "workflow", "update-options", "-w", "wf-pinned", "--unset-override")
    assert (code, out) == (0, "versioning override of wf-pinned: removed\n"), err
    v = versioning(capsys, a, "wf-pinned")
    assert v is not None and v["override"] is None and v["pinned_version"] == "orders.1.0"

    code, out, err = run(capsys, a, "workflow", "update-options", "-w", "no-such-run", "--auto-upgrade")
    assert code == 1 and err.startswith("spindle: error: ") and not out


def test_the_batch_form_pins_every_matching_execution_after_confirmation(
        server: DevServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    a = server.address
    announce(a, "1.0", "2.0")
    assert main(["deployment", "set-current", "orders", "1.0", "--address", a]) == 0
    for wid in ("batch-1", "batch-2"):
        start_on(a, wid, "1.0")
    query = "WorkflowId STARTS_WITH 'batch-' AND TemporalWorkerDeploymentVersion = 'orders.1.0'"

    def both_listed() -> bool:
        capsys.readouterr()
        assert main(["workflow", "list", "-q", query, "-o", "json", "--address", a]) == 0
        return len(json.loads(capsys.readouterr().out)) == 2

    until_sync(both_listed, "the two runs visible on orders.1.0", timeout=20)

    import io
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, out, err = run(capsys, a, "workflow", "update-options", "-q", query, "--pinned-version", "orders.2.0")
    assert code == 2 and "2 execution(s) match" in err and "set_versioning_override 2 execution(s)? [y/N]" in err
    assert "nothing was done" in err and not out
    assert versioning(capsys, a, "batch-1")["override"] is None  # type: ignore[index]

    code, out, err = run(capsys, a, "workflow", "update-options", "-q", query, "--pinned-version", "orders.2.0",
                         "--yes")
    assert code == 0, err
    assert out.startswith("set_versioning_override: 2 matched, 2 done, 0 skipped, 0 failed (batch batch-"), out
    for wid in ("batch-1", "batch-2"):
        v = versioning(capsys, a, wid)
        assert v is not None and v["override"] == {"pinned_version": "orders.2.0"}, v

    code, out, err = run(capsys, a, "workflow", "update-options", "-q", query, "-w", "batch-1", "--auto-upgrade")
    assert code == 2 and err == "spindle: error: give either --workflow-id or --query, not both\n"


@pytest.mark.parametrize(("argv", "says"), [
    (["--pinned-version", "orders"], "Error: Invalid value for '--pinned-version': expected DEPLOYMENT.BUILD, e.g. "
                                     "orders.1.0 (the deployment name, a dot, the build id), got 'orders'"),
    (["--pinned-version", ".1.0"], "Error: Invalid value for '--pinned-version': expected DEPLOYMENT.BUILD"),
    ([], "spindle: error: give one of --pinned-version DEPLOYMENT.BUILD, --auto-upgrade or --unset-override\n"),
    (["--auto-upgrade", "--pinned-version", "orders.1"],
     "spindle: error: give only one of --pinned-version, --auto-upgrade and --unset-override\n"),
])
def test_update_options_usage_errors_exit_2_before_connecting(argv: list[str], says: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workflow", "update-options", "-w", "x", *argv, "--address", "127.0.0.1:1"]) == 2
    assert says in capsys.readouterr().err


async def _keys(address: str, admin: str) -> dict[str, str]:
    async with await Client.connect(address, api_key=admin) as client:
        return {role: (await client.create_api_key(f"deploy-{role}", grants={"default": role})).secret or ""
                for role in ("reader", "writer")}


def test_reading_needs_the_reader_role_and_routing_the_admin_role(tmp_path_factory: pytest.TempPathFactory,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with AuthDevServer(tmp_path_factory.mktemp("auth") / "auth.db") as srv:
        a = srv.address
        keys = asyncio.run(_keys(a, srv.key))
        announce(a, "1.0", "2.0", api_key=srv.key)
        monkeypatch.setenv("SPINDLE_API_KEY", srv.key)  # the key comes from the environment, as in a shell
        code, out, err = run(capsys, a, "deployment", "set-current", "orders", "1.0")
        assert (code, out) == (0, "orders: current version orders.1.0 (was none)\n"), err
        start_on(a, "auth-wf", "1.0", api_key=srv.key)

        monkeypatch.setenv("SPINDLE_API_KEY", keys["reader"])
        code, out, err = run(capsys, a, "deployment", "list", "-o", "json")
        assert code == 0 and [r["name"] for r in json.loads(out)] == ["orders"], err
        code, out, err = run(capsys, a, "deployment", "describe", "orders")
        assert code == 0 and "current:   orders.1.0" in out, err

        monkeypatch.setenv("SPINDLE_API_KEY", keys["writer"])
        for argv in (["deployment", "set-current", "orders", "2.0"],
                     ["deployment", "set-ramping", "orders", "2.0", "--percentage", "5"],
                     ["workflow", "update-options", "-w", "auth-wf", "--auto-upgrade"]):
            code, out, err = run(capsys, a, *argv)
            assert code == 1 and not out, (argv, err)
            assert err.startswith("spindle: error: ") and "requires role 'admin'" in err, (argv, err)

        monkeypatch.setenv("SPINDLE_API_KEY", srv.key)
        code, out, err = run(capsys, a, "deployment", "set-current", "orders", "2.0")
        assert (code, out) == (0, "orders: current version orders.2.0 (was orders.1.0)\n"), err
        code, out, err = run(capsys, a, "workflow", "update-options", "-w", "auth-wf", "--auto-upgrade")
        assert code == 0, err
