"""Times read from objects on intake, with the engine's two tempers (the format
itself is `muster.api.times`)."""

from __future__ import annotations

from datetime import datetime

from muster.api.times import parse_rfc3339
from muster.scheduler.objects.fields import IntakeError


def parse_timestamp(raw: object) -> float | None:
    """RFC 3339 as the API server writes it (`2026-11-30T04:26:03Z`); None when absent."""
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return raw.timestamp()
    if not isinstance(raw, str):
        raise IntakeError("metadata.creationTimestamp must be an RFC 3339 string")
    try:
        return parse_rfc3339(raw)
    except ValueError as error:
        raise IntakeError(f"metadata.creationTimestamp: {error}") from error


def parse_time(raw: object) -> float | None:
    """Like `parse_timestamp`, but None for a malformed time: for status fields Muster
    wrote itself, which must never make a PodGroup unusable."""
    try:
        return parse_timestamp(raw) if raw != "" else None
    except IntakeError:
        return None
