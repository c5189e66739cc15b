"""``spindle dsl schedule FILE``: put a YAML workflow on a schedule (DESIGN.md section 8).

The schedule starts the document's workflow type with the compiled DAG and the inputs
(as ``spindle dsl run`` does), so each run keeps the DAG it was scheduled with; a worker
given the same document (``Worker(workflows=[spindle.dsl.load(FILE)])``) runs it.

Each setting comes from its flag, else from the document's ``schedule:`` block:
``--cron`` / ``--interval`` (together: the block's ``cron`` and ``interval`` are used only
when neither flag is given), ``--tz`` (``time_zone``), ``--input`` (``inputs``),
``--schedule-id`` (``id``, default the workflow's name), ``--overlap`` (``overlap``).
"""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from typing import Any

from spindle._cli import _codec_option, _common, _UserError
from spindle._cli_schedule import add_spec_arguments, checked_first, overlap_arg
from spindle.dsl import DslError, DslWorkflow, load

__all__ = ["add_schedule_verb"]


def add_schedule_verb(verbs: Any) -> argparse.ArgumentParser:
    """Add ``schedule`` to the ``dsl`` verbs."""
    p: argparse.ArgumentParser = verbs.add_parser(
        "schedule", help="run a YAML workflow on a schedule (cron or interval) kept by the control plane",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    p.set_defaults(func=checked_first(_prepare, _create))
    return p


def _prepare(args: argparse.Namespace) -> None:
    """Load the document and build the schedule (flags over the block); every mistake is a _UserError."""
    from spindle._schedule_types import (
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


async def _create(args: argparse.Namespace, client: Any) -> int:
    handle = await client.create_schedule(args.schedule_id, args.schedule, trigger_immediately=args.trigger_immediately)
    desc = await handle.describe()
    print(json.dumps({"schedule_id": handle.id, "workflow_type": args.workflow_type,
                      "next_action_times": [t.isoformat().replace("+00:00", "Z")
                                            for t in desc.info.next_action_times[:3]]}))
    return 0
