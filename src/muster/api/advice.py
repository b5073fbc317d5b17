"""Warnings about what is valid but likely a mistake: a typo in one of Muster's keys,
a declared runtime that does not read as a duration, a topology level no node carries.

None is refused: a key Muster does not know may be meant for a later version, a
pod's or a PodGroup's runtime is only a hint to the estimates (a Job's opt-in refuses
a malformed one, its own), and nodes with a label may join the cluster after the gang
that names it. But each
is the kind of mistake that otherwise shows only as a gang that runs without the
preference it asked for, or waits for ever; so admission answers with warnings
(which `kubectl` prints as `Warning:`), and `muster validate` prints the same.

Every string here may come from a tenant: each warning shows at most
`SHOWN_CHARACTERS` of a tenant's key, escaped, is at most `MAX_WARNING_LENGTH` long,
and a request gets at most `MAX_WARNINGS` of them (the API server itself truncates
warnings to 256 characters and 4 KiB in all; see k8s.io/apiserver
pkg/endpoints/handlers/responsewriters `warning.go`, whose limits these stay under).
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Collection, Iterator, Mapping
from typing import Any, Final

from muster.api.constants import (
    EXPECTED_RUNTIME_ANNOTATION,
    POD_GROUP_KIND,
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_SLICE_ANNOTATION,
    WORKLOAD_KIND,
)
from muster.api.durations import DURATION_EXAMPLES, parse_duration
from muster.api.known_keys import is_unknown, nearest_key
from muster.api.names import is_label_key
from muster.api.optin import OptInError, read_job_opt_in
from muster.api.preferences import annotations_of
from muster.api.problems import shown
from muster.api.validation import required_keys

MAX_WARNING_LENGTH: Final = 120
MAX_WARNINGS: Final = 4
NEAR: Final = 0.8  # how alike a node label key must be to be suggested (difflib's ratio)

REQUIRED_LEVEL: Final = "topology key"
PREFERRED_LEVEL: Final = "preferred level"
SLICE_LEVEL: Final = "slice level"


def bounded(warnings: list[str]) -> list[str]:
    """At most `MAX_WARNINGS`, each at most `MAX_WARNING_LENGTH` long; the last says how
    many more there were."""
    clipped = [
        warning if len(warning) <= MAX_WARNING_LENGTH else warning[: MAX_WARNING_LENGTH - 3] + "..."
        for warning in warnings
    ]
    if len(clipped) <= MAX_WARNINGS:
        return clipped
    kept = clipped[: MAX_WARNINGS - 1]
    return [*kept, f"and {len(clipped) - len(kept)} more warnings like these"]


def key_warnings(manifest: Mapping[str, Any]) -> list[str]:
    """One warning per label or annotation under Muster's prefix that Muster does not
    know, each with the known key it most likely meant, and one for a declared runtime
    that is not a duration (which the estimates then ignore); at most one more than a
    request may show, so `bounded` can say there are more."""
    return list(itertools.islice(_key_warnings(manifest), MAX_WARNINGS + 1))


def _key_warnings(manifest: Mapping[str, Any]) -> Iterator[str]:
    metadata = manifest.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    for where in ("labels", "annotations"):
        keys = metadata.get(where)
        for key in keys if isinstance(keys, Mapping) else ():
            if isinstance(key, str) and is_unknown(key):
                near = nearest_key(key)
                meant = f": did you mean {near}?" if near else " (Muster ignores it)"
                yield f"unknown key {shown(key)}{meant}"
    if manifest.get("kind") == "Job":
        return  # its opt-in refuses a malformed runtime (`muster.api.optin`)
    runtime = annotations_of(manifest).get(EXPECTED_RUNTIME_ANNOTATION)
    if runtime is not None and (not isinstance(runtime, str) or parse_duration(runtime) is None):
        yield f'expected-runtime "{shown(str(runtime))}" is not {DURATION_EXAMPLES}: ignored'


def named_levels(manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The node label keys the object names as topology levels, each with what it is
    to the gang (required, preferred, slice), once each; malformed ones are left to
    validation, which refuses them."""
    found: list[tuple[str, str]] = [(REQUIRED_LEVEL, key) for key in _required(manifest)]
    annotations = annotations_of(manifest)
    for what, annotation in (
        (PREFERRED_LEVEL, TOPOLOGY_PREFERRED_ANNOTATION),
        (SLICE_LEVEL, TOPOLOGY_SLICE_ANNOTATION),
    ):
        value = annotations.get(annotation)
        if isinstance(value, str):
            found.append((what, value))
    unique = dict.fromkeys((what, key) for what, key in found if is_label_key(key))
    return list(unique)


def _required(manifest: Mapping[str, Any]) -> list[str]:
    kind = manifest.get("kind")
    if kind in (POD_GROUP_KIND, WORKLOAD_KIND):
        return required_keys(manifest)
    if kind != "Job":
        return []
    try:
        opt_in = read_job_opt_in(manifest)
    except OptInError:
        return []
    return [] if opt_in is None or opt_in.topology_key is None else [opt_in.topology_key]


def topology_warnings(manifest: Mapping[str, Any], node_keys: Collection[str]) -> list[str]:
    """One warning per topology level the object names that no node carries (as a
    label), with the node label key it most likely meant."""
    warnings = []
    for what, key in named_levels(manifest):
        if key in node_keys:
            continue
        near = nearest_node_key(key, node_keys)
        meant = f" (did you mean {shown(near)}?)" if near else ""
        warnings.append(f"no node carries the {what} {shown(key)}{meant}")
    return warnings


def nearest_node_key(key: str, node_keys: Collection[str]) -> str | None:
    """The node label key `key` most likely meant: alike as a whole and in its name
    (the part after the prefix), since keys that share a long prefix are alike as a
    whole whatever their names (`example.com/block` is not `example.com/rack`)."""
    name = key.rpartition("/")[2]
    best: tuple[float, str] | None = None
    for candidate in node_keys:
        whole = difflib.SequenceMatcher(None, key, candidate).ratio()
        named = difflib.SequenceMatcher(None, name, candidate.rpartition("/")[2]).ratio()
        if whole >= NEAR and named >= NEAR and (best is None or (-whole, candidate) < best):
            best = (-whole, candidate)
    return None if best is None else best[1]
