"""`spindle replay` exit codes, run as a subprocess on JSON files written from real runs."""

from __future__ import annotations

import os
import subprocess
import sys

from pathlib import Path

import pytest

from _histories import record_histories
from spindle_testing_wfs import OrderPatched, OrderV1

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def history_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("histories")
    for h in record_histories(OrderV1, ["c1", "c2"]):
        (d / f"{h.workflow_id}.json").write_text(h.to_json(indent=2))
    return d


@pytest.fixture(scope="module")
def patched_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    h = record_histories(OrderPatched, ["c3"])[0]
    path = tmp_path_factory.mktemp("patched") / "order-c3.json"
    path.write_text(h.to_json())
    return path


def _spindle(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "spindle.cli", "replay", *args], capture_output=True,
                          text=True, env=env, timeout=60, cwd=HERE)


def test_exit_0_when_every_history_replays(history_dir: Path, patched_file: Path) -> None:
    files = sorted(str(p) for p in history_dir.glob("*.json"))
    r = _spindle("--workflows", "spindle_testing_wfs:OrderPatched", *files, str(patched_file))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 of 3 histories replayed" in r.stdout
    r = _spindle("--workflows", "spindle_testing_wfs:OrderV1", str(history_dir))  # a directory works too
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 of 2 histories replayed" in r.stdout


def test_exit_1_lists_each_failing_file_with_the_error(history_dir: Path, patched_file: Path) -> None:
    files = sorted(str(p) for p in history_dir.glob("*.json"))
    r = _spindle("--workflows", "spindle_testing_wfs:OrderReordered", *files)
    assert r.returncode == 1, r.stdout + r.stderr
    failed = [line for line in r.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 2
    for f, line in zip(files, failed):
        assert f in line and "NonDeterminismError" in line and "history event 5" in line
    r = _spindle("--workflows", "spindle_testing_wfs:OrderV1", files[0], str(patched_file))
    assert r.returncode == 1
    assert "1 of 2 histories replayed; 1 failed" in r.stdout
    assert f"FAILED  {patched_file}" in r.stdout


@pytest.mark.parametrize("spec, message", [
    ("no_such_module_xyz:OrderV1", "cannot import module"),
    ("spindle_testing_wfs:Missing", "has no attribute"),
    ("spindle_testing_wfs:NOT_A_WORKFLOW", "not a workflow"),
    ("spindle_testing_wfs", "expected MODULE:ATTR"),
])
def test_exit_2_for_a_bad_workflows_value(history_dir: Path, spec: str, message: str) -> None:
    r = _spindle("--workflows", spec, str(history_dir))
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr


def test_exit_2_for_a_missing_file() -> None:
    r = _spindle("--workflows", "spindle_testing_wfs:OrderV1", "does/not/exist.json")
    assert r.returncode == 2
    assert "no such file" in r.stderr
