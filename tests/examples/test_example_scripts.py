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



def test_order_fulfilment_against_a_server_that_requires_api_keys(tmp_path: Path) -> None:
    """``start-dev --auth``: the example runs with the admin key it printed, and is refused without a key."""
    import os

    from spindle_procs import AuthDevServer

    with AuthDevServer(tmp_path / "auth.db") as server:
        out = _run("order_fulfilment.py", "--address", server.address, "--api-key", server.key, cwd=tmp_path)
        assert "result: OrderResult(" in out and "status='shipped'" in out
        refused = subprocess.run([sys.executable, str(ROOT / "examples" / "order_fulfilment.py"), "--address",
                                  server.address], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                                 env={k: v for k, v in os.environ.items() if k != "SPINDLE_API_KEY"})
        assert refused.returncode != 0 and "UNAUTHENTICATED" in refused.stderr + refused.stdout


def test_reset_example_fixes_a_bad_deploy(tmp_path: Path) -> None:
    """examples/reset/fix_bad_deploy.py: release 1 fails every invoice after charging; a batch reset with
    release 2 completes them all without charging again (docs/RESET.md)."""
    out = _run("reset/fix_bad_deploy.py", cwd=tmp_path)
    assert out.count(": failed: bug in release 1") == 3, out
    assert "reset: 3 matched, 3 done, 0 skipped, 0 failed" in out, out
    assert out.count(": receipt for ch_invoice-") == 3, out
    assert "charges made: 3 for 3 invoices" in out, out
