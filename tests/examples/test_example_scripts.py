"""The README's first command runs the order-fulfilment example; it must work as shipped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str, cwd: Path) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_order_fulfilment_script(tmp_path: Path) -> None:
    out = _run("order_fulfilment.py", cwd=tmp_path)
    assert "result: OrderResult(" in out and "status='shipped'" in out
    assert "spindle workflow show" in out  # where to look next
    assert (tmp_path / "spindle.db").exists()
    out = _run("order_fulfilment.py", "--out-of-stock", cwd=tmp_path)  # same database, second run
    assert "workflow failed" in out and "OrderCancelled" in out


def test_payment_script(tmp_path: Path) -> None:
    assert ": settled" in _run("payment.py", cwd=tmp_path)
    assert "refunded (denied)" in _run("payment.py", "--fraud", "deny", cwd=tmp_path)
