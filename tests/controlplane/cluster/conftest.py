"""Fixtures: the Spanner emulator (skipped when absent) for cluster tests."""

from __future__ import annotations

from spanner_emulator import spanner_instance_fixture

spanner_instance = spanner_instance_fixture()
