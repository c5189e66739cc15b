"""Worker metrics (``spindle_worker_*``, docs/OBSERVABILITY.md) through ``prometheus_client``.

:class:`WorkerMetrics` names a ``CollectorRegistry`` (prometheus_client's default one
unless given); every :class:`~spindle.worker.Worker` created with ``metrics=`` records into it.
The instruments are created once per registry, so any number of workers (and of
``WorkerMetrics`` objects naming the same registry) share them without a duplicate
registration error. Nothing is served: expose the registry the usual way, e.g.
``prometheus_client.start_http_server(9464, registry=registry)``.

Labels are bounded: ``namespace`` and ``task_queue`` are the worker's own (never its
sticky queue), ``kind`` is ``workflow`` or ``activity``, ``activity_type`` /
``workflow_type`` are the types registered on the worker (anything else is
``"other"``), ``cause`` is one of :data:`WORKFLOW_TASK_FAILURE_CAUSES`. No workflow or
run ids ever. Slots in use and the sticky cache size are read off the live workers when
the registry is collected (nothing is recorded per slot taken).
"""

from __future__ import annotations

import threading
import weakref

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["OTHER", "WORKFLOW_TASK_FAILURE_CAUSES", "WorkerMetrics"]

#: The type label of a workflow or activity type the worker does not register.
OTHER = "other"
#: The ``cause`` label values of ``spindle_worker_workflow_task_failures_total``.
WORKFLOW_TASK_FAILURE_CAUSES = ("non_determinism", "deadlock", "unregistered_type", "payload", "other")

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_POLL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 90.0)
_WQ = ("namespace", "task_queue")


class _Live(Collector):
    """Gauges read off the live workers at collection time: slots in use, sticky cache size."""

    def __init__(self) -> None:
        self.workers: weakref.WeakSet[_WorkerRecorder] = weakref.WeakSet()

    def collect(self) -> Iterable[GaugeMetricFamily]:
        slots = GaugeMetricFamily("spindle_worker_task_slots_used", "Tasks being processed (slots taken by a task, "
                                  "not by a poll waiting for one)",
                                  labels=[*_WQ, "kind"])
        cache = GaugeMetricFamily("spindle_worker_sticky_cache_size", "Workflow runs in the sticky cache",
                                  labels=list(_WQ))
        sums: dict[tuple[str, ...], float] = {}
        sizes: dict[tuple[str, ...], float] = {}
        for w in list(self.workers):
            for kind, used in w.slots_used():
                key: tuple[str, ...] = (w.namespace, w.task_queue, kind)
                sums[key] = sums.get(key, 0) + used
            size = w.cache_size()
            if size is not None:
                key = (w.namespace, w.task_queue)
                sizes[key] = sizes.get(key, 0) + size
        for key, v in sorted(sums.items()):
            slots.add_metric(list(key), v)
        for key, v in sorted(sizes.items()):
            cache.add_metric(list(key), v)
        yield slots
        yield cache


class _Instruments:
    """The ``spindle_worker_*`` instruments of one registry."""

    def __init__(self, r: CollectorRegistry) -> None:
        self.poll_latency = Histogram(
            "spindle_worker_poll_latency_seconds",
            "Time a long poll took, by kind and result (task, empty: the long poll timed out, error)",
            [*_WQ, "kind", "result"], buckets=_POLL_BUCKETS, registry=r)
        self.execution_latency = Histogram(
            "spindle_worker_task_execution_latency_seconds",
            "Time the worker spent on a task before answering it (workflow: decode and activation; "
            "activity: the attempt, interceptors included)", [*_WQ, "kind"], buckets=_LATENCY_BUCKETS, registry=r)
        self.replay_latency = Histogram(
            "spindle_worker_replay_latency_seconds",
            "Time to rebuild a run that was not in the sticky cache from its history (fetch and replay)",
            [*_WQ, "workflow_type"], buckets=_LATENCY_BUCKETS, registry=r)
        self.cache_hits = Counter("spindle_worker_sticky_cache_hits",
                                  "Workflow tasks resumed from a run in the sticky cache", list(_WQ), registry=r)
        self.cache_misses = Counter("spindle_worker_sticky_cache_misses",
                                    "Workflow tasks of a run past its first task that was not in the sticky cache "
                                    "(replayed from history)", list(_WQ), registry=r)
        self.activity_failures = Counter("spindle_worker_activity_failures",
                                         "Activity attempts that failed (raised, timed out in the worker, could not "
                                         "be decoded), by activity type", [*_WQ, "activity_type"], registry=r)
        self.workflow_task_failures = Counter(
            "spindle_worker_workflow_task_failures", "Workflow tasks the worker failed, by cause "
            "(non_determinism counted on its own)", [*_WQ, "workflow_type", "cause"], registry=r)
        self.live = _Live()
        r.register(self.live)


_by_registry: "weakref.WeakKeyDictionary[CollectorRegistry, _Instruments]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class WorkerMetrics:
    """Where workers record their ``spindle_worker_*`` metrics: pass it as ``Worker(..., metrics=...)``.

    Args:
        registry: the ``prometheus_client`` registry to record into (default:
            ``prometheus_client.REGISTRY``, what ``start_http_server(port)`` serves).

    One object may serve any number of workers; two objects naming the same registry share
    its instruments. The metrics, their labels and what they count are listed in
    docs/OBSERVABILITY.md. Recording never raises into the worker.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else REGISTRY
        with _lock:
            inst = _by_registry.get(self.registry)
            if inst is None:
                inst = _by_registry[self.registry] = _Instruments(self.registry)
        self._instruments = inst

    def _bind(self, namespace: str, task_queue: str, *, workflow_types: Iterable[str] = (),
              activity_types: Iterable[str] = ()) -> "_WorkerRecorder":
        """The recorder of one worker (labels bound once, children cached)."""
        rec = _WorkerRecorder(self._instruments, namespace, task_queue, set(workflow_types), set(activity_types))
        self._instruments.live.workers.add(rec)
        return rec


class _WorkerRecorder:
    """Records one worker's metrics: every label child is looked up once and kept."""

    def __init__(self, inst: _Instruments, namespace: str, task_queue: str, workflow_types: set[str],
                 activity_types: set[str]) -> None:
        self._i = inst
        self.namespace = namespace
        self.task_queue = task_queue
        self._wf_types = workflow_types
        self._act_types = activity_types
        self._children: dict[tuple[Any, ...], Any] = {}
        self._slot_sources: list[tuple[str, Callable[[], int]]] = []
        self._cache_source: Callable[[], int] | None = None
        wq = (namespace, task_queue)
        self._hits = inst.cache_hits.labels(*wq)
        self._misses = inst.cache_misses.labels(*wq)
        self._exec = {k: inst.execution_latency.labels(*wq, k) for k in ("workflow", "activity")}

    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), *labels)
        c = self._children.get(key)
        if c is None:
            c = self._children[key] = metric.labels(self.namespace, self.task_queue, *labels)
        return c

    # ---------------------------------------------------------------- live sources (read at collection time)
    def watch_slots(self, kind: str, used: Callable[[], int]) -> None:
        """Report ``used()`` as the ``kind`` slots in use."""
        self._slot_sources.append((kind, used))

    def watch_cache(self, size: Callable[[], int]) -> None:
        """Report ``size()`` as the sticky cache size."""
        self._cache_source = size

    def slots_used(self) -> list[tuple[str, int]]:
        return [(kind, used()) for kind, used in self._slot_sources]

    def cache_size(self) -> int | None:
        return self._cache_source() if self._cache_source is not None else None

    def close(self) -> None:
        """The worker stopped: its gauges are no longer reported."""
        self._i.live.workers.discard(self)

    # ---------------------------------------------------------------- events
    def poll(self, kind: str, seconds: float, result: str) -> None:
        """A ``kind`` long poll ended after ``seconds`` with ``result`` (task, empty, error)."""
        self._child(self._i.poll_latency, kind, result).observe(seconds)

    def executed(self, kind: str, seconds: float) -> None:
        """The worker spent ``seconds`` on one ``kind`` task."""
        self._exec[kind].observe(seconds)

    def cache_hit(self) -> None:
        self._hits.inc()

    def cache_miss(self) -> None:
        self._misses.inc()

    def replayed(self, workflow_type: str, seconds: float) -> None:
        """A run of ``workflow_type`` was rebuilt from history in ``seconds``."""
        self._child(self._i.replay_latency, self._wf(workflow_type)).observe(seconds)

    def activity_failed(self, activity_type: str) -> None:
        t = activity_type if activity_type in self._act_types else OTHER
        self._child(self._i.activity_failures, t).inc()

    def workflow_task_failed(self, workflow_type: str, cause: str) -> None:
        self._child(self._i.workflow_task_failures, self._wf(workflow_type), cause).inc()

    def _wf(self, workflow_type: str) -> str:
        return workflow_type if workflow_type in self._wf_types else OTHER
