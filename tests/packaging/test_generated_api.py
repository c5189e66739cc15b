"""The committed protobuf/gRPC modules of the wire API (``sdk/api``) are what its ``.proto`` files
generate: ``scripts/gen_proto.sh --check`` regenerates them into a scratch folder and compares.

The check runs with the test environment's ``grpcio-tools``, which pyproject pins to the exact
version the committed modules were generated with.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gen_proto.sh"


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(root / "scripts" / "gen_proto.sh"), "--check"], capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable})


def test_the_committed_generated_modules_are_current() -> None:
    proc = _check(REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_check_notices_a_proto_change(tmp_path: Path) -> None:
    """A field added to a .proto without regenerating fails the check, naming the stale module."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "gen_proto.sh")
    shutil.copytree(REPO / "sdk" / "api", tmp_path / "sdk" / "api")
    proto = tmp_path / "sdk" / "api" / "messages.proto"
    text = proto.read_text()
    assert "message Payloads {" in text
    proto.write_text(text.replace("message Payloads {", "message Payloads {\n  string added_for_the_test = 99;", 1))
    proc = _check(tmp_path)
    assert proc.returncode == 1
    assert "stale generated module: sdk/api/messages_pb2.py (run scripts/gen_proto.sh)" in proc.stdout
