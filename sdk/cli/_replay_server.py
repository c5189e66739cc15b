"""``spindle replay --query ...``: fetch the histories a visibility query selects from a server and replay them.

Checked before anything is read or written (exit status 2): a query together with files,
``--limit`` below 1, ``--save`` naming something that is not a directory (or under a file),
and then the query itself (the server's error, with the position). The histories are read
one page and one run at a time (``client.list_workflows(query, limit=...).map_histories()``)
and replayed as they arrive, with a progress bar on standard error; the per-run summary
(workflow id, run id, ``ok`` or the error: a non-determinism names the history event) and the
totals go to standard output. ``--save DIR`` writes each replayed history to
``DIR/<workflow id>__<run id>.json`` in the format the file mode reads (``DIR`` is created when
the first history is written). Exit status: 0 when every run replays, 1 when one does not.
"""

from __future__ import annotations

import pathlib
import re

from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from spindle.cli._output import FAILED, OK, CliError, note, out, warn

if TYPE_CHECKING:
    from spindle.cli._connection import Connection
    from spindle.client import Client, History
    from spindle.worker import WorkflowReplayResult, WorkflowReplayResults

__all__ = ["check_save_dir", "run_server_replay", "saved_name"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _usage(message: str) -> CliError:
    return CliError(message, prefix="spindle replay")


def check_save_dir(raw: str) -> pathlib.Path:
    """The ``--save`` directory, checked without creating it.

    Raises:
        CliError: the path exists and is not a directory, or a parent of it is not a directory (exit 2).
    """
    path = pathlib.Path(raw)
    if path.exists() and not path.is_dir():
        raise _usage(f"--save {raw}: exists and is not a directory")
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise _usage(f"--save {raw}: {parent} is not a directory")
            break
    return path


def saved_name(history: History) -> str:
    """The file name ``--save`` gives a history: ``<workflow id>__<run id>.json``, unsafe characters as ``_``."""
    return f"{_UNSAFE.sub('_', history.workflow_id)}__{_UNSAFE.sub('_', history.run_id)}.json"


def run_server_replay(conn: Connection, workflows: Sequence[Any], query: str, *, limit: int | None,
                      save: pathlib.Path | None) -> int:
    """Replay the runs ``query`` selects (at most ``limit``) on the server of ``conn``; return the exit status.

    Raises:
        CliError: a bad query (exit 2, nothing read or written); CommandFailed (exit 1) when the
            server cannot be reached or refuses a later call.
    """
    from spindle import exceptions as E
    from spindle.worker import Replayer

    try:
        replayer = Replayer(workflows=workflows, namespace=conn.namespace)
    except ValueError as e:  # two definitions of one workflow type
        raise _usage(str(e)) from None

    async def body(client: Client) -> int:
        try:  # the query is checked before anything is read or written
            await client.list_workflows_page(query, page_size=1)
        except E.RPCError as e:
            if e.status == "INVALID_ARGUMENT":
                raise _usage(f"--query {query!r}: {e.message}") from None
            raise
        try:
            total: int | None = await client.count_workflows(query)
        except E.RPCError:  # a query the listing takes and the count does not (ORDER BY): no total
            total = None
        if total is not None and limit is not None:
            total = min(total, limit)
        note(f"replaying {'the' if total is None else total} run(s) matching {query!r} in namespace "
             f"{client.namespace!r}")
        report = await _replay_with_progress(client, replayer, query, limit, save, total)
        return _summarise(report, save)

    return conn.run(body)


async def _replay_with_progress(client: Client, replayer: Any, query: str, limit: int | None,
                                save: pathlib.Path | None, total: int | None) -> WorkflowReplayResults:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    page_size = min(limit, 1000) if limit is not None else 1000
    histories = client.list_workflows(query, limit=limit, page_size=page_size).map_histories()
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=False) as progress:
        task = progress.add_task("replay", total=total)

        async def tracked() -> AsyncIterator[History]:
            # Asked for the next history only once the previous one was replayed: advance then.
            async for history in histories:
                if save is not None:
                    save.mkdir(parents=True, exist_ok=True)
                    (save / saved_name(history)).write_text(history.to_json(indent=2), encoding="utf-8")
                yield history
                progress.advance(task)

        report: WorkflowReplayResults = await replayer.replay_workflows(tracked(), raise_on_replay_failure=False)
    return report


def print_results(report: WorkflowReplayResults, label: Callable[[WorkflowReplayResult], str]) -> int:
    """One ``ok`` / ``FAILED`` line per history (``label`` names it) and the totals; the exit status."""
    for r in report.results:
        if r.ok:
            out(f"ok      {label(r)}")
        else:
            out(f"FAILED  {label(r)}: {type(r.replay_failure).__name__}: {r.replay_failure}")
    n_fail = len(report.failures)
    out(f"{len(report.results) - n_fail} of {len(report.results)} histories replayed"
        + (f"; {n_fail} failed" if n_fail else ""))
    return FAILED if n_fail else OK


def _summarise(report: WorkflowReplayResults, save: pathlib.Path | None) -> int:
    n = len(report.results)
    if not n:
        warn("the query matched no runs: nothing was replayed")
    code = print_results(report, lambda r: f"{r.workflow_id} {r.run_id} ({r.workflow_type or '?'})")
    if save is not None and n:
        note(f"saved {n} histor{'y' if n == 1 else 'ies'} to {save}")
    return code
