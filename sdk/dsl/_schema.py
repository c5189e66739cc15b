"""``schema.json``, the language's JSON Schema for editors, written from its definition (``_language.py``).

    .venv/bin/python -m spindle.dsl._schema --write    # after changing _language.py
    .venv/bin/python -m spindle.dsl._schema --check    # exit 1 if schema.json is not current

``tests/sdk/dsl/test_dsl_schema.py`` fails when the committed file is not what this writes.
"""

from __future__ import annotations

import argparse
import json
import sys

from pathlib import Path
from typing import Any

from spindle.dsl._language import DOCUMENT
from spindle.dsl._shapes import SchemaWriter

__all__ = ["SCHEMA_PATH", "document_schema", "main", "schema_text"]

#: Where the schema is (shipped with the package, next to this module).
SCHEMA_PATH = Path(__file__).with_name("schema.json")


def document_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a YAML workflow."""
    out = SchemaWriter()
    body = out.of(DOCUMENT)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://spindle.dev/schemas/dsl/v1.json",
        "title": "Spindle YAML workflow",
        "$comment": "Generated from sdk/dsl/_language.py by `python -m spindle.dsl._schema --write`: do not edit.",
        **body,
        "$defs": out.defs,
    }


def schema_text() -> str:
    """``schema.json``'s text: :func:`document_schema` as indented JSON."""
    return json.dumps(document_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write or check ``schema.json``."""
    parser = argparse.ArgumentParser(prog="python -m spindle.dsl._schema", description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help=f"write {SCHEMA_PATH}")
    action.add_argument("--check", action="store_true", help="exit 1 if the file is not current")
    args = parser.parse_args(argv)
    text = schema_text()
    if args.write:
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        return 0
    if SCHEMA_PATH.read_text(encoding="utf-8") != text:
        print(f"{SCHEMA_PATH} is not current: run python -m spindle.dsl._schema --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
