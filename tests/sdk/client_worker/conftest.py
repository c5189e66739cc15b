"""Fixtures for client/worker tests."""

from __future__ import annotations

import pytest

from _cw_fakes import FakeClient, FakeStub, RecordingInstance


@pytest.fixture
def fake_stub() -> FakeStub:
    RecordingInstance.created = []
    RecordingInstance.script = staticmethod(lambda inst, events: [])  # type: ignore[assignment]
    return FakeStub()


@pytest.fixture
def fake_client(fake_stub: FakeStub) -> FakeClient:
    return FakeClient(fake_stub)
