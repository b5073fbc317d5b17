"""Sort parsed documents into the kinds a simulation understands, checking what it relies on.

Only the shape the simulation itself depends on is checked here (a mapping with a kind
and a name); the meaning of each object is the engine's and the API models' business.
Every problem is collected, so one run lists all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from muster.api.constants import API_VERSION, POD_GROUP_KIND, WORKLOAD_KIND
from muster.api.preferences import KUEUE_TOPOLOGY_KIND
from muster.simulation.documents import Document, InvalidInputError, Problem

Manifest = dict[str, Any]

DEFAULT_NAMESPACE = "default"
CLUSTER_SCOPED_KINDS = frozenset(
    {"Node", "PriorityClass", "Namespace", "PersistentVolume", "ResourceSlice", "DeviceClass"}
)
DEVICE_KINDS = ("ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate")
MUSTER_KINDS = frozenset({POD_GROUP_KIND, WORKLOAD_KIND})


@dataclass(frozen=True, slots=True)
class Entry:
    """One object of the input (a copy, free to change) and where it was written."""

    origin: str
    body: Manifest

    @property
    def name(self) -> str:
        name: str = self.body["metadata"]["name"]
        return name

    @property
    def namespace(self) -> str:
        namespace: str = self.body["metadata"].get("namespace", "")
        return namespace


@dataclass(slots=True)
class Inventory:
    """The input's objects by kind, in input order, and what was ignored."""

    nodes: list[Entry] = field(default_factory=list)
    namespaces: list[Entry] = field(default_factory=list)
    volumes: list[Entry] = field(default_factory=list)
    claims: list[Entry] = field(default_factory=list)
    devices: list[Entry] = field(default_factory=list)  # of the DEVICE_KINDS, mixed
    pods: list[Entry] = field(default_factory=list)
    priority_classes: list[Entry] = field(default_factory=list)
    budgets: list[Entry] = field(default_factory=list)
    pod_groups: list[Entry] = field(default_factory=list)
    workloads: list[Entry] = field(default_factory=list)
    jobs: list[Entry] = field(default_factory=list)
    topologies: list[Entry] = field(default_factory=list)  # Kueue's: the topology levels
    warnings: list[Problem] = field(default_factory=list)

    def bucket(self, kind: str) -> list[Entry] | None:
        """The list that holds objects of `kind`, or None for a kind the simulation ignores."""
        buckets = {
            "Node": self.nodes,
            "Namespace": self.namespaces,
            "PersistentVolume": self.volumes,
            "PersistentVolumeClaim": self.claims,
            "Pod": self.pods,
            "PriorityClass": self.priority_classes,
            "PodDisruptionBudget": self.budgets,
            POD_GROUP_KIND: self.pod_groups,
            WORKLOAD_KIND: self.workloads,
            "Job": self.jobs,
            KUEUE_TOPOLOGY_KIND: self.topologies,
            **dict.fromkeys(DEVICE_KINDS, self.devices),
        }
        return buckets.get(kind)


def take_inventory(documents: Iterable[Document]) -> Inventory:
    """Check and sort `documents`; raise `InvalidInputError` listing every problem found.

    `kind: List` documents (what `kubectl get -o yaml` prints) are unpacked, so a dump
    of a live cluster can be simulated as it is. Namespaced objects without a namespace
    land in `default`, as `kubectl apply` would put them.
    """
    inventory = Inventory()
    problems: list[Problem] = []
    first_seen: dict[tuple[str, str, str], str] = {}
    for origin, body in _objects(documents, problems):
        message = _shape_problem(body)
        if message is not None:
            problems.append(Problem(origin, message))
            continue
        kind: str = body["kind"]
        bucket = inventory.bucket(kind)
        if bucket is None:
            inventory.warnings.append(Problem(origin, f"kind {kind} is not simulated; ignored"))
            continue
        if kind in MUSTER_KINDS and body.get("apiVersion", API_VERSION) != API_VERSION:
            inventory.warnings.append(
                Problem(origin, f"{kind} of {body['apiVersion']} is not Muster's; ignored")
            )
            continue
        entry = Entry(origin, _normalised(body))
        identity = (kind, entry.namespace, entry.name)
        if identity in first_seen:
            problems.append(
                Problem(origin, f"{_describe(identity)} is also defined at {first_seen[identity]}")
            )
            continue
        first_seen[identity] = origin
        bucket.append(entry)
    if problems:
        raise InvalidInputError(problems)
    return inventory


def _objects(
    documents: Iterable[Document], problems: list[Problem]
) -> Iterator[tuple[str, Manifest]]:
    """Each object with its origin; list documents yield their items (`file:3.items[0]`)."""
    for document in documents:
        body = document.body
        if body is None:
            continue
        if not isinstance(body, dict):
            problems.append(
                Problem(document.origin, f"expected a mapping, found {type(body).__name__}")
            )
            continue
        kind = body.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in body:
            items = body["items"]
            if not isinstance(items, list):
                problems.append(Problem(document.origin, "items: expected a list"))
                continue
            for position, item in enumerate(items):
                origin = f"{document.origin}.items[{position}]"
                if isinstance(item, dict):
                    yield origin, item
                else:
                    problems.append(
                        Problem(origin, f"expected a mapping, found {type(item).__name__}")
                    )
            continue
        yield document.origin, body


def _shape_problem(body: Manifest) -> str | None:
    kind = body.get("kind")
    if not isinstance(kind, str) or not kind:
        return "kind: required"
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        return f"{kind}: metadata: required"
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return f"{kind}: metadata.name: required"
    namespace = metadata.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        return f"{kind} {name}: metadata.namespace: expected a string"
    return None


def _normalised(body: Manifest) -> Manifest:
    """A copy with the namespace filled in (cluster-scoped objects have none).

    Only the top level and metadata are copied: the simulation replaces objects and
    never changes them in place, and a deep copy of a large dump costs seconds.
    """
    metadata = dict(body["metadata"])
    copied = {**body, "metadata": metadata}
    if copied["kind"] in CLUSTER_SCOPED_KINDS:
        metadata.pop("namespace", None)
    elif not metadata.get("namespace"):
        metadata["namespace"] = DEFAULT_NAMESPACE
    return copied


def _describe(identity: tuple[str, str, str]) -> str:
    kind, namespace, name = identity
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
