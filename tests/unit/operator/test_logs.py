"""At INFO the operator logs its decisions, not each webhook call; at DEBUG the calls
are there too, and a crashed handler's traceback always is."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from muster.operator import logs


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[_Kept]:
    root, quiet = logging.getLogger(), logging.getLogger("asyncio")  # kopf.configure sets both
    level, handlers = root.level, list(root.handlers)
    propagate, quiet_handlers = quiet.propagate, list(quiet.handlers)
    handler = _Kept()
    yield handler
    root.handlers[:] = handlers
    root.setLevel(level)
    quiet.propagate, quiet.handlers[:] = propagate, quiet_handlers


def _lines(kept: _Kept, level: str) -> list[tuple[str, str]]:
    logs.configure(level, "text")
    logging.getLogger().addHandler(kept)
    logging.getLogger("aiohttp.access").info("127.0.0.1 POST /gate-pods 200")
    logging.getLogger("kopf.objects").info("Handler 'gate-pods' succeeded.")
    logging.getLogger("kopf.objects").error("Handler 'validate-jobs' failed permanently: no")
    try:
        raise ValueError("bug")
    except ValueError:
        logging.getLogger("kopf.objects").exception("Handler 'gate-pods' failed")
    logging.getLogger("muster.operator.execution.loop").info(
        "PodGroup ml/train admitted: 4 pods placed"
    )
    return [(record.levelname, record.getMessage()) for record in kept.records]


def test_at_info_only_decisions_and_crashes_are_logged(kept: _Kept) -> None:
    assert _lines(kept, "info") == [
        ("ERROR", "Handler 'gate-pods' failed"),
        ("INFO", "PodGroup ml/train admitted: 4 pods placed"),
    ]


def test_at_debug_each_webhook_call_is_logged_at_debug(kept: _Kept) -> None:
    assert _lines(kept, "debug") == [
        ("DEBUG", "127.0.0.1 POST /gate-pods 200"),
        ("DEBUG", "Handler 'gate-pods' succeeded."),
        ("DEBUG", "Handler 'validate-jobs' failed permanently: no"),
        ("ERROR", "Handler 'gate-pods' failed"),
        ("INFO", "PodGroup ml/train admitted: 4 pods placed"),
    ]
