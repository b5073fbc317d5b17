"""Waiting for a condition, with the checks that must hold all along."""

from __future__ import annotations

import time
from collections.abc import Callable

# Checks every `wait_until` poll runs first; each raises to fail the waiting test (the
# gang observer registers one, so a partial gang fails a test the moment it is seen).
POLL_CHECKS: list[Callable[[], None]] = []


def wait_until(
    what: str, check: Callable[[], bool], timeout: float = 60.0, interval: float = 0.25
) -> None:
    """Poll until `check()` holds; the failure names what was awaited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for standing in list(POLL_CHECKS):
            standing()
        if check():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
