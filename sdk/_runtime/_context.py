"""Which runtime ``activity.metric_meter()`` and ``workflow.metric_meter()`` record into.

A :class:`~spindle.worker.Worker` whose client was connected with ``runtime=`` binds that runtime
to its (namespace, task queue); the meters of activities and workflows running there use it,
others use :meth:`Runtime.default`. Looked up only when ``metric_meter()`` is called.
"""

from __future__ import annotations

from typing import Any

from spindle._runtime._meter import MetricMeter

__all__ = ["activity_meter", "bind_runtime", "workflow_meter"]

_by_queue: dict[tuple[str, str], Any] = {}


def bind_runtime(namespace: str, task_queue: str, runtime: Any) -> None:
    """Record that the worker of ``task_queue`` in ``namespace`` uses ``runtime`` (the latest worker wins)."""
    _by_queue[(namespace, task_queue)] = runtime


def _runtime(namespace: str, task_queue: str) -> Any:
    runtime = _by_queue.get((namespace, task_queue))
    if runtime is None:
        from spindle.runtime import Runtime

        runtime = Runtime.default()
    return runtime


def activity_meter() -> MetricMeter:
    """The running activity's meter: attributes namespace, task_queue, activity_type."""
    from spindle._activity.context import info

    i = info()
    return _runtime(i.namespace, i.task_queue).metric_meter.with_additional_attributes(
        {"namespace": i.namespace, "task_queue": i.task_queue, "activity_type": i.activity_type})


def workflow_meter() -> MetricMeter:
    """The running workflow's meter: attributes namespace, task_queue, workflow_type; silent during replay."""
    from spindle._workflow.info_calls import info
    from spindle._workflow.unsafe import unsafe

    i = info()
    meter: MetricMeter = _runtime(i.namespace, i.task_queue).metric_meter
    gated = MetricMeter(meter._store, {"namespace": i.namespace, "task_queue": i.task_queue,
                                       "workflow_type": i.workflow_type}, lambda: not unsafe.is_replaying())
    return gated
