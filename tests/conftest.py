"""Fixtures shared by the whole suite.

``spanner_instance``: ONE Cloud Spanner emulator for the session (tests take a fresh database each
with ``new_database_id()``). Defined here once: every module or folder that defined its own copy
started another emulator that idled until the end of the run, each costing CPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spanner_emulator import spanner_instance_fixture

spanner_instance = spanner_instance_fixture()


#: Tests that kill processes on a timer or assert on throughput under load: ``scripts/test.sh`` runs them
#: alone (``-m serial``) after the rest of the suite has run in parallel workers (``-m "not serial"``),
#: so that the other workers' load cannot starve them.
SERIAL = (
    "tests/fault/",
    "tests/controlplane/cluster/test_cluster_processes.py",
    "tests/controlplane/cluster/test_cluster_chaos.py",
    "tests/controlplane/archival/test_dev_server_archival.py",
    "tests/controlplane/test_cp_isolation.py",
    "tests/controlplane/test_cp_crash.py",
    "tests/controlplane/test_cp_restart.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the ``SERIAL`` tests ``serial``."""
    root = Path(str(config.rootpath))
    for item in items:
        where = Path(str(item.path)).relative_to(root).as_posix() if Path(str(item.path)).is_relative_to(root) else ""
        if where.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
