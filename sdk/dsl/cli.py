"""``spindle dsl validate|graph|run|schedule``: the DSL's command line.

``register(subparsers)`` adds the ``dsl`` command to an argparse parser; each verb
sets ``func`` to a handler that takes the parsed namespace and returns an exit
code. ``python -m spindle.dsl.cli ...`` runs the same verbs on their own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid

from collections.abc import Sequence
from typing import Any, TextIO

from spindle._cli_tls import add_tls_arguments, tls_from_args
from spindle._user_modules import UserModuleError, import_user_module
from spindle.dsl import DslError, DslWorkflow, load

__all__ = ["main", "register"]

_FORMATS = ("text", "dot", "svg")


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``dsl validate``, ``dsl graph``, ``dsl run`` and ``dsl schedule`` to ``subparsers``.

    ``subparsers`` is what ``ArgumentParser.add_subparsers()`` returned. Returns the
    ``dsl`` parser.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "dsl", help="YAML workflows: validate, draw and run them", description=__doc__
    )
    verbs = parser.add_subparsers(dest="dsl_command", metavar="{validate,graph,run,schedule}")
    verbs.required = True

    validate = verbs.add_parser("validate", help="check YAML workflows and print every error")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.set_defaults(func=_validate)

    graph = verbs.add_parser("graph", help="print the step graph as text, Graphviz DOT or SVG")
    graph.add_argument("file", metavar="FILE")
    graph.add_argument("--format", choices=_FORMATS, default="text")
    graph.add_argument("--output", "-o", metavar="PATH", help="write here instead of standard output")
    graph.set_defaults(func=_graph)

    run = verbs.add_parser(
        "run",
        help="start a YAML workflow, run its interpreter in this process and print the result",
    )
    run.add_argument("file", metavar="FILE")
    run.add_argument("--input", default="{}", metavar="JSON", help="the inputs as a JSON object")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--address", metavar="ADDR", help="control plane address (default 127.0.0.1:7233)")
    where.add_argument("--embedded", metavar="PATH", help="use an in-process control plane on this SQLite file")
    run.add_argument("--namespace", default="default")
    run.add_argument("--api-key", default=os.environ.get("SPINDLE_API_KEY") or None, metavar="KEY",
                     help="API key (spk_...; default: $SPINDLE_API_KEY)")
    add_tls_arguments(run)
    run.add_argument("--task-queue", metavar="Q", help="default: the document's task_queue")
    run.add_argument("--workflow-id", metavar="ID", help="default: <name>-<random>")
    run.add_argument(
        "--activities",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE and run its @activity.defn functions in this process (repeatable)",
    )
    run.set_defaults(func=_run)

    from spindle.dsl._schedule_cli import add_schedule_verb

    add_schedule_verb(verbs)
    return parser


def _validate(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    failed = False
    for path in args.files:
        try:
            workflow = load(path)
        except DslError as error:
            failed = True
            for problem in error.errors:
                print(problem, file=err)
            continue
        except OSError as error:
            failed = True
            print(f"{path}: {error.strerror or error}", file=err)
            continue
        print(f"{path}: ok ({workflow.name}, {len(workflow.dag.steps)} steps)", file=out)
    return 1 if failed else 0


def _graph(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    workflow = _load_or_report(args.file, err)
    if workflow is None:
        return 1
    text = {"text": workflow.to_text, "dot": workflow.to_dot, "svg": workflow.to_svg}[args.format]()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        out.write(text)
    return 0


def _load_or_report(path: str, err: TextIO) -> DslWorkflow | None:
    try:
        return load(path)
    except DslError as error:
        for problem in error.errors:
            print(problem, file=err)
    except OSError as error:
        print(f"{path}: {error.strerror or error}", file=err)
    return None


def _activities(modules: Sequence[str]) -> list[Any]:
    """Every ``@activity.defn`` function found in ``modules`` (imported as ``python -m`` would).

    Raises:
        UserModuleError: a module cannot be imported.
    """
    from spindle._activity import ActivityDefinition

    found: list[Any] = []
    for name in modules:
        module = import_user_module(name, f"--activities {name!r}")
        for value in vars(module).values():
            definition = getattr(value, "__spindle_activity_definition__", None)
            if isinstance(definition, ActivityDefinition) and value not in found:
                found.append(value)
    return found


def _run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    workflow = _load_or_report(args.file, err)
    if workflow is None:
        return 1
    try:
        inputs = json.loads(args.input)
        start_input = workflow.start_input(inputs)
    except json.JSONDecodeError as error:
        print(f"--input is not valid JSON: {error}", file=err)
        return 2
    except DslError as error:
        print(error, file=err)
        return 2
    try:
        activities = _activities(args.activities)
    except UserModuleError as error:
        print(f"spindle dsl run: error: {error}", file=err)
        return 2
    try:
        tls = None if args.embedded else tls_from_args(args)
    except ValueError as error:
        print(f"spindle dsl run: error: {error}", file=err)
        return 2
    try:
        result = asyncio.run(_start_and_wait(args, workflow, start_input, activities, tls))
    except Exception as error:  # noqa: BLE001 - the CLI reports any failure and exits non-zero
        cause = getattr(error, "cause", None)
        print(f"workflow failed: {error}" + (f": {cause}" if cause else ""), file=err)
        return 1
    json.dump(result, out, indent=2, default=str)
    out.write("\n")
    return 0


async def _start_and_wait(args: argparse.Namespace, workflow: DslWorkflow, start_input: dict[str, Any],
                          activities: list[Any], tls: Any = None) -> Any:
    from spindle import Client, Worker

    address = f"embedded:{args.embedded}" if args.embedded else (args.address or "127.0.0.1:7233")
    client = await Client.connect(address, namespace=args.namespace, api_key=getattr(args, "api_key", None), tls=tls)
    task_queue = args.task_queue or workflow.task_queue or "default"
    workflow_id = args.workflow_id or f"{workflow.name}-{uuid.uuid4().hex[:12]}"
    try:
        async with Worker(
            client, task_queue=task_queue, workflows=[workflow], activities=activities
        ):
            handle = await client.start_workflow(workflow, start_input, id=workflow_id, task_queue=task_queue)
            return await handle.result()
    finally:
        close = getattr(client, "close", None)
        if close is not None:
            maybe = close()
            if asyncio.iscoroutine(maybe):
                await maybe


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dsl`` verbs without the ``spindle`` console script."""
    parser = argparse.ArgumentParser(prog="spindle")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
