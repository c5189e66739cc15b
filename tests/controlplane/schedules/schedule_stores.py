"""Schedule tests' stores: a time-skipping environment on either store (SQLite file; Spanner on the emulator), reopenable.

``stores.open(start_time)`` starts a control plane on the test's database with a virtual clock
at ``start_time`` and returns a ``WorkflowEnvironment`` (time-skipping, as
``WorkflowEnvironment.start_time_skipping`` builds it, but on a store that outlives it): shut
it down and open another one later on the same database to simulate an outage.
"""

from __future__ import annotations

import dataclasses

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from spindle.controlplane import embedded
from spindle.controlplane.config import ServerConfig
from spindle.controlplane.namespaces import DEV_SEARCH_ATTRIBUTES
from spindle.controlplane.server import ControlPlane
from spindle.testing import WorkflowEnvironment
from spindle.testing._client import TimeSkippingClient
from spindle.testing._time_skipping import TimeSkipper


class Stores:
    """Opens time-skipping environments on one database of ``backend``."""

    def __init__(self, backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.backend = backend
        self._path = str(tmp_path / "sched.db")
        self._request = request
        self._db_id: str | None = None
        self._open: list[WorkflowEnvironment] = []
        if backend == "spanner":
            self._inst = request.getfixturevalue("spanner_instance")
            self._db_id = self._inst.new_database_id()

    def _store(self) -> Any:
        if self.backend == "sqlite":
            from spindle.controlplane.store.sqlite import SqliteStore

            return SqliteStore(self._path)
        from spindle.controlplane.store.spanner import SpannerStore

        return SpannerStore(self._inst.project, self._inst.instance_id, self._db_id, client=self._inst.client)

    async def open(self, start_time: datetime) -> WorkflowEnvironment:
        """A time-skipping environment on this test's database, its clock at ``start_time``."""
        clock = embedded.VirtualClock(int(start_time.timestamp() * 1000))
        cfg = dataclasses.replace(ServerConfig(), num_shards=2, default_retention_days=36_500.0)
        cp = ControlPlane(self._store(), cfg, clock, default_namespace="default",
                          default_search_attributes=DEV_SEARCH_ATTRIBUTES)
        await cp.start()
        plane = embedded.EmbeddedControlPlane(cp, None)
        skipper = TimeSkipper(cp.engine, clock)
        client = TimeSkippingClient(plane.stub, skipper=skipper, namespace="default")
        skipper.start()
        env = WorkflowEnvironment(plane, client, skipper)
        self._open.append(env)
        return env

    async def close_all(self) -> None:
        for env in self._open:
            await env.shutdown()
