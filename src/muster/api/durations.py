"""Durations as users write them in Muster's annotations, the way Go writes them.

The expected-runtime annotation is read here, once: the Job's opt-in refuses a value
that is not a duration (naming the annotation), and the engine reads the runtime it
declares for start-time estimates.
"""

from __future__ import annotations

import re

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}
DURATION_EXAMPLES = "a duration such as 90m, 1h30m or 45s"


def parse_duration(text: str) -> float | None:
    """Seconds in a Go-style duration (`90m`, `60s`, `1h30m`, `1.5h`); None if malformed."""
    text = text.strip()
    if not text or _DURATION.sub("", text):
        return None
    seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION.findall(text))
    return seconds if seconds > 0 else None
