"""``examples/schedules/daily_report.py`` runs as shipped: in virtual time, and against start-dev."""

from __future__ import annotations

import re
import subprocess
import sys

from pathlib import Path

from spindle_procs import DevServer

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "schedules" / "daily_report.py"


def test_daily_report_in_virtual_time(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "after two days: active '', 2 actions" in out
    assert "ran   daily-report-2026-12-02T05:00:00Z" in out and "ran   daily-report-2026-12-03T05:00:00Z" in out
    assert "paused for a day: paused 'data warehouse migration', 2 actions" in out
    assert "after backfill and trigger: active 'migration done', 4 actions, 0 skipped" in out
    assert "ran   daily-report-2026-12-04T05:00:00Z" in out  # the backfilled morning
    assert "backfilled run's result: sales report eu for 2026-12-04" in out
    assert "listed: daily-report paused=False next=2026-12-05 05:00 UTC" in out


def test_daily_report_against_a_dev_server(tmp_path: Path) -> None:
    server = DevServer(tmp_path / "dev.db").start()
    try:
        proc = subprocess.run([sys.executable, str(SCRIPT), "--address", server.address, "--seconds", "12"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        found = re.search(r"after running: active '', (\d+) actions", proc.stdout)
        assert found and int(found.group(1)) >= 1, proc.stdout
        assert re.search(r"ran   daily-report-\d{4}-\d\d-\d\dT\d\d:\d\d:\d0Z", proc.stdout)
        listed = subprocess.run([str(Path(sys.executable).parent / "spindle"), "schedule", "list", "--address",
                                 server.address], capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0 and "daily-report" not in listed.stdout  # deleted without --keep
    finally:
        server.stop()
