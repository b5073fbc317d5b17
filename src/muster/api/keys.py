"""The identities of objects: pods and PodGroups as the engine names them, and the
key and version of any object as the API server gives it.

Named tuples rather than dataclasses: every cycle hashes, compares and sorts thousands
of them (the pod and group maps, the queue, the plan), and a tuple does all three in C.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, NamedTuple


def shared(value: object) -> str:
    """The text as one object wherever it occurs (`sys.intern`): namespaces, label keys
    and values, resource and node names repeat across thousands of records, and each
    record parsed from its own JSON would otherwise hold its own copy of each."""
    return sys.intern(str(value))


class GroupKey(NamedTuple):
    """A PodGroup's identity: PodGroups are namespaced."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class PodKey(NamedTuple):
    """A pod's identity."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class JobRef(NamedTuple):
    """A Job, as an Event names it: its uid too, which `kubectl describe job` matches."""

    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """An object's namespace ("" when it has none) and name, `shared`: the indexes
    that keep a key for each of 50,000 pods then hold one copy of its name between
    them, not one each."""
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(metadata, Mapping):
        return "", ""  # not an object at all: the engine's intake says why
    return shared(metadata.get("namespace") or ""), shared(metadata.get("name") or "")


def resource_version(obj: Mapping[str, Any]) -> str:
    """The object's resourceVersion as the API server wrote it ("" when it has none):
    what a conditional write sends back."""
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    return str(metadata.get("resourceVersion") or "") if isinstance(metadata, Mapping) else ""


def revision(obj: Mapping[str, Any]) -> int | None:
    """The object's resourceVersion as a number (etcd's revision), if it is one.

    The API only promises an opaque string, but every server the operator meets
    writes etcd's revision there; comparing them orders two copies of one object
    that reached us by different paths (two watches, a watch and a write's answer)."""
    try:
        return int(resource_version(obj))
    except ValueError:
        return None
