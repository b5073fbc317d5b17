"""The operator's log: what it decided at INFO, the webhooks' traffic at DEBUG.

At INFO the log is one line per decision carried out (`decision_log`) and what goes
wrong; each admission call would otherwise add two lines, aiohttp's access line and
kopf's "Handler ... succeeded" (or "failed permanently" for an object refused, which
is the user's answer, not the operator's error), and bury the decisions under them.
Those lines are kept at DEBUG (`--log-level debug`); a handler that crashed still
logs its traceback at its own level.
"""

from __future__ import annotations

import logging

import kopf

ACCESS_LOGGERS = ("aiohttp.access", "kopf.objects")


class AccessLines(logging.Filter):
    """Lowers a webhook call's line to DEBUG, and drops it unless DEBUG is logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info:
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger().isEnabledFor(logging.DEBUG)


def configure(level: str, log_format: str) -> None:
    """Set up the log for `--log-level` and `--log-format`."""
    kopf.configure(
        debug=level == "debug",
        quiet=level in ("warning", "error"),
        log_format=kopf.LogFormat.JSON if log_format == "json" else kopf.LogFormat.FULL,
    )
    for name in ACCESS_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(kept, AccessLines) for kept in logger.filters):
            logger.addFilter(AccessLines())
