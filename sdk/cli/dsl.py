"""``spindle dsl validate|graph|run|schedule``: YAML workflows (``spindle.dsl``) on the command line.

``validate`` prints every error of each file (exit 1 if any); ``graph`` draws the step
graph; ``run`` starts a YAML workflow, runs its interpreter (and ``--activities``) in this
process and prints the result; ``schedule`` puts it on a schedule kept by the control plane.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid

from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import click

from spindle.cli import new_group
from spindle.cli._connection import Connection, api_key_option, client_options, tls_from_flags, tls_options
from spindle.cli._output import FAILED, OK, USAGE, fail, note, out, out_json
from spindle.cli._user_modules import UserModuleError, import_user_module
from spindle.cli.schedule import OVERLAP, spec_options

if TYPE_CHECKING:
    from spindle.client import Client, Schedule, ScheduleIntervalSpec, ScheduleOverlapPolicy
    from spindle.dsl import DslWorkflow

__all__ = ["PreparedSchedule", "group", "prepare_schedule"]

group = new_group("dsl", "YAML workflows: validate, draw and run them")


def _load_or_report(path: str) -> DslWorkflow | None:
    """The workflow of ``path``, or None after printing its errors (one per line)."""
    from spindle.dsl import DslError, load

    try:
        return load(path)
    except DslError as error:
        for problem in error.errors:
            note(str(problem))
    except OSError as error:
        note(f"{path}: {error.strerror or error}")
    return None


@group.command("validate", help="check YAML workflows and print every error")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
def validate(files: tuple[str, ...]) -> int:
    failed = False
    for path in files:
        workflow = _load_or_report(path)
        if workflow is None:
            failed = True
            continue
        out(f"{path}: ok ({workflow.name}, {len(workflow.dag.steps)} steps)")
    return FAILED if failed else OK


@group.command("graph", help="print the step graph as text, Graphviz DOT or SVG")
@click.argument("file", metavar="FILE")
@click.option("--format", "fmt", type=click.Choice(["text", "dot", "svg"]), default="text")
@click.option("--output", "-o", metavar="PATH", help="write here instead of standard output")
def graph(file: str, fmt: str, output: str | None) -> int:
    workflow = _load_or_report(file)
    if workflow is None:
        return FAILED
    text = {"text": workflow.to_text, "dot": workflow.to_dot, "svg": workflow.to_svg}[fmt]()
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        out(text, end="")
    return OK


def _activities(modules: Sequence[str]) -> list[Any]:
    """Every ``@activity.defn`` function found in ``modules`` (imported as ``python -m`` would).

    Raises:
        UserModuleError: a module cannot be imported.
    """
    from spindle.activity import ActivityDefinition

    found: list[Any] = []
    for name in modules:
        module = import_user_module(name, f"--activities {name!r}")
        for value in vars(module).values():
            if ActivityDefinition.from_callable(value) is not None and value not in found:
                found.append(value)
    return found


@group.command("run", help="start a YAML workflow, run its interpreter in this process and print the result")
@click.argument("file", metavar="FILE")
@click.option("--input", "inputs", default="{}", metavar="JSON", help="the inputs as a JSON object")
@click.option("--address", metavar="ADDR", help="control plane address (default 127.0.0.1:7233)")
@click.option("--embedded", metavar="PATH", help="use an in-process control plane on this SQLite file")
@click.option("--namespace", default="default")
@api_key_option
@tls_options
@click.option("--task-queue", metavar="Q", help="default: the document's task_queue")
@click.option("--workflow-id", metavar="ID", help="default: <name>-<random>")
@click.option("--activities", multiple=True, metavar="MODULE",
              help="import MODULE and run its @activity.defn functions in this process (repeatable)")
def run(file: str, inputs: str, address: str | None, embedded: str | None, namespace: str, api_key: str | None,
        task_queue: str | None, workflow_id: str | None, activities: tuple[str, ...], **tls_flags: Any) -> int:
    if address is not None and embedded is not None:
        raise click.UsageError("--address and --embedded exclude each other: give one (a server, or an in-process "
                               "control plane on a SQLite file)")
    from spindle.dsl import DslError

    workflow = _load_or_report(file)
    if workflow is None:
        return FAILED
    try:
        start_input = workflow.start_input(json.loads(inputs))
    except json.JSONDecodeError as error:
        note(f"--input is not valid JSON: {error}")
        return USAGE
    except DslError as error:
        note(str(error))
        return USAGE
    try:
        found = _activities(activities)
    except UserModuleError as error:
        note(f"spindle dsl run: error: {error}")
        return USAGE
    try:
        tls = None if embedded else tls_from_flags(tls_flags)
    except ValueError as error:
        note(f"spindle dsl run: error: {error}")
        return USAGE
    target = f"embedded:{embedded}" if embedded else (address or "127.0.0.1:7233")
    try:
        result = asyncio.run(_start_and_wait(target, namespace, api_key, tls, workflow, start_input, found,
                                             task_queue, workflow_id))
    except Exception as error:  # noqa: BLE001 - the CLI reports any failure and exits non-zero
        cause = getattr(error, "cause", None)
        note(f"workflow failed: {error}" + (f": {cause}" if cause else ""))
        return FAILED
    out_json(result, indent=2)
    return OK


async def _start_and_wait(address: str, namespace: str, api_key: str | None, tls: Any, workflow: DslWorkflow,
                          start_input: dict[str, Any], activities: list[Any], task_queue: str | None,
                          workflow_id: str | None) -> Any:
    from spindle.client import Client
    from spindle.worker import Worker

    client = await Client.connect(address, namespace=namespace, api_key=api_key, tls=tls)
    queue = task_queue or workflow.task_queue or "default"
    run_id = workflow_id or f"{workflow.name}-{uuid.uuid4().hex[:12]}"
    try:
        async with Worker(client, task_queue=queue, workflows=[workflow], activities=activities):
            handle = await client.start_workflow(workflow, start_input, id=run_id, task_queue=queue)
            return await handle.result()
    finally:
        await client.close()


# ---------------------------------------------------------------------- dsl schedule
_SCHEDULE_HELP = """Put a YAML workflow on a schedule (docs/SCHEDULES.md).

The schedule starts the document's workflow type with the compiled DAG and the inputs (as
`spindle dsl run` does), so each run keeps the DAG it was scheduled with; a worker given the
same document (Worker(workflows=[spindle.dsl.load(FILE)])) runs it.

Each setting comes from its flag, else from the document's `schedule:` block: --cron /
--interval (together: the block's cron and interval are used only when neither flag is
given), --tz (time_zone), --input (inputs), --schedule-id (id, default the workflow's name),
--overlap (overlap).
"""


@dataclasses.dataclass(frozen=True)
class PreparedSchedule:
    """What ``spindle dsl schedule`` creates: the schedule, its id and the workflow type it starts."""

    schedule_id: str
    workflow_type: str
    schedule: Schedule


def prepare_schedule(file: str, *, cron: Sequence[str] = (), interval: Sequence[ScheduleIntervalSpec] = (),
                     phase: timedelta | None = None, tz: str | None = None, input: str | None = None,
                     schedule_id: str | None = None, workflow_id: str | None = None, task_queue: str | None = None,
                     overlap: ScheduleOverlapPolicy | None = None, paused: bool = False) -> PreparedSchedule:
    """Load the document and build its schedule (each flag over the document's ``schedule:`` block).

    Raises:
        CliError: the document has errors, there is no schedule, inputs or task queue are missing
            or wrong (exit status 2; the message names the flag or the document's line).
    """
    from spindle.client import (
        Schedule,
        ScheduleActionStartWorkflow,
        ScheduleIntervalSpec,
        ScheduleOverlapPolicy,
        SchedulePolicy,
        ScheduleSpec,
        ScheduleState,
    )
    from spindle.dsl import DslError, load

    try:
        workflow = load(file)
    except DslError as error:
        fail("\n".join(str(e) for e in error.errors))
    except OSError as error:
        fail(f"{file}: {error.strerror or error}")
    block = workflow.schedule
    if cron or interval:
        crons, intervals = list(cron), list(interval)
        if phase is not None:
            if not intervals or any(i.offset for i in intervals):
                fail("--phase: applies to --interval values without a phase")
            intervals = [ScheduleIntervalSpec(every=i.every, offset=phase) for i in intervals]
    elif block is not None:
        crons = list(block.cron)
        intervals = [ScheduleIntervalSpec(every=timedelta(seconds=e), offset=timedelta(seconds=o))
                     for e, o in block.intervals]
    else:
        fail(f"{file}: no schedule: give --cron or --interval, or add a 'schedule:' block with 'cron' or 'interval' "
             "to the document")
    if input is not None:
        try:
            inputs = json.loads(input)
        except ValueError as e:
            fail(f"--input: not valid JSON ({e})")
        if not isinstance(inputs, dict):
            fail(f"--input: expected a JSON object of inputs, got {type(inputs).__name__}")
    else:
        inputs = dict(block.inputs or {}) if block is not None else {}
    try:
        workflow.check_inputs(inputs)
    except DslError as e:
        if input is not None:
            fail(f"--input: {e}")
        fail(f"{e} (give the inputs with --input or in the 'schedule:' block's 'inputs')")
    queue = task_queue or workflow.task_queue
    if not queue:
        fail(f"--task-queue: required ({file} has no 'task_queue')")
    sid = schedule_id or (block.id if block is not None and block.id else None) or workflow.name
    if overlap is None and block is not None and block.overlap:
        overlap = ScheduleOverlapPolicy[block.overlap.upper()]
    zone = tz or (block.time_zone if block is not None else None) or "UTC"
    jitter = timedelta(seconds=block.jitter) if block is not None and block.jitter else timedelta(0)
    return PreparedSchedule(schedule_id=sid, workflow_type=workflow.name, schedule=Schedule(
        action=ScheduleActionStartWorkflow(workflow, inputs, id=workflow_id or sid, task_queue=queue),
        spec=ScheduleSpec(cron_expressions=crons, intervals=intervals, time_zone_name=zone, jitter=jitter),
        policy=SchedulePolicy(overlap=overlap or ScheduleOverlapPolicy.SKIP),
        state=ScheduleState(paused=paused)))


@group.command("schedule", help=_SCHEDULE_HELP,
               short_help="run a YAML workflow on a schedule (cron or interval) kept by the control plane")
@click.argument("file", metavar="FILE")
@client_options()
@spec_options(tz_default=None)
@click.option("--input", default=None, metavar="JSON",
              help="the inputs of every run, a JSON object (default: the block's 'inputs', else {})")
@click.option("--schedule-id", "-s", default=None, help="default: the block's 'id', else the workflow's name")
@click.option("--workflow-id", "-w", default=None, help="prefix of each run's id (default: the schedule id)")
@click.option("--task-queue", "-t", default=None, help="default: the document's task_queue")
@click.option("--overlap", type=OVERLAP, default=None, metavar="POLICY",
              help="SKIP (default), BUFFER_ONE, BUFFER_ALL, CANCEL_OTHER, TERMINATE_OTHER or ALLOW_ALL")
@click.option("--paused", is_flag=True, help="create it paused")
@click.option("--trigger-immediately", is_flag=True, help="also start one run now")
def schedule(conn: Connection, file: str, trigger_immediately: bool, **flags: Any) -> int:
    prepared = prepare_schedule(file, **flags)  # every mistake exits 2 before connecting

    async def body(client: Client) -> int:
        handle = await client.create_schedule(prepared.schedule_id, prepared.schedule,
                                              trigger_immediately=trigger_immediately)
        desc = await handle.describe()
        out_json({"schedule_id": handle.id, "workflow_type": prepared.workflow_type,
                  "next_action_times": [t.isoformat().replace("+00:00", "Z") for t in desc.info.next_action_times[:3]]})
        return OK

    return conn.run(body)
