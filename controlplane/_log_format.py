"""The server's log formats: ``text`` (the default) and ``json`` (``--log-format json``).

``json`` writes one JSON object per line: ``time`` (UTC, ISO 8601 with milliseconds),
``level``, ``logger``, ``message``, and ``namespace``, ``workflow_id``, ``run_id`` when
the record carries them (``log.warning(..., extra=run_fields(...))``); an exception's
traceback goes in ``exception``. Log shippers (Cloud Logging, Loki, Elasticsearch) parse
it without a pattern.
"""

from __future__ import annotations

import json
import logging
import time

from typing import Any

__all__ = ["LOG_FORMATS", "JsonFormatter", "configure_logging", "run_fields"]

#: The accepted values of ``--log-format``.
LOG_FORMATS = ("text", "json")
_TEXT = "%(asctime)s %(levelname)s %(name)s %(message)s"
_CONTEXT = ("namespace", "workflow_id", "run_id")


def run_fields(namespace: str, workflow_id: str, run_id: str = "") -> dict[str, str]:
    """The ``extra`` of a log record about one run: the JSON format shows them as fields."""
    return {"namespace": namespace, "workflow_id": workflow_id, "run_id": run_id}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (newlines inside values are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in _CONTEXT:
            value = getattr(record, key, None)
            if value:
                out[key] = str(value)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure_logging(level: str, log_format: str) -> None:
    """Configure the root logger for ``level`` ("debug" ... "error") in ``log_format`` (one of LOG_FORMATS).

    Raises:
        ValueError: an unknown format or level.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format {log_format!r} is not one of {', '.join(LOG_FORMATS)}")
    lvl = getattr(logging, level.upper(), None)
    if not isinstance(lvl, int):
        raise ValueError(f"log level {level!r} is not one of debug, info, warning, error")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(_TEXT))
    logging.basicConfig(level=lvl, handlers=[handler], force=True)
