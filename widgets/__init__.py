"""Notebook widgets for Spindle: see what a workflow did, and what a YAML DAG is doing.

- :class:`HistoryGraph` — a run's history as a causal graph (activities with
  their attempts, timers, signals, updates, markers, child workflows), a
  timeline tab and a detail panel; follows a running execution live
  (``handle.watch_history()``: the server long-polls, nothing is polled).
- :class:`ExecutionBrowser` — filter executions with the list-filter language,
  status counts (``client.count_workflows_by``), paging with page tokens
  (``client.list_workflows_page``); open any row as a ``HistoryGraph``.
- :class:`ScheduleView` — a schedule's state, when it acts, its recent actions
  (with the runs they started) and its next action times
  (``ExecutionBrowser(client, scheduled_by=id)`` lists those runs).
- :class:`DagView` — a YAML DAG (``spindle.dsl.load``, or the DAG an execution
  carries, via ``spindle.dsl.from_json``) as a graph, each step coloured by its
  state in an execution (exact, from the interpreter's ``DslStep`` markers).

Each widget has ``to_svg()`` and ``to_html(path)`` (a page that renders offline).
In a notebook, connect the client on the kernel's loop (``client = await
Client.connect(...)``); the widgets schedule their SDK calls there and never
block it. In plain Python, create the client on ``spindle.widgets.background()``'s loop.
"""

from __future__ import annotations

from spindle.widgets._background import BackgroundEventLoop, background
from spindle.widgets._browser import ExecutionBrowser
from spindle.widgets._dag_view import DagView
from spindle.widgets._history_graph import HistoryGraph
from spindle.widgets._schedule_view import ScheduleView

__all__ = ["BackgroundEventLoop", "DagView", "ExecutionBrowser", "HistoryGraph", "ScheduleView", "background"]
