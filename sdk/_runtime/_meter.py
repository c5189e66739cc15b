"""Custom metrics (``MetricMeter`` and its instruments, temporalio's names) and the Prometheus collector holding them.

A meter records into a :class:`MetricStore`: one per :class:`spindle.runtime.Runtime`, registered as
a ``prometheus_client`` collector in the runtime's registry, and mirrored to OpenTelemetry
instruments when the runtime exports over OTLP. ``gate`` (workflow meters: "not replaying") is
asked before each recording; a recording it refuses changes nothing.
"""

from __future__ import annotations

import datetime
import math
import threading

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client.metrics_core import Metric

__all__ = ["MetricAttributes", "MetricCounter", "MetricGauge", "MetricGaugeFloat", "MetricHistogram",
           "MetricHistogramFloat", "MetricHistogramTimedelta", "MetricMeter", "MetricStore"]

MetricAttributes = Mapping[str, str | int | float | bool]
_BUCKETS = (1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, math.inf)
_KINDS = {"counter": "counter", "histogram": "histogram", "gauge": "gauge"}


def _key(attrs: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v).lower() if isinstance(v, bool) else str(v)) for k, v in attrs.items()))


class MetricStore:
    """The values of every custom instrument of one runtime; a ``prometheus_client`` collector."""

    def __init__(self, *, prefix: str = "", global_tags: Mapping[str, str] | None = None,
                 otel_meter: Any = None) -> None:
        self.prefix = prefix
        self.global_tags = dict(global_tags or {})
        self._lock = threading.Lock()
        self._meta: dict[str, tuple[str, str, str]] = {}  # name -> (kind, description, unit)
        self._values: dict[str, dict[tuple[tuple[str, str], ...], Any]] = {}
        self._otel_meter = otel_meter
        self._otel: dict[str, Any] = {}

    def declare(self, name: str, kind: str, description: str | None, unit: str | None) -> str:
        """The full name of an instrument (prefix added). Raises ValueError: the name was declared as another kind."""
        if not name or not name.replace("_", "a").replace(":", "a").isalnum() or name[0].isdigit():
            raise ValueError(f"metric name {name!r}: use letters, digits and underscores, not starting with a digit")
        full = self.prefix + name
        with self._lock:
            known = self._meta.get(full)
            if known is not None and known[0] != kind:
                raise ValueError(f"metric {full!r} is already a {known[0]}, not a {kind}")
            if known is None:
                self._meta[full] = (kind, description or "", unit or "")
                self._values[full] = {}
                if self._otel_meter is not None:
                    make = {"counter": self._otel_meter.create_counter, "histogram": self._otel_meter.create_histogram,
                            "gauge": getattr(self._otel_meter, "create_gauge", None)}[kind]
                    if make is not None:
                        self._otel[full] = make(full, unit=unit or "", description=description or "")
        return full

    def record(self, full: str, kind: str, value: float, attrs: Mapping[str, Any]) -> None:
        merged = {**self.global_tags, **attrs}
        key = _key(merged)
        with self._lock:
            series = self._values[full]
            if kind == "counter":
                series[key] = series.get(key, 0) + value
            elif kind == "gauge":
                series[key] = value
            else:
                counts, total = series.get(key, ([0] * len(_BUCKETS), 0.0))
                counts = [c + (1 if value <= b else 0) for c, b in zip(counts, _BUCKETS, strict=True)]
                series[key] = (counts, total + value)
        otel = self._otel.get(full)
        if otel is not None:
            getattr(otel, {"counter": "add", "histogram": "record", "gauge": "set"}[kind])(value, dict(merged))

    def collect(self) -> Iterator[Metric]:
        """The Prometheus view (``prometheus_client`` calls this on every scrape)."""
        with self._lock:
            snapshot = {n: dict(v) for n, v in self._values.items()}
            meta = dict(self._meta)
        for full, series in snapshot.items():
            kind, description, unit = meta[full]
            metric = Metric(full, description or full, kind, unit="")
            for key, value in series.items():
                labels = dict(key)
                if kind == "counter":
                    metric.add_sample(full + "_total", labels, value)
                elif kind == "gauge":
                    metric.add_sample(full, labels, value)
                else:
                    counts, total = value
                    for count, bound in zip(counts, _BUCKETS, strict=True):
                        metric.add_sample(full + "_bucket", {**labels, "le": "+Inf" if bound == math.inf else str(bound)},
                                          count)
                    metric.add_sample(full + "_count", labels, counts[-1])
                    metric.add_sample(full + "_sum", labels, total)
            yield metric


class _Instrument:
    kind = ""

    def __init__(self, store: MetricStore, name: str, description: str | None, unit: str | None,
                 attrs: Mapping[str, Any], gate: Callable[[], bool] | None) -> None:
        self._store, self._attrs, self._gate = store, dict(attrs), gate
        self.name, self.description, self.unit = name, description, unit
        self._full = store.declare(name, self.kind, description, unit)

    def with_additional_attributes(self, additional_attributes: MetricAttributes) -> Any:
        """The same instrument with these attributes added to every recording."""
        return type(self)(self._store, self.name, self.description, self.unit,
                          {**self._attrs, **additional_attributes}, self._gate)

    def _record(self, value: float, additional_attributes: MetricAttributes | None) -> None:
        if self._gate is not None and not self._gate():
            return
        self._store.record(self._full, self.kind, value, {**self._attrs, **(additional_attributes or {})})


class MetricCounter(_Instrument):
    """A counter (``add`` only non-negative integers)."""

    kind = "counter"

    def add(self, value: int, additional_attributes: MetricAttributes | None = None) -> None:
        """Add ``value``. Raises ValueError: ``value`` is negative."""
        if value < 0:
            raise ValueError(f"counter {self.name!r}: add({value}) is negative")
        self._record(value, additional_attributes)


class MetricHistogram(_Instrument):
    """A histogram of integers."""

    kind = "histogram"

    def record(self, value: int, additional_attributes: MetricAttributes | None = None) -> None:
        """Record one ``value``."""
        self._record(value, additional_attributes)


class MetricHistogramFloat(MetricHistogram):
    """A histogram of floats."""

    def record(self, value: float, additional_attributes: MetricAttributes | None = None) -> None:
        """Record one ``value``."""
        self._record(value, additional_attributes)


class MetricHistogramTimedelta(_Instrument):
    """A histogram of durations, recorded in milliseconds."""

    kind = "histogram"

    def record(self, value: datetime.timedelta, additional_attributes: MetricAttributes | None = None) -> None:
        """Record one duration (as whole milliseconds)."""
        self._record(int(value.total_seconds() * 1000), additional_attributes)


class MetricGauge(_Instrument):
    """A gauge of integers (the last value set, per attribute set)."""

    kind = "gauge"

    def set(self, value: int, additional_attributes: MetricAttributes | None = None) -> None:
        """Set the gauge to ``value``."""
        self._record(value, additional_attributes)


class MetricGaugeFloat(MetricGauge):
    """A gauge of floats."""

    def set(self, value: float, additional_attributes: MetricAttributes | None = None) -> None:
        """Set the gauge to ``value``."""
        self._record(value, additional_attributes)


class MetricMeter:
    """Makes instruments (temporalio's ``MetricMeter``): ``create_counter``, ``create_histogram``, ``create_gauge``, ...

    Raises (every ``create_*``):
        ValueError: the name is not a metric name, or it was created before as another kind.
    """

    def __init__(self, store: MetricStore, attrs: Mapping[str, Any] | None = None,
                 gate: Callable[[], bool] | None = None) -> None:
        self._store, self._attrs, self._gate = store, dict(attrs or {}), gate

    def _make(self, cls: type[Any], name: str, description: str | None, unit: str | None) -> Any:
        return cls(self._store, name, description, unit, self._attrs, self._gate)

    def create_counter(self, name: str, description: str | None = None, unit: str | None = None) -> MetricCounter:
        """A counter."""
        return self._make(MetricCounter, name, description, unit)

    def create_histogram(self, name: str, description: str | None = None, unit: str | None = None) -> MetricHistogram:
        """A histogram of integers."""
        return self._make(MetricHistogram, name, description, unit)

    def create_histogram_float(self, name: str, description: str | None = None,
                               unit: str | None = None) -> MetricHistogramFloat:
        """A histogram of floats."""
        return self._make(MetricHistogramFloat, name, description, unit)

    def create_histogram_timedelta(self, name: str, description: str | None = None,
                                   unit: str | None = None) -> MetricHistogramTimedelta:
        """A histogram of durations (milliseconds)."""
        return self._make(MetricHistogramTimedelta, name, description, unit)

    def create_gauge(self, name: str, description: str | None = None, unit: str | None = None) -> MetricGauge:
        """A gauge of integers."""
        return self._make(MetricGauge, name, description, unit)

    def create_gauge_float(self, name: str, description: str | None = None, unit: str | None = None) -> MetricGaugeFloat:
        """A gauge of floats."""
        return self._make(MetricGaugeFloat, name, description, unit)

    def with_additional_attributes(self, additional_attributes: MetricAttributes) -> MetricMeter:
        """A meter whose instruments add these attributes to every recording."""
        return MetricMeter(self._store, {**self._attrs, **additional_attributes}, self._gate)
