"""The history service's operations: one module per operation, each a set of functions taking a ``HistoryContext``.

Every operation follows one pattern: take the workflow id's lock (``ctx.cache.locked``),
load the run's state (``ctx.cache.load`` / ``resolve``), build a ``Txn`` (events are
folded into the state as they are added), ``await ctx.commit(txn)``, and let the
after-commit effects (dispatching tasks, arming timers, waking long polls) run.

- ``start``, ``signal``, ``cancel`` (cancel and terminate), ``query``, ``update``,
  ``describe`` (describe and read history): what clients ask of executions.
- ``poll``: a task a poller took is recorded as started (or put back).
- ``workflow_task``: dispatch, start, fail, time out; ``workflow_task_completed``: a
  completed workflow task, whose commands the package ``commands`` checks and writes
  (one handler per command type).
- ``activity_task``: start, heartbeat, outcomes, server-side retries, timeouts.
- ``child``: child starts, parent notification, external signals and cancels (the
  parts that reach another workflow go through ``ctx.cross_shard``).
- ``close``: closing a run (also on run timeout and the history-size limit), and what
  its close tells parent and children; ``retention``: deleting closed runs;
  ``user_timer``: a workflow's timer firing.
- ``reset``: a new run that continues from a point of an earlier run's history.
- ``schedule``: a schedule's timer firing; ``schedule_record``: its stored record and timer,
  written together; ``schedule_requests``: create, describe, update, patch, delete, list.
- ``_run``: helpers many operations share (building a run, scheduling a workflow task,
  timers, visibility records).
"""
