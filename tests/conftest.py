"""Fixtures shared by the whole suite.

``spanner_instance``: ONE Cloud Spanner emulator for the session (tests take a fresh database each
with ``new_database_id()``). Defined here once: every module or folder that defined its own copy
started another emulator that idled until the end of the run, each costing CPU.
"""

from __future__ import annotations

from spanner_emulator import spanner_instance_fixture

spanner_instance = spanner_instance_fixture()
