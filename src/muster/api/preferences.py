"""The topology level a gang prefers: an annotation, since the upstream API has no field.

`spec.schedulingConstraints.topology` is the required domain, as upstream has it; the
preferred level (the narrowest level the gang would rather sit in one domain of) is
Muster's own, so it lives in an annotation that a PodGroup carries, a Workload passes
on to each PodGroup it makes, and an opted-in Job to its PodGroup, as it passes on
the slice annotations (`slices`). Moving to the native API drops them.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from muster.api.constants import (
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_SLICE_ANNOTATION,
    TOPOLOGY_SLICE_SIZE_ANNOTATION,
)
from muster.api.names import is_label_key
from muster.api.problems import Problem

PREFERRED_FIELD = f"metadata.annotations[{TOPOLOGY_PREFERRED_ANNOTATION}]"


def preference_problems(
    manifest: Mapping[str, Any],
    levels: Sequence[str] = (),
    old: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """The preferred level, if the object names one, must be a node label key; and,
    when the cluster's levels are known (`levels`), one of them. An object that keeps
    the level it had (`old`) is not checked against levels declared since."""
    annotations = annotations_of(manifest)
    if TOPOLOGY_PREFERRED_ANNOTATION not in annotations:
        return []
    value = annotations[TOPOLOGY_PREFERRED_ANNOTATION]
    if not isinstance(value, str) or not is_label_key(value):
        return [Problem(PREFERRED_FIELD, f"{json.dumps(value)} is not a valid label key")]
    kept = old is not None and annotations_of(old).get(TOPOLOGY_PREFERRED_ANNOTATION) == value
    if levels and value not in levels and not kept:
        named = ", ".join(levels)
        return [Problem(PREFERRED_FIELD, f"{json.dumps(value)} is not a topology level: {named}")]
    return []


CARRIED = (
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_SLICE_ANNOTATION,
    TOPOLOGY_SLICE_SIZE_ANNOTATION,
)


def carried_preference(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The topology annotations (preferred level, slices) a PodGroup made from this
    Workload or Job inherits."""
    annotations = annotations_of(manifest)
    return {key: annotations[key] for key in CARRIED if isinstance(annotations.get(key), str)}


def annotations_of(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's annotations; none when it has none or they are not a mapping."""
    metadata = manifest.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_TOPOLOGY_KIND = "Topology"


def kueue_levels(manifest: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The levels of a Kueue `Topology` (`spec.levels[].nodeLabel`, widest first), or
    None when the manifest is not one or names no valid label key at some level."""
    api_version = str(manifest.get("apiVersion", ""))
    if manifest.get("kind") != KUEUE_TOPOLOGY_KIND or api_version.partition("/")[0] != KUEUE_GROUP:
        return None
    spec = manifest.get("spec")
    levels = spec.get("levels") if isinstance(spec, Mapping) else None
    if not isinstance(levels, list) or not levels:
        return None
    keys = [level.get("nodeLabel") if isinstance(level, Mapping) else None for level in levels]
    if not all(isinstance(key, str) and is_label_key(key) for key in keys):
        return None
    return tuple(str(key) for key in keys)


def declared_topology(names: Collection[str]) -> str | None:
    """The Kueue Topology whose levels Muster keeps, of those the cluster has: the first
    by name. Kueue lets each node pool's flavor name a Topology of its own; Muster
    plans every gang in one order of levels, so it takes one, and the same one every
    time whatever order the objects arrive in."""
    return min(names) if names else None


def declared_levels(
    topologies: Mapping[str, tuple[str, ...]], configured: tuple[str, ...]
) -> tuple[str, ...]:
    """The topology levels, widest first: declared once in a Kueue Topology where the
    cluster has one, else the operator's own (`--topology-levels`)."""
    name = declared_topology(topologies)
    return configured if name is None else topologies[name]
