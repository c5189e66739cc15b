"""The control plane's Prometheus metrics (docs/OBSERVABILITY.md), and the HTTP port that exposes them.

One :class:`ServerMetrics` per control plane, each with its own ``CollectorRegistry``, so
that several control planes in one process (tests, embedded instances) never share or
collide on a series. Recording is a method call on the hot path (a dict lookup and an
add); what can be read off the live state (backlog per task queue, shards owned) is
computed only when ``/metrics`` is scraped.

Labels are bounded: no workflow or run ids ever; a namespace's task queues beyond
``max_task_queue_labels`` distinct names (``ServerConfig.metrics_task_queue_labels_per_namespace``)
are reported as ``"other"``, so a worker polling invented queue names cannot blow up the
metrics store nor take the labels of another namespace; namespaces are the registered ones
(a bounded set an operator creates). Serving (and protecting) ``/metrics`` is
:mod:`spindle.controlplane._metrics_http`.
"""

from __future__ import annotations

import threading
import time

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from spindle.api import messages_pb2 as pb
from spindle.controlplane._metrics_http import MetricsAccess, serve_registry
from spindle.controlplane.matching import KIND_ACTIVITY, KIND_QUERY, KIND_WORKFLOW
from spindle.controlplane.store._model import ConditionFailedError, ShardOwnershipLostError, StoreUnavailableError

__all__ = ["CLOSE_STATUS", "OTHER", "PERSISTENCE_ERROR_KINDS", "TIMED_STORE_OPERATIONS", "ServerMetrics",
           "instrument_store", "parse_listen", "serve_metrics"]

#: The task_queue label of a namespace's task queues beyond the cap.
OTHER = "other"

#: The ``status`` label of ``spindle_workflow_closed_total`` for each close event.
CLOSE_STATUS = {
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: "completed",
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: "failed",
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: "timed_out",
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: "canceled",
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: "terminated",
    pb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: "continued_as_new",
}
_STARTED = pb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED
_KIND_NAMES = {KIND_WORKFLOW: "workflow", KIND_ACTIVITY: "activity", KIND_QUERY: "query"}

# Latencies of RPCs, persistence and task dispatch: 1 ms .. 60 s (long polls land in the top buckets).
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class _LiveState(Collector):
    """Gauges read off the live state at scrape time: backlog (size, oldest task's age) per task queue, shards owned."""

    def __init__(self, metrics: "ServerMetrics") -> None:
        self._m = metrics

    def collect(self) -> Iterable[GaugeMetricFamily]:
        m = self._m
        backlog = GaugeMetricFamily("spindle_task_queue_backlog",
                                    "Tasks waiting in a task queue for a poller (task queues beyond the cap: 'other')",
                                    labels=["namespace", "task_queue", "kind"])
        age = GaugeMetricFamily("spindle_task_queue_backlog_age_seconds",
                                "How long the oldest task waiting in a task queue has waited (0: none waits)",
                                labels=["namespace", "task_queue", "kind"])
        sums: dict[tuple[str, str, str], int] = {}
        ages: dict[tuple[str, str, str], float] = {}
        for row in (m.backlog_source() if m.backlog_source is not None else ()):
            ns, tq, kind, n = row[:4]
            oldest = float(row[4]) if len(row) > 4 else 0.0  # a source without ages reports 0
            key = (ns, m.task_queue_label(ns, tq), _KIND_NAMES.get(kind, str(kind)))
            sums[key] = sums.get(key, 0) + n
            ages[key] = max(ages.get(key, 0.0), oldest)
        for key, n in sorted(sums.items()):
            backlog.add_metric(list(key), n)
            age.add_metric(list(key), ages[key])
        yield backlog
        yield age
        by_version = GaugeMetricFamily(
            "spindle_task_queue_backlog_by_version",
            "Tasks waiting in a versioned task queue, by the worker build they wait for ('unversioned': no build); "
            "a build whose tasks wait while it has no workers shows here",
            labels=["namespace", "task_queue", "kind", "version"])
        vsums: dict[tuple[str, str, str, str], int] = {}
        for ns, tq, kind, version, n in (m.versioned_backlog_source() if m.versioned_backlog_source else ()):
            key4 = (ns, m.task_queue_label(ns, tq), _KIND_NAMES.get(kind, str(kind)), version or "unversioned")
            vsums[key4] = vsums.get(key4, 0) + n
        for key4, n in sorted(vsums.items()):
            by_version.add_metric(list(key4), n)
        yield by_version
        shards = GaugeMetricFamily("spindle_shards_owned", "History shards this process owns")
        shards.add_metric([], m.shards_source() if m.shards_source is not None else 0)
        yield shards


class ServerMetrics:
    """The metrics of one control plane, in their own registry (``self.registry``).

    The owner plugs in ``backlog_source`` (yields ``(namespace, task_queue, kind, count,
    oldest_age_seconds)``; the age may be left out) and ``shards_source`` (the number of owned shards); both are read
    at scrape time.
    """

    def __init__(self, *, max_task_queue_labels: int = 100) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        #: Distinct task-queue names of one namespace given their own label; the rest are ``"other"``.
        self.max_task_queue_labels = max_task_queue_labels
        self._task_queues: dict[str, set[str]] = {}
        self._tq_lock = threading.Lock()
        self.rpc_requests = Counter("spindle_rpc_requests", "gRPC requests served, by method and status code",
                                    ["method", "code"], registry=r)
        self.rpc_latency = Histogram("spindle_rpc_latency_seconds", "Time to serve a gRPC request, by method",
                                     ["method"], buckets=_LATENCY_BUCKETS, registry=r)
        self.workflow_started = Counter("spindle_workflow_started", "Workflow runs started (children and "
                                        "continue-as-new runs included)", ["namespace"], registry=r)
        self.workflow_closed = Counter("spindle_workflow_closed", "Workflow runs closed, by status",
                                       ["namespace", "status"], registry=r)
        self.schedule_to_start = Histogram("spindle_task_schedule_to_start_seconds",
                                           "Time a workflow or activity task waited between scheduled and started",
                                           ["namespace", "kind"], buckets=_LATENCY_BUCKETS, registry=r)
        self.timer_lag = Histogram("spindle_timer_lag_seconds", "How late user timers fired (fired - due)",
                                   buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
                                   registry=r)
        self.persistence_latency = Histogram("spindle_persistence_latency_seconds",
                                             "Time of a store operation, by operation", ["operation"],
                                             buckets=_LATENCY_BUCKETS, registry=r)
        # what an on-call engineer needs beyond the pinned names
        self.shard_changes = Counter("spindle_shard_ownership_changes", "History shards this process started "
                                     "serving (acquired) or stopped serving (released; lost: another member took "
                                     "it or fenced its writes, also counted as released)", ["change"], registry=r)
        self.lease_renewals = Counter("spindle_lease_renewals", "Shard lease renewal rounds (cluster members), by "
                                      "result", ["result"], registry=r)
        self.persistence_errors = Counter("spindle_persistence_errors", "Store operations that raised, by operation "
                                          "and kind (" + ", ".join(PERSISTENCE_ERROR_KINDS) + ")",
                                          ["operation", "kind"], registry=r)
        self.archival_lag = Histogram("spindle_archival_lag_seconds", "How long after a closed run's retention was "
                                      "due its history was archived (retries of failed writes included)",
                                      buckets=(0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0,
                                               86400.0), registry=r)
        self.archival_writes = Counter("spindle_archival_writes", "Archive writes of closed runs' histories, by "
                                       "result (a failed one is retried later)", ["namespace", "result"], registry=r)
        self.sticky_dispatch = Counter("spindle_sticky_dispatch", "Workflow tasks offered to the worker caching "
                                       "their run: started there (sticky) or moved to the normal queue after the "
                                       "sticky timeout (fallback); hit rate = sticky / (sticky + fallback)",
                                       ["namespace", "result"], registry=r)
        self.backlog_source: Callable[[], Iterable[tuple[Any, ...]]] | None = None
        #: Yields ``(namespace, task_queue, kind, version, count)`` for versioned queues (worker deployments).
        self.versioned_backlog_source: Callable[[], Iterable[tuple[str, str, int, str, int]]] | None = None
        self.shards_source: Callable[[], int] | None = None
        r.register(_LiveState(self))
        # bound label children, cached: .labels() costs a lock and a tuple build per call
        self._rpc_children: dict[tuple[str, str], Any] = {}
        self._rpc_latency_children: dict[str, Any] = {}
        self._ns_children: dict[tuple[Any, ...], Any] = {}

    # ------------------------------------------------------------------ recording (hot path)
    def task_queue_label(self, namespace: str, name: str) -> str:
        """The ``task_queue`` label of ``name`` in ``namespace``: the name itself for the first
        ``max_task_queue_labels`` distinct names seen in that namespace, else ``"other"``.

        The one place task-queue labels are made (every metric with a ``task_queue`` label uses it).
        """
        known = self._task_queues.get(namespace)
        if known is not None and name in known:
            return name
        with self._tq_lock:
            known = self._task_queues.setdefault(namespace, set())
            if name in known:
                return name
            if len(known) < self.max_task_queue_labels:
                known.add(name)
                return name
        return OTHER

    def rpc(self, method: str, code: str, seconds: float) -> None:
        """One RPC served: ``code`` is the gRPC status name ("OK", "NOT_FOUND", ...)."""
        c = self._rpc_children.get((method, code))
        if c is None:
            c = self._rpc_children[(method, code)] = self.rpc_requests.labels(method, code)
        c.inc()
        h = self._rpc_latency_children.get(method)
        if h is None:
            h = self._rpc_latency_children[method] = self.rpc_latency.labels(method)
        h.observe(seconds)

    def _child(self, metric: Any, *labels: str) -> Any:
        key = (id(metric), *labels)
        c = self._ns_children.get(key)
        if c is None:
            c = self._ns_children[key] = metric.labels(*labels)
        return c

    def events_written(self, namespace: str, events: Iterable[pb.HistoryEvent]) -> None:
        """Count the starts and closes among events just committed for a run of ``namespace``."""
        for e in events:
            t = e.event_type
            if t == _STARTED:
                self._child(self.workflow_started, namespace).inc()
            else:
                status = CLOSE_STATUS.get(t)
                if status is not None:
                    self._child(self.workflow_closed, namespace, status).inc()

    def task_started(self, namespace: str, kind: str, scheduled_ms: int, started_ms: int) -> None:
        """A workflow or activity task (``kind``) started ``started_ms - scheduled_ms`` after it was scheduled."""
        self._child(self.schedule_to_start, namespace, kind).observe(max(0, started_ms - scheduled_ms) / 1000)

    def timer_fired(self, due_ms: int, now_ms: int) -> None:
        """A user timer due at ``due_ms`` is being fired at ``now_ms``."""
        self.timer_lag.observe(max(0, now_ms - due_ms) / 1000)

    def persistence(self, operation: str, seconds: float) -> None:
        """One store operation took ``seconds``."""
        self._child(self.persistence_latency, operation).observe(seconds)

    def persistence_error(self, operation: str, error: BaseException) -> None:
        """A store operation raised ``error`` (counted by its kind, see PERSISTENCE_ERROR_KINDS)."""
        self._child(self.persistence_errors, operation, persistence_error_kind(error)).inc()

    def shard_ownership(self, change: str) -> None:
        """A shard was ``acquired``, ``released`` or ``lost`` by this process."""
        self._child(self.shard_changes, change).inc()

    def lease_renewal(self, ok: bool) -> None:
        """One lease renewal round ended (``ok``) or raised."""
        self._child(self.lease_renewals, "ok" if ok else "failed").inc()

    def archived(self, namespace: str, lag_seconds: float | None) -> None:
        """A closed run's history was archived ``lag_seconds`` after its retention was due; ``None``: the write failed."""
        if lag_seconds is None:
            self._child(self.archival_writes, namespace, "failed").inc()
            return
        self._child(self.archival_writes, namespace, "ok").inc()
        self.archival_lag.observe(max(0.0, lag_seconds))

    def sticky(self, namespace: str, hit: bool) -> None:
        """A workflow task offered on a sticky queue started there (``hit``) or fell back to the normal queue."""
        self._child(self.sticky_dispatch, namespace, "sticky" if hit else "fallback").inc()


def parse_listen(value: str, where: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) as (host, port); ValueError naming ``where`` otherwise."""
    host, sep, port_s = str(value).rpartition(":")
    if not sep or not host or not port_s.isdigit() or not 0 <= int(port_s) <= 65535:
        raise ValueError(f"{where}: {value!r} must be HOST:PORT (e.g. 127.0.0.1:9090), port 0-65535")
    return host.strip("[]"), int(port_s)


def serve_metrics(metrics: ServerMetrics, host: str, port: int, access: MetricsAccess | None = None
                  ) -> tuple[Any, int]:
    """Serve ``metrics`` at ``http(s)://host:port/metrics`` (a daemon thread), readable as ``access`` says
    (``spindle.controlplane._metrics_http``; None: anyone who reaches the port). Returns (server, bound port).

    Stop with ``server.shutdown()``.

    Raises:
        OSError: the address cannot be bound.
        MetricsAccessError: the token or TLS files of ``access`` do not load.
    """
    return serve_registry(metrics.registry, host, port, access)


#: The ``kind`` label of ``spindle_persistence_errors_total``.
PERSISTENCE_ERROR_KINDS = ("condition_failed", "shard_ownership_lost", "unavailable", "timeout", "other")


def persistence_error_kind(error: BaseException) -> str:
    """The bounded kind of a store error (by the store model's error classes)."""
    if isinstance(error, ConditionFailedError):
        return "condition_failed"
    if isinstance(error, ShardOwnershipLostError):
        return "shard_ownership_lost"
    if isinstance(error, StoreUnavailableError):
        return "unavailable"
    if isinstance(error, TimeoutError):
        return "timeout"
    return "other"


#: The store operations whose latency is recorded (the ``operation`` label).
TIMED_STORE_OPERATIONS = (
    "apply", "apply_many", "get_current", "load_execution", "get_execution_row", "read_events",
    "load_transfer_tasks", "load_timer_tasks", "load_backlog", "query_visibility", "count_visibility",
    "acquire_shard", "get_range_id", "list_running_executions",
)


def instrument_store(store: Any, metrics: ServerMetrics) -> None:
    """Time ``store``'s operations (TIMED_STORE_OPERATIONS) into ``metrics`` (wraps this instance's methods)."""
    for name in TIMED_STORE_OPERATIONS:
        fn = getattr(store, name, None)
        if fn is None or getattr(fn, "_spindle_timed", False):
            continue
        setattr(store, name, _timed(fn, metrics.persistence_latency.labels(name), metrics, name))


def _timed(fn: Callable[..., Any], hist: Any, metrics: ServerMetrics, name: str) -> Callable[..., Any]:
    perf = time.perf_counter

    async def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = perf()
        try:
            return await fn(*args, **kwargs)
        except Exception as e:
            metrics.persistence_error(name, e)
            raise
        finally:
            hist.observe(perf() - t0)

    timed._spindle_timed = True  # type: ignore[attr-defined]
    timed.__name__ = getattr(fn, "__name__", "timed")
    return timed
