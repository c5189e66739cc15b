"""Testing tools: a time-skipping in-process environment, a replayer and an activity runner.

```python
from spindle.testing import WorkflowEnvironment, Replayer, ActivityEnvironment

async with await WorkflowEnvironment.start_time_skipping() as env:
    async with Worker(env.client, task_queue="q", workflows=[W], activities=[a]):
        await env.client.execute_workflow(W.run, id="w", task_queue="q")  # a 14-day timer takes ms
await Replayer(workflows=[W]).replay_workflow(history)   # raises NonDeterminismError
```

``Replayer`` is also ``spindle.worker.Replayer`` (temporalio's place for it); see there for
replaying a server's histories (``client.list_workflows(q).map_histories()``).

``WorkflowEnvironment.start_local()`` runs the same in-process control plane on the real
clock (it accepts Temporal's dev-server options and ignores them), and
``WorkflowEnvironment.from_client(client)`` wraps a client of a running server, so a
Temporal ``conftest.py`` ports by renaming the package.

The pytest plugin (``spindle.testing.pytest_plugin``, registered as entry point
``spindle``) provides the ``spindle_env`` and ``spindle_client`` fixtures.
"""

from spindle.exceptions import NonDeterminismError
from spindle.testing._activity_env import ActivityEnvironment, default_info
from spindle.testing._environment import WorkflowEnvironment
from spindle.testing._replayer import (
    Replayer,
    ReplayReport,
    ReplayResult,
    UnknownWorkflowTypeError,
    WorkflowReplayResult,
    WorkflowReplayResults,
    load_history,
)

__all__ = [
    "WorkflowEnvironment",
    "Replayer",
    "ReplayReport",
    "ReplayResult",
    "WorkflowReplayResult",
    "WorkflowReplayResults",
    "UnknownWorkflowTypeError",
    "ActivityEnvironment",
    "NonDeterminismError",
    "default_info",
    "load_history",
]
