"""Fixtures: ``stores``, time-skipping environments on either store (see ``schedule_stores``).

``Stores`` lives in its own module: with several ``conftest.py`` files in one pytest run,
``from conftest import ...`` would find whichever conftest was imported first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from schedule_stores import Stores


@pytest.fixture(params=["sqlite", "spanner"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    """Time-skipping environments on a fresh database of each store."""
    s = Stores(str(request.param), tmp_path, request)
    try:
        yield s
    finally:
        await s.close_all()
