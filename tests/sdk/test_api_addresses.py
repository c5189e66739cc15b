"""One rule for "this address stays on this machine", shared by the server and the SDK."""

from __future__ import annotations

import pytest

from spindle.api._addresses import is_loopback_host


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"])
def test_loopback_spellings(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", "10.0.0.5", "127.example.com", "example.com", ""])
def test_everything_else_reaches_other_machines(host: str) -> None:
    """A name that merely starts with 127. is not an address (the cluster check once took it for one)."""
    assert not is_loopback_host(host)
