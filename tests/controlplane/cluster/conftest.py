"""Fixtures: the Spanner emulator (skipped when absent) for cluster tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for spanner_emulator (no package __init__ files)

from spanner_emulator import spanner_instance_fixture  # noqa: E402

spanner_instance = spanner_instance_fixture()
