"""``temporalio.runtime``'s names: a :class:`Runtime` holds a process's telemetry settings and custom metrics.

Spindle has no core library to configure, so a runtime is small: it owns a ``prometheus_client``
registry (:attr:`Runtime.prometheus_registry`) holding

- the custom metrics made with :attr:`Runtime.metric_meter`, ``activity.metric_meter()`` and
  ``workflow.metric_meter()`` (the latter records nothing during replay), and
- the ``spindle_worker_*`` metrics of every :class:`~spindle.worker.Worker` created with a client
  connected with ``Client.connect(..., runtime=rt)`` when ``rt`` has metrics configured
  (docs/OBSERVABILITY.md lists them, with the temporalio metric each corresponds to).

``TelemetryConfig(metrics=PrometheusConfig(bind_address="host:port"))`` serves that registry at
``http://host:port/metrics`` from the moment the runtime is made. ``OpenTelemetryConfig(url=...)``
exports the custom metrics over OTLP/gRPC with the OpenTelemetry SDK (``opentelemetry-sdk`` and
``opentelemetry-exporter-otlp-proto-grpc`` must be installed; the worker metrics stay in the
Prometheus registry). ``LoggingConfig`` is accepted: Spindle logs through Python's ``logging``.
"""

from __future__ import annotations

import dataclasses
import datetime
import threading

from collections.abc import Mapping
from typing import Any, ClassVar

import prometheus_client

from spindle._runtime._meter import (
    MetricAttributes,
    MetricCounter,
    MetricGauge,
    MetricGaugeFloat,
    MetricHistogram,
    MetricHistogramFloat,
    MetricHistogramTimedelta,
    MetricMeter,
    MetricStore,
)

__all__ = ["LoggingConfig", "MetricAttributes", "MetricCounter", "MetricGauge", "MetricGaugeFloat", "MetricHistogram",
           "MetricHistogramFloat", "MetricHistogramTimedelta", "MetricMeter", "OpenTelemetryConfig",
           "PrometheusConfig", "Runtime", "TelemetryConfig", "TelemetryFilter"]


@dataclasses.dataclass(frozen=True)
class TelemetryFilter:
    """Log levels, as temporalio's (``formatted()`` gives its ``"temporal_sdk_core=WARN,..."`` form)."""

    core_level: str
    other_level: str

    def formatted(self) -> str:
        """The filter as one string."""
        return f"{self.other_level},spindle={self.core_level}"


@dataclasses.dataclass(frozen=True)
class LoggingConfig:
    """Accepted for temporalio code; Spindle logs through Python's ``logging`` (configure that instead)."""

    filter: TelemetryFilter | str
    forwarding: Any = None

    default: ClassVar[LoggingConfig]


LoggingConfig.default = LoggingConfig(filter=TelemetryFilter(core_level="WARN", other_level="ERROR"))


@dataclasses.dataclass(frozen=True)
class PrometheusConfig:
    """Serve the runtime's metrics at ``http://bind_address/metrics`` (``"host:port"``; port 0 picks one)."""

    bind_address: str
    counters_total_suffix: bool = False
    unit_suffix: bool = False
    durations_as_seconds: bool = False
    histogram_bucket_overrides: Mapping[str, list[float]] | None = None


@dataclasses.dataclass(frozen=True)
class OpenTelemetryConfig:
    """Export the runtime's custom metrics over OTLP/gRPC to ``url`` (e.g. ``http://localhost:4317``)."""

    url: str
    headers: Mapping[str, str] | None = None
    metric_periodicity: datetime.timedelta | None = None
    durations_as_seconds: bool = False
    http: bool = False


@dataclasses.dataclass(frozen=True)
class TelemetryConfig:
    """What a :class:`Runtime` records and where: ``metrics`` (None: metrics stay in the registry, unserved)."""

    logging: LoggingConfig | None = LoggingConfig.default
    metrics: PrometheusConfig | OpenTelemetryConfig | None = None
    global_tags: Mapping[str, str] = dataclasses.field(default_factory=dict)
    attach_service_name: bool = True
    metric_prefix: str | None = None


_default: Runtime | None = None
_default_lock = threading.Lock()


class Runtime:
    """A process's telemetry (see the module docstring). Make one per process and pass it to ``Client.connect``.

    Raises:
        ValueError: ``PrometheusConfig.bind_address`` is not ``host:port``.
        OSError: the Prometheus address cannot be bound.
        ImportError: ``OpenTelemetryConfig`` without the OpenTelemetry SDK and its OTLP exporter installed.
    """

    def __init__(self, *, telemetry: TelemetryConfig, worker_heartbeat_interval: datetime.timedelta | None = None) -> None:
        del worker_heartbeat_interval  # Spindle workers have no separate heartbeat to the server
        self.telemetry = telemetry
        #: The registry holding this runtime's custom metrics and its workers' metrics.
        self.prometheus_registry = prometheus_client.CollectorRegistry(auto_describe=False)
        metrics = telemetry.metrics
        otel_meter = _otlp_meter(metrics) if isinstance(metrics, OpenTelemetryConfig) else None
        self._store = MetricStore(prefix=telemetry.metric_prefix or "", global_tags=telemetry.global_tags,
                                  otel_meter=otel_meter)
        self.prometheus_registry.register(self._store)
        self._server: Any = None
        #: The address /metrics is served on (``host:port``, the real port when 0 was asked), or None.
        self.prometheus_address: str | None = None
        if isinstance(metrics, PrometheusConfig):
            host, sep, port = metrics.bind_address.rpartition(":")
            if not sep or not port.isdigit():
                raise ValueError(f"PrometheusConfig(bind_address={metrics.bind_address!r}): expected host:port")
            served = prometheus_client.start_http_server(int(port), addr=host or "0.0.0.0",
                                                         registry=self.prometheus_registry)
            self._server = served[0] if isinstance(served, tuple) else None
            real_port = self._server.server_port if self._server is not None else int(port)
            self.prometheus_address = f"{host or '0.0.0.0'}:{real_port}"

    @property
    def metric_meter(self) -> MetricMeter:
        """A meter recording into this runtime (no default attributes)."""
        return MetricMeter(self._store)

    @property
    def records_worker_metrics(self) -> bool:
        """Whether workers of a client with this runtime record their metrics into it (metrics are configured)."""
        return self.telemetry.metrics is not None

    def close(self) -> None:
        """Stop serving /metrics (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @staticmethod
    def default() -> Runtime:
        """The process's runtime: the one :meth:`set_default` set, else one made now with no metrics served."""
        global _default
        with _default_lock:
            if _default is None:
                _default = Runtime(telemetry=TelemetryConfig())
            return _default

    @staticmethod
    def set_default(runtime: Runtime, *, error_if_already_set: bool = True) -> None:
        """Make ``runtime`` the process's default.

        Raises:
            RuntimeError: a default was already set or made and ``error_if_already_set`` is true.
        """
        global _default
        with _default_lock:
            if _default is not None and error_if_already_set:
                raise RuntimeError("Runtime default already set (pass error_if_already_set=False to replace it)")
            _default = runtime


def _otlp_meter(config: OpenTelemetryConfig) -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    except ImportError as e:
        raise ImportError(f"OpenTelemetryConfig(url={config.url!r}) needs the OpenTelemetry SDK and its OTLP exporter: "
                          f"pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-grpc ({e})") from None
    period = config.metric_periodicity or datetime.timedelta(seconds=1)
    exporter = OTLPMetricExporter(endpoint=config.url, headers=dict(config.headers or {}))
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=period.total_seconds() * 1000)
    return MeterProvider(metric_readers=[reader]).get_meter("spindle")
