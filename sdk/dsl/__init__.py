"""YAML DAG workflows that run on the same runtime as ``async def`` workflows.

    from spindle import dsl
    report = dsl.load("examples/reports/daily_sales.yaml")   # validates; DslError if not
    async with Worker(client, task_queue="analytics", workflows=[report], activities=[...]):
        result = await (await client.start_workflow(report, {"date": "2024-05-01"},
                                                    id="sales-2024-05-01",
                                                    task_queue="analytics")).result()

The language is described in ``sdk/dsl/README.md``; ``sdk/dsl/schema.json`` is its
JSON Schema, for editor completion. ``dsl.from_json(dag_json)`` rebuilds a
workflow from the compiled DAG an execution carries.
"""

from __future__ import annotations

import contextlib
import gc
import os

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from spindle.dsl._build import build_dag
from spindle.dsl._errors import STRING_SOURCE, DslError
from spindle.dsl._model import dag_from_json
from spindle.dsl._parser import parse_yaml
from spindle.dsl._validate import validate_dag
from spindle.dsl._workflow import DslWorkflow

__all__ = ["DslError", "DslWorkflow", "from_json", "load", "load_text"]

_SUFFIXES = (".yaml", ".yml")


def _is_path(source: str | os.PathLike[str]) -> bool:
    if isinstance(source, os.PathLike):
        return True
    if "\n" in source:
        return False
    return source.strip().endswith(_SUFFIXES) or os.path.isfile(source)


def load(path_or_text: str | os.PathLike[str]) -> DslWorkflow:
    """Parse and validate a YAML workflow from a file path or from YAML text.

    A ``Path``, or a one-line string that ends in ``.yaml``/``.yml`` or names an
    existing file, is read as a file; any other string is the document itself
    (errors then say ``<string>`` for the file).

    Raises:
        DslError: the document is invalid; ``str(error)`` reads
            ``FILE:LINE:COLUMN: step 'ID': what is wrong`` and ``error.errors``
            lists every problem found.
        OSError: the file cannot be read.
    """
    if _is_path(path_or_text):
        path = Path(path_or_text)
        return load_text(path.read_text(encoding="utf-8"), file=str(path_or_text))
    return load_text(str(path_or_text))


def load_text(text: str, *, file: str = STRING_SOURCE) -> DslWorkflow:
    """Parse and validate YAML ``text``; ``file`` is the name errors use.

    Raises:
        DslError: the document is invalid.
    """
    with _gc_paused():
        dag = build_dag(parse_yaml(text, file), file)
        validate_dag(dag)
    return DslWorkflow(dag)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a document is loaded.

    Loading allocates a node per YAML value and keeps them all (a tree: there
    are no cycles to collect), so on a big document the collector's repeated
    full passes over the growing heap cost about a third of the time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def from_json(dag_json: Mapping[str, Any] | str | bytes) -> DslWorkflow:
    """Rebuild a ``DslWorkflow`` from its compiled DAG (``DslWorkflow.dag_json``).

    This is the DAG an execution carries (in its input, or its first SideEffect
    marker), so tools can redraw, re-run or replay exactly what an execution
    ran, without the YAML file. ``dag_json`` is the dict or its JSON text. The
    DAG is validated again; ``from_json(wf.dag_json).dag_json == wf.dag_json``.

    Raises:
        ValueError: not a compiled DAG of a format this version understands, or
            malformed.
        DslError: the DAG does not validate (e.g. edited by hand).
    """
    if isinstance(dag_json, (str, bytes)):
        import json

        dag_json = json.loads(dag_json)
    try:
        dag = dag_from_json(dag_json)  # type: ignore[arg-type]
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"malformed compiled DAG: {type(error).__name__}: {error}") from None
    validate_dag(dag)
    return DslWorkflow(dag)
