"""``WorkflowEnvironment``: an in-process control plane and a client for tests.

Both flavours run the real control plane (frontend, history engine, matching) in
this process on an in-memory SQLite database, so there is nothing to download and
each environment is independent (tests may run in parallel processes).
:meth:`WorkflowEnvironment.from_client` wraps a client of a server that already runs.

Temporal's options that configure its downloaded dev/test server binary (``ip``,
``port``, ``ui``, ``dev_server_download_version``, ``test_server_extra_args`` ...)
are accepted and ignored, so a Temporal ``conftest.py`` works unchanged; see
:data:`IGNORED_LOCAL_OPTIONS` and :data:`IGNORED_TIME_SKIPPING_OPTIONS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from spindle.client import Client
from spindle.common._search_attributes import SearchAttributeKey
from spindle.controlplane import embedded
from spindle.controlplane.embedded import ServerConfig, VirtualClock
from spindle.converter._data_converter import DataConverter
from spindle.converter._payload_codec import PayloadCodec
from spindle.testing._client import TimeSkippingClient
from spindle.testing._time_skipping import TimeSkipper

__all__ = ["WorkflowEnvironment", "IGNORED_LOCAL_OPTIONS", "IGNORED_TIME_SKIPPING_OPTIONS"]

_UTC = datetime.timezone.utc
# One shard is plenty for a test and makes each "next timer" look-up one query.
_TEST_SHARDS = 1
# Retention of the environment's namespaces (unless a config is given): a century, so that a
# test sleeping past the server default (3 days) still finds the runs that closed earlier.
_TEST_RETENTION_DAYS = 36_500.0


# Options of Temporal's client connection that mean nothing for an in-process control plane.
_IGNORED_CONNECTION_OPTIONS = frozenset({"retry_config", "rpc_metadata", "runtime", "tls", "port",
                                         "download_dest_dir"})
#: Temporal's ``start_local`` options that ``start_local`` accepts and ignores: they configure
#: Temporal's dev-server binary (Spindle's control plane runs in this process, in memory).
IGNORED_LOCAL_OPTIONS: frozenset[str] = _IGNORED_CONNECTION_OPTIONS | {
    "ip", "ui", "ui_port", "dev_server_existing_path", "dev_server_database_filename", "dev_server_log_format",
    "dev_server_log_level", "dev_server_download_version", "dev_server_extra_args", "dev_server_download_ttl"}
#: Temporal's ``start_time_skipping`` options that ``start_time_skipping`` accepts and ignores
#: (they configure Temporal's test-server binary).
IGNORED_TIME_SKIPPING_OPTIONS: frozenset[str] = _IGNORED_CONNECTION_OPTIONS | {
    "test_server_existing_path", "test_server_download_version", "test_server_extra_args",
    "test_server_download_ttl"}
# Temporal options that would change behaviour: accepted only with their "off" value.
_UNSUPPORTED_UNLESS_EMPTY = ("interceptors", "plugins", "default_workflow_query_reject_condition")


def _check_temporal_options(where: str, options: Mapping[str, Any], ignored: frozenset[str]) -> None:
    """Accept Temporal's server-binary options (ignored); refuse unknown or behaviour-changing ones.

    Raises:
        TypeError: an option Temporal does not have either (a typo), or one Spindle cannot honour.
    """
    for name, value in options.items():
        if name in ignored:
            continue
        if name in _UNSUPPORTED_UNLESS_EMPTY:
            if value:
                raise TypeError(f"{where}: {name}={value!r} is not supported by Spindle (only an empty value is "
                                "accepted, for compatibility with Temporal)")
            continue
        raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")


def _seconds(duration: datetime.timedelta | float) -> float:
    return duration.total_seconds() if isinstance(duration, datetime.timedelta) else float(duration)


def _search_attribute_types(search_attributes: Iterable[SearchAttributeKey[Any]] | Mapping[str, Any]
                            ) -> dict[str, Any]:
    if isinstance(search_attributes, Mapping):
        return dict(search_attributes)
    out: dict[str, Any] = {}
    for key in search_attributes:
        if not isinstance(key, SearchAttributeKey):
            raise TypeError(f"search_attributes: expected SearchAttributeKey entries "
                            f"(SearchAttributeKey.for_keyword('Name')), got {key!r}")
        out[key.name] = key.indexed_value_type
    return out


class WorkflowEnvironment:
    """A control plane in this process plus a :class:`Client` connected to it.

    Make one with :meth:`start_time_skipping` or :meth:`start_local` and use it as an
    async context manager (``async with await WorkflowEnvironment.start_time_skipping()
    as env``), or call :meth:`shutdown` yourself. :meth:`from_client` wraps a client of
    a server that runs elsewhere.

    Attributes:
        client: an ordinary client of the environment's namespace (``"default"``).
    """

    def __init__(self, cp: embedded.EmbeddedControlPlane | None, client: Client, skipper: TimeSkipper | None) -> None:
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
        identity: str | None = None,
        **temporal_options: Any,
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
            identity: the client's identity.
            **temporal_options: Temporal's test-server options
                (:data:`IGNORED_TIME_SKIPPING_OPTIONS`), accepted and ignored; empty
                ``interceptors`` / ``plugins`` are accepted too.

        Raises:
            TypeError: an unknown option, or a Temporal option Spindle cannot honour
                (non-empty ``interceptors``, ``plugins``).
        """
        _check_temporal_options("WorkflowEnvironment.start_time_skipping", temporal_options,
                                IGNORED_TIME_SKIPPING_OPTIONS)
        clock = VirtualClock(None if start_time is None else int(start_time.timestamp() * 1000))
        cfg = config or dataclasses.replace(ServerConfig(), num_shards=_TEST_SHARDS,
                                            default_retention_days=_TEST_RETENTION_DAYS)
        cp = await embedded.start(":memory:", clock=clock, config=cfg, namespace=namespace, dev_search_attributes=True)
        try:
            skipper = TimeSkipper(cp.control_plane.engine, clock)
            client = TimeSkippingClient(cp.stub, skipper=skipper, namespace=namespace,
                                        data_converter=data_converter, codecs=codecs, identity=identity)
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
        identity: str | None = None,
        search_attributes: Iterable[SearchAttributeKey[Any]] | Mapping[str, Any] = (),
        **dev_server_options: Any,
    ) -> WorkflowEnvironment:
        """Start an environment on the real clock (timers take their real time).

        The control plane runs in this process on an in-memory database (Temporal's
        ``start_local`` downloads and starts a dev server instead; nothing is downloaded
        here).

        Args:
            namespace / data_converter / codecs / config: as :meth:`start_time_skipping`.
            identity: the client's identity.
            search_attributes: custom search attributes to register in the namespace:
                ``SearchAttributeKey``s (``[SearchAttributeKey.for_keyword_list("Tags")]``,
                as in Temporal) or a mapping of name to type name.
            **dev_server_options: Temporal's dev-server options (:data:`IGNORED_LOCAL_OPTIONS`:
                ``ip``, ``port``, ``ui``, ``ui_port``, ``dev_server_download_version``,
                ``dev_server_extra_args``, ``dev_server_database_filename``, ``tls``,
                ``runtime`` ...), accepted and ignored; empty ``interceptors`` /
                ``plugins`` are accepted too.

        Raises:
            TypeError: an unknown option, a Temporal option Spindle cannot honour
                (non-empty ``interceptors``, ``plugins``), or a ``search_attributes``
                entry that is not a ``SearchAttributeKey``.
            RPCError / ValueError: a search attribute name or type is not valid
                (nothing is left running).
        """
        _check_temporal_options("WorkflowEnvironment.start_local", dev_server_options, IGNORED_LOCAL_OPTIONS)
        attribute_types = _search_attribute_types(search_attributes)
        cfg = config or dataclasses.replace(ServerConfig(), num_shards=_TEST_SHARDS,
                                            default_retention_days=_TEST_RETENTION_DAYS)
        cp = await embedded.start(":memory:", config=cfg, namespace=namespace, dev_search_attributes=True)
        client = Client(cp.stub, namespace=namespace, data_converter=data_converter, codecs=codecs,
                        identity=identity)
        env = cls(cp, client, None)
        if attribute_types:
            try:
                await client.add_search_attributes(attribute_types)
            except BaseException:
                await env.shutdown()
                raise
        return env

    @classmethod
    def from_client(cls, client: Client) -> WorkflowEnvironment:
        """An environment around ``client``, connected to a server that runs elsewhere.

        Time is real: :attr:`supports_time_skipping` is false, :meth:`sleep` sleeps and
        :meth:`get_current_time` is the local clock. :meth:`shutdown` leaves ``client``
        open (whoever connected it closes it), as in Temporal.
        """
        return cls(None, client, None)

    # ------------------------------------------------------------------ lifecycle
    async def shutdown(self) -> None:
        """Stop the auto skipper, close the client and stop the control plane. Idempotent.

        Stop your workers first (leave their ``async with`` block) so that nothing polls
        a stopped control plane.
        """
        if self._closed:
            return
        self._closed = True
        if self._cp is None:
            return  # from_client: the client belongs to the caller
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
        """The in-process ``ControlPlane`` (for white-box tests).

        Raises:
            RuntimeError: the environment was made by :meth:`from_client` (no control plane here).
        """
        if self._cp is None:
            raise RuntimeError("this WorkflowEnvironment wraps a client (from_client): it has no in-process "
                               "control plane")
        return self._cp.control_plane

    def now(self) -> datetime.datetime:
        """The control plane's current time (virtual or real) as an aware UTC datetime.

        The local clock for an environment made by :meth:`from_client`.
        """
        if self._cp is None:
            return datetime.datetime.now(_UTC)
        return datetime.datetime.fromtimestamp(self._cp.clock.now_ms() / 1000, _UTC)

    async def get_current_time(self) -> datetime.datetime:
        """The environment's current time, awaitable as in Temporal (``await env.get_current_time()``).

        The same value as :meth:`now` (which is synchronous).
        """
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

