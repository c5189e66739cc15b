"""The generated copies (``scripts/gen_copies.py``) are what their sources generate.

A copy exists where a part of the repository must stand on its own and cannot read the
control plane's file in place (the Terraform module's Spanner schema; the Terraform
provider's copy of the resource rules, which runs in its own environment). Editing the
source without regenerating the copy fails here, with the command that fixes it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_generated_copies_are_current() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_copies.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, (f"generated copies are stale; run `python scripts/gen_copies.py` and commit the "
                                  f"result:\n{proc.stdout}{proc.stderr}")


def test_check_names_a_stale_copy(tmp_path: Path) -> None:
    """On a copy of the sources: an edited source makes its copy stale, named with the fix; the script fixes it."""
    for part in ("scripts/gen_copies.py", "controlplane/store/schema", "terraform/modules/gcp-spanner",
                 "controlplane/_resource_rules.py", "terraform/provider/spindle_tf/_resource_rules.py"):
        src, dst = REPO / part, tmp_path / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    script = [sys.executable, str(tmp_path / "scripts" / "gen_copies.py")]
    source = tmp_path / "controlplane" / "store" / "schema" / "spanner_v2.sql"
    source.write_text(source.read_text() + "\nCREATE INDEX Extra ON Executions(RunId);\n")
    rules = tmp_path / "controlplane" / "_resource_rules.py"
    rules.write_text(rules.read_text().replace("API_KEY_NAME_MAX_LENGTH = 200", "API_KEY_NAME_MAX_LENGTH = 300"))

    proc = subprocess.run([*script, "--check"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "stale generated copy: terraform/modules/gcp-spanner/schema/spanner_v2.sql (run python scripts/gen_copies.py)",
        "stale generated copy: terraform/provider/spindle_tf/_resource_rules.py (run python scripts/gen_copies.py)"]

    subprocess.run(script, check=True, capture_output=True, timeout=60)
    copy = (tmp_path / "terraform" / "modules" / "gcp-spanner" / "schema" / "spanner_v2.sql").read_text()
    assert copy.startswith("-- Generated from controlplane/store/schema/spanner_v2.sql by python scripts/gen_copies.py")
    assert copy.endswith(source.read_text())
    rules_copy = (tmp_path / "terraform" / "provider" / "spindle_tf" / "_resource_rules.py").read_text()
    assert rules_copy.startswith("# Generated from controlplane/_resource_rules.py by python scripts/gen_copies.py")
    assert "API_KEY_NAME_MAX_LENGTH = 300" in rules_copy
    assert subprocess.run([*script, "--check"], capture_output=True, timeout=60).returncode == 0
