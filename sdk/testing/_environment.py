"""``WorkflowEnvironment``: an in-process control plane and a client for tests.

Both flavours run the real control plane (frontend, history engine, matching) in
this process on an in-memory SQLite database, so there is nothing to download and
each environment is independent (tests may run in parallel processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime

from collections.abc import Iterator, Sequence
from typing import Any

from spindle.controlplane import embedded
from spindle.controlplane.clock import VirtualClock
from spindle.controlplane.config import ServerConfig
from spindle._client import Client
from spindle._converter import DataConverter, PayloadCodec
from spindle.testing._client import TimeSkippingClient
from spindle.testing._time_skipping import TimeSkipper

__all__ = ["WorkflowEnvironment"]

_UTC = datetime.timezone.utc
# One shard is plenty for a test and makes each "next timer" look-up one query.
_TEST_SHARDS = 1
# Retention of the environment's namespaces (unless a config is given): a century, so that a
# test sleeping past the server default (3 days) still finds the runs that closed earlier.
_TEST_RETENTION_DAYS = 36_500.0


def _seconds(duration: datetime.timedelta | float) -> float:
    return duration.total_seconds() if isinstance(duration, datetime.timedelta) else float(duration)


class WorkflowEnvironment:
    """A control plane in this process plus a :class:`Client` connected to it.

    Make one with :meth:`start_time_skipping` or :meth:`start_local` and use it as an
    async context manager (``async with await WorkflowEnvironment.start_time_skipping()
    as env``), or call :meth:`shutdown` yourself.

    Attributes:
        client: an ordinary client of the environment's namespace (``"default"``).
    """

    def __init__(self, cp: embedded.EmbeddedControlPlane, client: Client, skipper: TimeSkipper | None) -> None:
        self._cp = cp
        self.client = client
        self._skipper = skipper
        self._closed = False

    # ------------------------------------------------------------------ construction
    @classmethod
    async def start_time_skipping(
        cls,
        *,
        start_time: datetime.datetime | None = None,
        namespace: str = "default",
        data_converter: DataConverter | None = None,
        codecs: Sequence[PayloadCodec] = (),
        config: ServerConfig | None = None,
    ) -> WorkflowEnvironment:
        """Start an environment whose clock is virtual.

        Time moves only by :meth:`sleep`, or automatically while the test awaits a
        workflow result (``handle.result()``, ``client.execute_workflow``) and the
        control plane is idle: then the clock jumps straight to the next durable timer
        (user timers, activity timeouts and retry backoff, workflow timeouts). A
        14-day timer therefore takes milliseconds of wall time.

        Args:
            start_time: the initial virtual time (default: now, to the millisecond).
            namespace: the namespace the client addresses (it is created, with the search
                attributes Temporal's dev server registers: ``CustomKeywordField``,
                ``CustomStringField``, ``CustomTextField``, ``CustomIntField``,
                ``CustomDoubleField``, ``CustomBoolField``, ``CustomDatetimeField``,
                ``CustomKeywordListField``).
            data_converter / codecs: passed to the client.
            config: control-plane settings (default: ``ServerConfig(num_shards=1)`` with a
                retention of a century, so closed runs are never deleted under a test;
                pass a config to test retention and archival).
        """
        clock = VirtualClock(None if start_time is None else int(start_time.timestamp() * 1000))
        cfg = config or dataclasses.replace(ServerConfig(), num_shards=_TEST_SHARDS,
                                            default_retention_days=_TEST_RETENTION_DAYS)
        cp = await embedded.start(":memory:", clock=clock, config=cfg, namespace=namespace, dev_search_attributes=True)
        try:
            skipper = TimeSkipper(cp.control_plane.engine, clock)
            client = TimeSkippingClient(cp.stub, skipper=skipper, namespace=namespace,
                                        data_converter=data_converter, codecs=codecs)
            skipper.start()
        except BaseException:
            await cp.stop()
            raise
        return cls(cp, client, skipper)

    @classmethod
    async def start_local(
        cls,
        *,
        namespace: str = "default",
        data_converter: DataConverter | None = None,
        codecs: Sequence[PayloadCodec] = (),
        config: ServerConfig | None = None,
    ) -> WorkflowEnvironment:
        """Start an environment on the real clock (timers take their real time).

        Args: as :meth:`start_time_skipping` (without ``start_time``).
        """
        cfg = config or dataclasses.replace(ServerConfig(), num_shards=_TEST_SHARDS,
                                            default_retention_days=_TEST_RETENTION_DAYS)
        cp = await embedded.start(":memory:", config=cfg, namespace=namespace, dev_search_attributes=True)
        client = Client(cp.stub, namespace=namespace, data_converter=data_converter, codecs=codecs)
        return cls(cp, client, None)

    # ------------------------------------------------------------------ lifecycle
    async def shutdown(self) -> None:
        """Stop the auto skipper, close the client and stop the control plane. Idempotent.

        Stop your workers first (leave their ``async with`` block) so that nothing polls
        a stopped control plane.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if self._skipper is not None:
                await self._skipper.stop()
            await self.client.close()
        finally:
            await self._cp.stop()

    async def __aenter__(self) -> WorkflowEnvironment:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # ------------------------------------------------------------------ time
    @property
    def supports_time_skipping(self) -> bool:
        """Whether this environment's clock is virtual."""
        return self._skipper is not None

    @property
    def control_plane(self) -> Any:
        """The in-process ``ControlPlane`` (for white-box tests)."""
        return self._cp.control_plane

    def now(self) -> datetime.datetime:
        """The control plane's current time (virtual or real) as an aware UTC datetime."""
        return datetime.datetime.fromtimestamp(self._cp.clock.now_ms() / 1000, _UTC)

    def get_current_time(self) -> datetime.datetime:
        """Alias of :meth:`now` (Temporal's name)."""
        return self.now()

    async def sleep(self, duration: datetime.timedelta | float) -> None:
        """Let ``duration`` (a timedelta or seconds) pass.

        With time skipping, the virtual clock advances by exactly ``duration``, stopping
        at every timer due on the way so timers fire in order and the workflow tasks
        they trigger run at the right time; the call returns when those have settled.
        It never waits for an activity: time moves while activities run, so a hung
        activity's start-to-close (or heartbeat) timeout fires in virtual time. Without
        time skipping this is ``asyncio.sleep``.

        Raises:
            ValueError: ``duration`` is negative.
        """
        seconds = _seconds(duration)
        if seconds < 0:
            raise ValueError(f"cannot sleep a negative duration ({duration})")
        if self._skipper is None:
            await asyncio.sleep(seconds)
            return
        await self._skipper.sleep(seconds)

    @contextlib.contextmanager
    def auto_time_skipping_disabled(self) -> Iterator[None]:
        """Inside the block, awaiting a result does not move time (only :meth:`sleep` does).

        Nests; a no-op for :meth:`start_local` environments.
        """
        if self._skipper is None:
            yield
            return
        with self._skipper.disabled():
            yield

