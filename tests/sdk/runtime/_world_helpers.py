"""A user module the determinism tests' workflows import helpers and settings from."""

from __future__ import annotations

import os
import time

REGION = os.getenv("REGION", "eu")  # read once per worker, at import
RETRIES = 3


def stamp(label: str) -> str:
    return f"{label}@{time.time()}"


def region_label() -> str:
    return f"region {os.environ.get('REGION', 'eu')}"


def pure_label(label: str) -> str:
    return label.upper()


def calls_stamp() -> str:
    return stamp("deep")  # two levels down from a workflow: not followed
