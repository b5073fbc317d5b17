"""A problem found in a manifest: where it is and what is wrong.

Validation in Muster never stops at the first problem, and never raises for a bad
manifest: it returns problems, so that one run shows the user everything to fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

SHOWN_CHARACTERS: Final = 40  # of a tenant's string, at most, in a message


@dataclass(frozen=True, slots=True, order=True)
class Problem:
    """``path`` is the field in Kubernetes notation (``spec.podGroupTemplates[1].name``,
    ``metadata.annotations[scheduling.muster.dev/min-count]``); ``message`` says what
    is wrong, with the offending value."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def join_path(parent: str, child: str) -> str:
    """``spec`` + ``minCount`` -> ``spec.minCount``; list indexes and map keys
    (``[0]``) attach without a dot; an empty part adds nothing."""
    if not parent or not child:
        return parent or child
    if child.startswith("["):
        return parent + child
    return f"{parent}.{child}"


def shown(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """A tenant's string as a message may show it: escaped (no control character or
    quote reaches a terminal as is), and cut to `limit` characters with `...`."""
    head = text[: limit + 1]
    escaped = json.dumps(head, ensure_ascii=True)[1:-1]
    if len(head) <= limit and len(escaped) <= limit:
        return escaped
    return escaped[: limit - 3] + "..."
