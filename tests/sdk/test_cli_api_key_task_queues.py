"""Worker keys confined to task queues from the client and the CLI (issue 26, finding 4).

``Client.create_api_key(..., task_queues={ns: [queue, ...]})`` and ``spindle admin api-key
create --task-queue NS=QUEUE`` (repeatable) make a key whose worker grant polls and answers
only those queues; ``list`` shows them. Bad values are refused before any call (CLI) or by
the server with nothing created.
"""

from __future__ import annotations

import asyncio
import datetime
import json

from pathlib import Path

import pytest

from click.testing import CliRunner
from spindle_procs import AuthDevServer

from spindle.cli import cli
from spindle.client import Client
from spindle.client._api_keys import ApiKey, create_request
from spindle.exceptions import RPCError

pytestmark = pytest.mark.timeout(120)


def test_the_request_carries_the_task_queues_and_a_string_is_refused() -> None:
    req = create_request("w", {"orders": "worker"}, False, None, task_queues={"orders": ["eu", "us"]})
    assert {ns: list(q.names) for ns, q in req.task_queues.items()} == {"orders": ["eu", "us"]}
    assert not create_request("w", {"orders": "worker"}, False, None).task_queues
    with pytest.raises(ValueError, match=r"task_queues\['orders'\]: expected a list of task queue names"):
        create_request("w", {"orders": "worker"}, False, datetime.timedelta(days=1), task_queues={"orders": "eu"})


def test_a_bad_task_queue_flag_exits_2_before_connecting() -> None:
    r = CliRunner().invoke(cli, ["admin", "api-key", "create", "k", "--grant", "default=worker", "--task-queue",
                                 "default", "--address", "127.0.0.1:1"])
    assert r.exit_code == 2 and "--task-queue: expected NAMESPACE=TASK_QUEUE, got 'default'" in r.output, r.output


async def client_part(address: str, secret: str) -> None:
    async with await Client.connect(address, api_key=secret) as admin:
        key = await admin.create_api_key("client-made", grants={"default": "worker"},
                                         task_queues={"default": ["orders", "billing"]})
        assert key.task_queues == {"default": ("billing", "orders")}
        with pytest.raises(RPCError) as e:
            await admin.create_api_key("bad", grants={"default": "writer"}, task_queues={"default": ["orders"]})
        assert e.value.status == "INVALID_ARGUMENT" and "task_queues['default']" in e.value.message
        assert "bad" not in [k.name for k in await admin.list_api_keys()]


def test_client_and_cli_create_and_list_confined_keys(tmp_path: Path) -> None:
    with AuthDevServer(tmp_path / "dev.db") as srv:
        asyncio.run(client_part(srv.address, srv.key))
        env = {"SPINDLE_API_KEY": srv.key}
        at = ["--address", srv.address]
        r = CliRunner().invoke(cli, ["admin", "api-key", "create", "cli-made", "--grant", "default=worker",
                                     "--task-queue", "default=q1", "--task-queue", "default=q2", *at], env=env)
        assert r.exit_code == 0, r.output
        made = json.loads(r.stdout)
        assert made["task_queues"] == {"default": ["q1", "q2"]} and made["secret"].startswith("spk_")
        r = CliRunner().invoke(cli, ["admin", "api-key", "list", *at], env=env)
        assert r.exit_code == 0, r.output
        listed = {k["name"]: k for k in json.loads(r.stdout)}
        assert listed["cli-made"]["task_queues"] == {"default": ["q1", "q2"]}
        assert listed["client-made"]["task_queues"] == {"default": ["billing", "orders"]}
        assert all(k["task_queues"] == {} for n, k in listed.items() if n not in ("cli-made", "client-made"))
        r = CliRunner().invoke(cli, ["admin", "api-key", "create", "cli-bad", "--grant", "default=reader",
                                     "--task-queue", "default=q1", *at], env=env)
        assert r.exit_code == 1 and "task_queues['default']" in r.output and "role 'reader'" in r.output, r.output


def test_api_key_shows_no_task_queues_by_default() -> None:
    assert ApiKey(id="1", name="n", grants={}).task_queues == {}
