"""Structured logs for a deployed server: one JSON object per line on stderr.

``--log-format json`` (``./nuwa serve`` default) makes each record
``{"ts": ISO 8601 UTC, "level", "logger", "msg"}`` plus ``exc`` when an exception is
attached, so a log shipper (journald, Loki, CloudWatch) indexes fields instead of
parsing text. ``--log-format text`` keeps the human form.
"""

from __future__ import annotations

import datetime as dt
import json
import logging


class JsonLogFormatter(logging.Formatter):
    """Format a record as one JSON line (keys above); never raises on odd messages."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON object on one line."""
        ts = dt.datetime.fromtimestamp(record.created, dt.UTC)
        out = {
            "ts": ts.isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure_logging(level: str, log_format: str) -> None:
    """Root logging to stderr at ``level`` (name, e.g. INFO) in ``text`` or ``json``.

    Raises ValueError on another format."""
    if log_format not in ("text", "json"):
        raise ValueError(f"--log-format must be text or json, got {log_format!r}")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter() if log_format == "json" else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(getattr(logging, str(level).upper(), logging.INFO))
