"""A problem found in a manifest: where it is and what is wrong.

Validation in Muster never stops at the first problem, and never raises for a bad
manifest: it returns problems, so that one run shows the user everything to fix.
"""

from __future__ import annotations

from dataclasses import dataclass


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
