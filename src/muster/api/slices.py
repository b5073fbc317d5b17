"""Slices of a gang: every N consecutive members in one domain of a narrower level.

Two annotations beside the preferred level (Muster's own, like it; Kueue's
`podset-slice-required-topology` and `podset-slice-size` are the same idea), on a
PodGroup, a Workload (for each PodGroup it makes) or an opted-in Job: the slice
level, a node label key, and the slice size. Admission and `muster validate` hold
them to what the engine can honour: both or neither; a label key, one of the
levels when they are known, and no wider than the gang's preferred or required
level (the gang's domain holds its slices); a positive size that divides each
gang's minCount, so that the gang is whole slices.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from muster.api.constants import (
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_SLICE_ANNOTATION,
    TOPOLOGY_SLICE_SIZE_ANNOTATION,
)
from muster.api.names import is_label_key
from muster.api.numbers import positive_integer
from muster.api.preferences import annotations_of
from muster.api.problems import Problem

SLICE_FIELD = f"metadata.annotations[{TOPOLOGY_SLICE_ANNOTATION}]"
SLICE_SIZE_FIELD = f"metadata.annotations[{TOPOLOGY_SLICE_SIZE_ANNOTATION}]"


@dataclass(frozen=True, slots=True)
class GangShape:
    """What a slice must fit: a gang's minCount (None for a basic group) and its
    required topology key, with where it is written (for the message)."""

    min_count: int | None
    required: str | None
    where: str = "the gang"


def slice_problems(
    manifest: Mapping[str, Any],
    gangs: Sequence[GangShape],
    levels: Sequence[str] = (),
    old: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """What is wrong with the object's slice annotations, if it has any, each with the
    field named. An object that keeps the slice level it had (`old`) is not checked
    against levels declared since."""
    annotations = annotations_of(manifest)
    key = annotations.get(TOPOLOGY_SLICE_ANNOTATION)
    size = annotations.get(TOPOLOGY_SLICE_SIZE_ANNOTATION)
    if key is None and size is None:
        return []
    if key is None:
        return [Problem(SLICE_FIELD, f"Required value: with {TOPOLOGY_SLICE_SIZE_ANNOTATION}")]
    problems = _key_problems(key, annotations, gangs, levels, old)
    if size is None:
        problems.append(Problem(SLICE_SIZE_FIELD, f"Required value: with {SLICE_FIELD}"))
    elif positive_integer(size) is None:
        problems.append(Problem(SLICE_SIZE_FIELD, f"{json.dumps(size)} is not a positive integer"))
    else:
        problems.extend(_size_problems(int(size), gangs))
    return problems


def _key_problems(
    key: object,
    annotations: Mapping[str, Any],
    gangs: Sequence[GangShape],
    levels: Sequence[str],
    old: Mapping[str, Any] | None,
) -> list[Problem]:
    if not isinstance(key, str) or not is_label_key(key):
        return [Problem(SLICE_FIELD, f"{json.dumps(key)} is not a valid label key")]
    kept = old is not None and annotations_of(old).get(TOPOLOGY_SLICE_ANNOTATION) == key
    if not levels or kept:
        return []
    if key not in levels:
        named = ", ".join(levels)
        return [Problem(SLICE_FIELD, f"{json.dumps(key)} is not a topology level: {named}")]
    preferred = annotations.get(TOPOLOGY_PREFERRED_ANNOTATION)
    outer = [("the preferred level", preferred)]
    outer += [(f"the level {gang.where} requires", gang.required) for gang in gangs]
    for what, level in outer:
        if isinstance(level, str) and level in levels and levels.index(key) < levels.index(level):
            return [
                Problem(
                    SLICE_FIELD,
                    f"{json.dumps(key)} is wider than {json.dumps(level)}, {what}: "
                    "a slice must fit in the gang's domain",
                )
            ]
    return []


def _size_problems(size: int, gangs: Sequence[GangShape]) -> list[Problem]:
    return [
        Problem(
            SLICE_SIZE_FIELD,
            f"{size} does not divide the minCount of {gang.where} ({gang.min_count}): "
            "a gang is whole slices",
        )
        for gang in gangs
        if gang.min_count is not None and gang.min_count % size
    ]
