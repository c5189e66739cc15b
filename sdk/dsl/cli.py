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
from datetime import timedelta
from typing import Any, TextIO

from spindle._cli import _codec_option, _common, _UserError
from spindle._cli_schedule import add_spec_arguments, checked_first, overlap_arg
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

    _add_schedule_verb(verbs)
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
    from spindle._activity.definition import ActivityDefinition

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
    from spindle.client import Client
    from spindle.worker import Worker

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


# ---------------------------------------------------------------------- dsl schedule
_SCHEDULE_HELP = """``spindle dsl schedule FILE`` puts a YAML workflow on a schedule (docs/SCHEDULES.md).

The schedule starts the document's workflow type with the compiled DAG and the inputs
(as ``spindle dsl run`` does), so each run keeps the DAG it was scheduled with; a worker
given the same document (``Worker(workflows=[spindle.dsl.load(FILE)])``) runs it.

Each setting comes from its flag, else from the document's ``schedule:`` block:
``--cron`` / ``--interval`` (together: the block's ``cron`` and ``interval`` are used only
when neither flag is given), ``--tz`` (``time_zone``), ``--input`` (``inputs``),
``--schedule-id`` (``id``, default the workflow's name), ``--overlap`` (``overlap``).
"""


def _add_schedule_verb(verbs: Any) -> argparse.ArgumentParser:
    """Add ``schedule`` to the ``dsl`` verbs (see :data:`_SCHEDULE_HELP`)."""
    p: argparse.ArgumentParser = verbs.add_parser(
        "schedule", help="run a YAML workflow on a schedule (cron or interval) kept by the control plane",
        description=_SCHEDULE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE")
    _common(p)
    _codec_option(p)
    add_spec_arguments(p, tz_default=None)
    p.add_argument("--input", default=None, metavar="JSON", help="the inputs of every run, a JSON object "
                                                                  "(default: the block's 'inputs', else {})")
    p.add_argument("--schedule-id", "-s", default=None, help="default: the block's 'id', else the workflow's name")
    p.add_argument("--workflow-id", "-w", default=None, help="prefix of each run's id (default: the schedule id)")
    p.add_argument("--task-queue", "-t", default=None, help="default: the document's task_queue")
    p.add_argument("--overlap", type=overlap_arg, default=None, metavar="POLICY",
                   help="SKIP (default), BUFFER_ONE, BUFFER_ALL, CANCEL_OTHER, TERMINATE_OTHER or ALLOW_ALL")
    p.add_argument("--paused", action="store_true", help="create it paused")
    p.add_argument("--trigger-immediately", action="store_true", help="also start one run now")
    p.set_defaults(func=checked_first(_prepare_schedule, _create_schedule))
    return p


def _prepare_schedule(args: argparse.Namespace) -> None:
    """Load the document and build the schedule (flags over the block); every mistake is a _UserError."""
    from spindle.client._schedule_types import (
        Schedule,
        ScheduleActionStartWorkflow,
        ScheduleIntervalSpec,
        ScheduleOverlapPolicy,
        SchedulePolicy,
        ScheduleSpec,
        ScheduleState,
    )

    try:
        workflow: DslWorkflow = load(args.file)
    except DslError as error:
        raise _UserError("\n".join(str(e) for e in error.errors)) from None
    except OSError as error:
        raise _UserError(f"{args.file}: {error.strerror or error}") from None
    block = workflow.schedule
    if args.cron or args.interval:
        crons, intervals = list(args.cron), list(args.interval)
        if args.phase is not None:
            if not intervals or any(i.offset for i in intervals):
                raise _UserError("--phase: applies to --interval values without a phase")
            intervals = [ScheduleIntervalSpec(every=i.every, offset=args.phase) for i in intervals]
    elif block is not None:
        crons = list(block.cron)
        intervals = [ScheduleIntervalSpec(every=timedelta(seconds=e), offset=timedelta(seconds=o))
                     for e, o in block.intervals]
    else:
        raise _UserError(f"{args.file}: no schedule: give --cron or --interval, or add a 'schedule:' block with "
                         "'cron' or 'interval' to the document")
    if args.input is not None:
        try:
            inputs = json.loads(args.input)
        except ValueError as e:
            raise _UserError(f"--input: not valid JSON ({e})") from None
        if not isinstance(inputs, dict):
            raise _UserError(f"--input: expected a JSON object of inputs, got {type(inputs).__name__}")
    else:
        inputs = dict(block.inputs or {}) if block is not None else {}
    try:
        workflow.check_inputs(inputs)
    except DslError as e:
        if args.input is not None:
            raise _UserError(f"--input: {e}") from None
        raise _UserError(f"{e} (give the inputs with --input or in the 'schedule:' block's 'inputs')") from None
    task_queue = args.task_queue or workflow.task_queue
    if not task_queue:
        raise _UserError(f"--task-queue: required ({args.file} has no 'task_queue')")
    schedule_id = args.schedule_id or (block.id if block is not None and block.id else None) or workflow.name
    overlap = args.overlap
    if overlap is None and block is not None and block.overlap:
        overlap = ScheduleOverlapPolicy[block.overlap.upper()]
    zone = args.tz or (block.time_zone if block is not None else None) or "UTC"
    jitter = timedelta(seconds=block.jitter) if block is not None and block.jitter else timedelta(0)
    args.schedule_id = schedule_id
    args.workflow_type = workflow.name
    args.schedule = Schedule(
        action=ScheduleActionStartWorkflow(workflow, inputs, id=args.workflow_id or schedule_id, task_queue=task_queue),
        spec=ScheduleSpec(cron_expressions=crons, intervals=intervals, time_zone_name=zone, jitter=jitter),
        policy=SchedulePolicy(overlap=overlap or ScheduleOverlapPolicy.SKIP),
        state=ScheduleState(paused=args.paused))


async def _create_schedule(args: argparse.Namespace, client: Any) -> int:
    handle = await client.create_schedule(args.schedule_id, args.schedule, trigger_immediately=args.trigger_immediately)
    desc = await handle.describe()
    print(json.dumps({"schedule_id": handle.id, "workflow_type": args.workflow_type,
                      "next_action_times": [t.isoformat().replace("+00:00", "Z")
                                            for t in desc.info.next_action_times[:3]]}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dsl`` verbs without the ``spindle`` console script."""
    parser = argparse.ArgumentParser(prog="spindle")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
