"""Activities of the daily sales report (``examples/reports/daily_sales.yaml``).

The data is made up but deterministic: the same date always gives the same rows,
so the example's output can be checked. ``publish_report`` writes the report as
JSON under ``$SPINDLE_REPORT_DIR`` (default ``./reports``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

from collections.abc import Callable
from pathlib import Path
from typing import Any

from spindle import activity

__all__ = ["RegionRequest", "clean_sales", "extract_sales", "publish_report", "summarise_region", "ACTIVITIES"]

_REGIONS = ("eu", "us", "apac")


def _stream(seed: str) -> list[int]:
    """Deterministic pseudo-random numbers (0-255) derived from ``seed``."""
    return list(hashlib.sha256(seed.encode()).digest())


@activity.defn(name="extract_sales")
def extract_sales(date: str) -> list[dict[str, Any]]:
    """The day's raw orders: some rows are broken on purpose (clean_sales drops them)."""
    numbers = _stream(date)
    rows: list[dict[str, Any]] = []
    for index, number in enumerate(numbers[:24]):
        rows.append(
            {
                "order_id": f"{date}-{index:03d}",
                "region": _REGIONS[number % 3] if index % 11 != 5 else None,
                "amount": round(number * 1.25, 2) if index % 7 != 3 else -1.0,
            }
        )
    return rows


@activity.defn(name="clean_sales")
def clean_sales(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop rows without a region or with a non-positive amount."""
    return [row for row in rows if row.get("region") and float(row.get("amount", 0)) > 0]


@dataclasses.dataclass
class RegionRequest:
    """What ``summarise_region`` gets: the region and all cleaned rows."""

    region: str
    rows: list[dict[str, Any]]


@activity.defn(name="summarise_region")
def summarise_region(request: RegionRequest) -> dict[str, Any]:
    """Order count and revenue of one region."""
    mine = [row for row in request.rows if row["region"] == request.region]
    return {
        "region": request.region,
        "orders": len(mine),
        "revenue": round(sum(float(row["amount"]) for row in mine), 2),
    }


@activity.defn(name="publish_report")
def publish_report(date: str, regions: list[dict[str, Any]], totals: dict[str, Any]) -> str:
    """Write the report as JSON and return its path."""
    folder = Path(os.environ.get("SPINDLE_REPORT_DIR", "reports"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"daily_sales_{date}.json"
    path.write_text(json.dumps({"date": date, "regions": regions, "totals": totals}, indent=2))
    return str(path)


#: Every activity of this module, for ``Worker(activities=ACTIVITIES)``.
ACTIVITIES: list[Callable[..., Any]] = [extract_sales, clean_sales, summarise_region, publish_report]
