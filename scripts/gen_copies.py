#!/usr/bin/env python3
"""Writes the files that are generated copies of a definition kept in the control plane.

Some parts of the repository must stand on their own and so cannot read the control
plane's files where they are; each gets a copy, written by this script, never edited:

- ``terraform/modules/gcp-spanner/schema/spanner_v<N>.sql``: the Spanner schema of
  ``controlplane/store/schema/spanner_v<N>.sql`` (what ``spindle admin setup-schema``
  applies), each with a header naming its source, and the module's ``ddl_files`` list in
  ``ddl.tf``, in version order. The module must work from its own folder (``terraform
  init`` copies only the module when it is used as a registry or archive source).
- ``terraform/provider/spindle_tf/_resource_rules.py``: the rules of the values an operator
  configures, ``controlplane/_resource_rules.py`` (namespace names, search attributes,
  retention, rates, API keys), with a header naming its source. The provider runs in its
  own virtual environment with its own protobuf and cannot import the control plane; the
  installer (``spindle terraform install-provider``) ships the copy with it.

    python scripts/gen_copies.py           # write every copy
    python scripts/gen_copies.py --check   # write nothing; exit 1 naming each stale copy

``tests/packaging/test_generated_copies.py`` runs the check. Needs Python only: it does
not import spindle.
"""

from __future__ import annotations

import re
import sys

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMMAND = "python scripts/gen_copies.py"

SCHEMA_SOURCE = REPO / "controlplane" / "store" / "schema"
SPANNER_MODULE = REPO / "terraform" / "modules" / "gcp-spanner"
RULES_SOURCE = REPO / "controlplane" / "_resource_rules.py"
RULES_COPY = REPO / "terraform" / "provider" / "spindle_tf" / "_resource_rules.py"
_SCHEMA_FILE = re.compile(r"^spanner_v(\d+)\.sql$")
_DDL_FILES = re.compile(r"(?m)^(?P<indent>[ \t]*)ddl_files = \[[^\]]*\]")


def _relative(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def schema_files() -> list[str]:
    """The control plane's schema files, in version order (``spanner_v10.sql`` after ``spanner_v9.sql``)."""
    found = [(int(m.group(1)), p.name) for p in SCHEMA_SOURCE.iterdir() if (m := _SCHEMA_FILE.match(p.name))]
    return [name for _, name in sorted(found)]


def schema_copy(name: str) -> str:
    """The module's copy of schema file ``name``: a header (a comment, which the DDL splitters drop), then the file."""
    header = (f"-- Generated from {_relative(SCHEMA_SOURCE / name)} by {COMMAND}: do not edit this copy;\n"
              "-- edit that file and run the script.\n")
    return header + (SCHEMA_SOURCE / name).read_text(encoding="utf-8")


def rules_copy() -> str:
    """The provider's copy of the resource rules: a header (a comment), then the module."""
    header = (f"# Generated from {_relative(RULES_SOURCE)} by {COMMAND}: do not edit this copy;\n"
              "# edit that file and run the script.\n")
    return header + RULES_SOURCE.read_text(encoding="utf-8")


def wanted() -> dict[Path, str | None]:
    """Every generated file and what it must hold (None: it must not exist)."""
    out: dict[Path, str | None] = {}
    names = schema_files()
    schema_dir = SPANNER_MODULE / "schema"
    for p in schema_dir.glob("*.sql"):
        out[p] = None  # a version the control plane no longer has
    for name in names:
        out[schema_dir / name] = schema_copy(name)
    ddl_tf = SPANNER_MODULE / "ddl.tf"
    text = ddl_tf.read_text(encoding="utf-8")
    listed = "ddl_files = [" + ", ".join(f'"{n}"' for n in names) + "]"
    new, n = _DDL_FILES.subn(lambda m: m.group("indent") + listed, text)
    if n != 1:
        raise SystemExit(f"{_relative(ddl_tf)}: expected one line 'ddl_files = [...]' to rewrite, found {n}")
    out[ddl_tf] = new
    out[RULES_COPY] = rules_copy()
    return out


def stale() -> dict[Path, str | None]:
    """The generated files whose content is not what it must be."""
    out = {}
    for path, content in wanted().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != content:
            out[path] = content
    return out


def main(argv: list[str]) -> int:
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        print(__doc__)
        return 2
    todo = stale()
    for path, content in sorted(todo.items()):
        if check:
            print(f"stale generated copy: {_relative(path)} (run {COMMAND})")
        elif content is None:
            path.unlink()
            print(f"removed {_relative(path)}")
        else:
            path.write_text(content, encoding="utf-8")
            print(f"wrote {_relative(path)}")
    return 1 if check and todo else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
