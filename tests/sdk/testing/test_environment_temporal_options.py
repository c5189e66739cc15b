"""WorkflowEnvironment: Temporal's options and entry points (start_local, from_client, get_current_time)."""

from __future__ import annotations

import datetime
import inspect

from pathlib import Path

import pytest

from spindle.client import Client
from spindle.common import SearchAttributeKey
from spindle.exceptions import RPCError
from spindle.testing import WorkflowEnvironment
from spindle.testing._environment import IGNORED_LOCAL_OPTIONS, IGNORED_TIME_SKIPPING_OPTIONS


def test_get_current_time_is_awaitable_and_now_is_not() -> None:
    assert inspect.iscoroutinefunction(WorkflowEnvironment.get_current_time)
    assert not inspect.iscoroutinefunction(WorkflowEnvironment.now)


async def test_get_current_time_follows_the_virtual_clock() -> None:
    start = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    async with await WorkflowEnvironment.start_time_skipping(start_time=start) as env:
        assert await env.get_current_time() == start == env.now()


async def test_start_local_accepts_and_ignores_every_dev_server_option() -> None:
    options = {name: None for name in IGNORED_LOCAL_OPTIONS}
    options.update(ui=True, ip="0.0.0.0", port=7233, dev_server_download_version="v1.7.4",
                   dev_server_extra_args=["--dynamic-config-value", "x=1"], interceptors=[], plugins=[])
    async with await WorkflowEnvironment.start_local(**options) as env:
        assert not env.supports_time_skipping
        assert (await env.client.describe_namespace()).name == "default"


async def test_start_time_skipping_accepts_test_server_options() -> None:
    options = {name: None for name in IGNORED_TIME_SKIPPING_OPTIONS}
    async with await WorkflowEnvironment.start_time_skipping(**options, identity="tester") as env:
        assert env.supports_time_skipping
        assert env.client.identity == "tester"


async def test_unknown_and_unsupported_options_are_refused() -> None:
    with pytest.raises(TypeError, match=r"start_local\(\) got an unexpected keyword argument 'dev_server_dowload'"):
        await WorkflowEnvironment.start_local(dev_server_dowload="x")
    with pytest.raises(TypeError, match="interceptors=.* is not supported"):
        await WorkflowEnvironment.start_local(interceptors=[object()])
    with pytest.raises(TypeError, match="start_time_skipping\\(\\) got an unexpected keyword argument 'ui'"):
        await WorkflowEnvironment.start_time_skipping(ui=True)
    with pytest.raises(TypeError, match="expected SearchAttributeKey entries"):
        await WorkflowEnvironment.start_local(search_attributes=["Tags"])  # type: ignore[list-item]


async def test_start_local_search_attributes_as_a_mapping_and_a_bad_type() -> None:
    async with await WorkflowEnvironment.start_local(search_attributes={"CustomerId": "Keyword"}) as env:
        assert (await env.client.describe_namespace()).search_attributes["CustomerId"] == "Keyword"
    with pytest.raises(ValueError, match="unknown search attribute type 'Keywords'"):
        await WorkflowEnvironment.start_local(search_attributes={"CustomerId": "Keywords"})
    with pytest.raises(RPCError):
        await WorkflowEnvironment.start_local(search_attributes=[SearchAttributeKey.for_keyword("Bad Name!")])


async def test_from_client_has_real_time_and_no_control_plane(tmp_path: Path) -> None:
    client = await Client.connect("embedded:" + str(tmp_path / "x.db"))
    try:
        env = WorkflowEnvironment.from_client(client)
        before = datetime.datetime.now(datetime.timezone.utc)
        now = await env.get_current_time()
        assert before <= now <= datetime.datetime.now(datetime.timezone.utc)
        with pytest.raises(RuntimeError, match="from_client"):
            env.control_plane  # noqa: B018 - the attribute read is what must raise
        with env.auto_time_skipping_disabled():
            await env.sleep(0.01)
        await env.shutdown()
        await env.shutdown()  # idempotent
        assert (await client.count_workflows()) == 0  # the client is still open
    finally:
        await client.close()
