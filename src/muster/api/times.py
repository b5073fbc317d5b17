"""Times as the API server writes them, RFC 3339 in UTC, both ways: the one place.

Timestamps (`creationTimestamp`, conditions, Muster's status) have whole seconds;
MicroTime fields (a Lease's `renewTime`, an Event's `eventTime`) have microseconds.
Reading takes either, and any offset, but insists on one: a time without it would
be read in the reader's local zone, and two replicas could disagree on it.
"""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(moment: float, *, micro: bool = False) -> str:
    """`2026-11-30T04:26:03Z` (seconds since the epoch, cut to the second), or with
    `micro` the MicroTime form `2026-11-30T04:26:03.123456Z`."""
    pattern = "%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.fromtimestamp(moment, UTC).strftime(pattern)


def timestamp(moment: float) -> datetime:
    """The moment as a Timestamp field of the API's models holds it: in UTC, cut to
    the second (written as `rfc3339` writes it)."""
    return datetime.fromtimestamp(moment, UTC).replace(microsecond=0)


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch; ValueError when `text` is not an RFC 3339 time."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"an RFC 3339 time needs an offset (e.g. 'Z'): {text!r}")
    return moment.timestamp()
