"""docs/grafana/spindle.json uses only metrics the server exposes, with their real labels, and shows each of them.

The names come from ``spindle.controlplane._metrics.ServerMetrics`` itself (its registry), not from a copy.
"""

from __future__ import annotations

import json
import re

from typing import Any

import pytest

from deploy_helpers import REPO
from prometheus_client import Counter, Gauge, Histogram, Summary

DASHBOARD = REPO / "docs" / "grafana" / "spindle.json"
#: PromQL words that are not metric names.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "and", "or", "unless"}
#: Labels the scraper adds to every series (Prometheus: instance, job; Kubernetes scrapers: pod, ...).
TARGET_LABELS = {"instance", "job", "pod", "container", "cluster", "location", "project_id"}
SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created"),
            "summary": ("", "_sum", "_count", "_created"), "gauge": ("",)}


def server_metrics() -> dict[str, tuple[str, set[str]]]:
    """Every series name ``ServerMetrics`` exposes -> (its family name, its label names)."""
    from spindle.controlplane._metrics import ServerMetrics

    m = ServerMetrics()
    # the gauges read at scrape time: give them one sample each so that their labels show
    m.backlog_source = lambda: [("default", "tq", 0, 3)]
    m.versioned_backlog_source = lambda: [("default", "tq", 0, "orders.1.0", 3)]
    m.shards_source = lambda: 2
    labels: dict[str, set[str]] = {}
    for value in vars(m).values():
        if isinstance(value, (Counter, Gauge, Histogram, Summary)):
            labels[value._name] = set(value._labelnames)
    names: dict[str, tuple[str, set[str]]] = {}
    for family in m.registry.collect():
        family_labels = labels.get(family.name, set())
        for sample in family.samples:
            family_labels |= set(sample.labels) - {"le", "quantile"}
        for suffix in SUFFIXES[family.type]:
            names[family.name + suffix] = (family.name, family_labels | ({"le"} if suffix == "_bucket" else set()))
    return names


def expressions(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and templating query."""
    out = []
    for panel in dashboard["panels"] + [p for row in dashboard["panels"] for p in row.get("panels", [])]:
        for target in panel.get("targets", []):
            out.append((f"panel {panel['title']!r} target {target['refId']}", target["expr"]))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            q = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            out.append((f"variable {var['name']}", q))
    return out


def metric_refs(expr: str) -> list[tuple[str, set[str]]]:
    """(metric name, label names used with it) in ``expr``: selectors' matchers and the ``by (...)`` of aggregations."""
    grouped = set()
    for m in re.finditer(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
        grouped |= {w.strip() for w in m.group(1).split(",") if w.strip()}
    label_values = re.findall(r"label_values\(\s*([a-zA-Z_:][\w:]*)\s*,\s*(\w+)\s*\)", expr)
    if label_values:
        return [(name, {label}) for name, label in label_values]
    stripped = re.sub(r"\b(?:by|without)\s*\([^)]*\)", " ", expr)  # grouping clauses (labels, read above)
    stripped = re.sub(r"\[[^\]]*\]", "", stripped)  # range selectors ([5m], [$__rate_interval])
    stripped = re.sub(r'"[^"]*"', '""', stripped)  # label values
    refs = []
    for m in re.finditer(r"(?<![\w$.])([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})?", stripped):
        name, matchers = m.group(1), m.group(2) or ""
        if name in KEYWORDS or (not matchers and stripped[m.end():].lstrip().startswith("(")):
            continue  # a function or aggregation
        if stripped[:m.start()].rstrip().endswith("{") or re.search(r"\{[^}]*$", stripped[:m.start()]):
            continue  # a label name inside a selector
        used = set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", matchers)) | grouped
        refs.append((name, used))
    return refs


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def test_every_expression_uses_exposed_metrics_and_their_labels(dashboard: dict[str, Any]) -> None:
    exposed = server_metrics()
    assert "spindle_rpc_requests_total" in exposed and "spindle_timer_lag_seconds_bucket" in exposed
    exprs = expressions(dashboard)
    assert len(exprs) >= 10
    for where, expr in exprs:
        refs = metric_refs(expr)
        assert refs, f"{where}: no metric in {expr!r}"
        for name, labels in refs:
            assert name in exposed, f"{where}: {name} is not a metric the server exposes ({expr!r})"
            unknown = labels - exposed[name][1] - TARGET_LABELS
            assert not unknown, f"{where}: {name} has no label(s) {sorted(unknown)} ({expr!r})"
        if "histogram_quantile" in expr:
            assert all(n.endswith("_bucket") for n, _ in refs) and re.search(r"\bby\s*\([^)]*\ble\b", expr), \
                f"{where}: histogram_quantile needs the _bucket series summed by le"
        if "rate(" in expr:
            assert all(exposed[n][0] + "_total" == n or n.endswith("_bucket") for n, _ in refs), \
                f"{where}: rate() of something that is not a counter"


def test_every_server_metric_has_a_panel(dashboard: dict[str, Any]) -> None:
    families = {family for family, _ in server_metrics().values()}
    used = {server_metrics()[n][0] for _, e in expressions(dashboard) for n, _ in metric_refs(e)}
    assert families - used == set(), f"metrics without a panel: {sorted(families - used)}"


def test_dashboard_is_importable_json(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    names = {v["name"] for v in dashboard["templating"]["list"]}
    for panel in dashboard["panels"]:
        uid = panel.get("datasource", {}).get("uid", "")
        if uid.startswith("$"):
            assert uid.strip("${}") in names, f"panel {panel['title']!r} uses an undefined variable {uid}"
        for target in panel.get("targets", []):
            for var in re.findall(r"\$(\w+)", target["expr"]):
                assert var in names or var.startswith("__"), f"{panel['title']}: undefined ${var}"


def test_the_checker_catches_an_unknown_metric_and_label() -> None:
    exposed = server_metrics()
    (name, labels), = metric_refs('sum by (method) (rate(spindle_rpc_request_total[5m]))')
    assert name not in exposed
    (name, labels), = metric_refs('sum by (tenant) (rate(spindle_rpc_requests_total{code="OK"}[5m]))')
    assert name in exposed and labels - exposed[name][1] == {"tenant"}
