"""``spindle replay``: replay history JSON files through workflow code (for CI).

    spindle replay --workflows myapp.workflows:OrderWorkflow [--workflows ...] histories/*.json

Exit status: 0 when every history replays, 1 when at least one does not (each
failing file is listed with its error, e.g. the NonDeterminismError message), 2 for
usage errors (a ``--workflows`` value that cannot be imported, no files).
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys

from typing import Any

from spindle._user_modules import UserModuleError, import_user_module
from spindle._workflow.defn import WorkflowDefinition
from spindle.testing._replayer import Replayer

__all__ = ["register", "run_replay", "UsageError", "resolve_workflow"]


class UsageError(Exception):
    """A command-line value is wrong (exit status 2)."""


def register(sub: Any) -> None:
    """Add ``spindle replay`` to the ``spindle`` command's subparsers."""
    p = sub.add_parser(
        "replay",
        help="check that workflow code reproduces recorded histories (JSON files)",
        description="Replay each history JSON file (History.to_json() / `spindle workflow show --output json`) "
                    "through the given workflow definitions. Exit 0 if all replay, 1 if any fails, 2 on usage errors.",
    )
    p.add_argument("--workflows", "-w", action="append", required=True, metavar="MODULE:ATTR",
                   help="a workflow definition to register, e.g. myapp.workflows:OrderWorkflow (repeatable); "
                        "MODULE:ATTR may also name a list of definitions")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="history JSON files, or directories (every *.json below them)")
    p.set_defaults(func=_main)


def resolve_workflow(spec: str) -> list[Any]:
    """Import ``module:attr`` (``attr`` may be dotted) and return the definitions it names.

    Raises:
        UsageError: malformed spec, module or attribute missing, or not a workflow.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"--workflows {spec!r}: expected MODULE:ATTR, e.g. myapp.workflows:OrderWorkflow")
    try:
        obj: Any = import_user_module(module_name, f"--workflows {spec!r}")
    except UserModuleError as e:
        raise UsageError(str(e)) from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"--workflows {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    for item in items:
        try:
            WorkflowDefinition.from_target(item)
        except TypeError as e:
            raise UsageError(f"--workflows {spec!r}: {e}") from e
    return items


def _expand(paths: list[str]) -> list[pathlib.Path]:
    out: list[pathlib.Path] = []
    for raw in paths:
        p = pathlib.Path(raw)
        if p.is_dir():
            found = sorted(p.rglob("*.json"))
            if not found:
                raise UsageError(f"{raw}: directory contains no *.json files")
            out.extend(found)
        elif p.exists():
            out.append(p)
        else:
            raise UsageError(f"{raw}: no such file or directory")
    return out


def run_replay(workflow_specs: list[str], paths: list[str], *, out: Any = None, err: Any = None) -> int:
    """Replay ``paths`` with the workflows named by ``workflow_specs``; return the exit status.

    Writes one ``ok``/``FAILED`` line per file to ``out`` (default stdout) and usage
    errors to ``err`` (default stderr). Never raises for a failing history.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        workflows = [w for spec in workflow_specs for w in resolve_workflow(spec)]
        replayer = Replayer(workflows=workflows)
        files = _expand(paths)
    except (UsageError, ValueError) as e:
        print(f"spindle replay: error: {e}", file=err)
        return 2
    report = asyncio.run(replayer.replay_workflows(files))
    for r in report.results:
        if r.ok:
            print(f"ok      {r.source} ({r.workflow_type} {r.workflow_id})", file=out)
        else:
            print(f"FAILED  {r.source} ({r.workflow_type or '?'} {r.workflow_id or '?'}): "
                  f"{type(r.error).__name__}: {r.error}", file=out)
    n_fail = len(report.failures)
    print(f"{len(report.results) - n_fail} of {len(report.results)} histories replayed"
          + (f"; {n_fail} failed" if n_fail else ""), file=out)
    return 1 if n_fail else 0


def _main(args: argparse.Namespace) -> int:
    return run_replay(list(args.workflows), list(args.paths))
