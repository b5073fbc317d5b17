"""Numbers written in annotations, which anyone who may edit the object writes."""

from __future__ import annotations

from typing import Final

# More digits than any count Kubernetes keeps (an int32) needs: a longer string is no
# count, and converting it would cost time (or fail, past Python's 4,300 digits).
MAX_DIGITS: Final = 10


def positive_integer(value: object) -> int | None:
    """The positive integer `value` spells in plain digits, else None."""
    if not (isinstance(value, str) and 0 < len(value) <= MAX_DIGITS):
        return None
    return int(value) if value.isascii() and value.isdigit() and int(value) > 0 else None
