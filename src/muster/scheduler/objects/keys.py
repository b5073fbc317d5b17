"""The identities of pods and PodGroups (both namespaced), as the engine names them.

Named tuples rather than dataclasses: every cycle hashes, compares and sorts thousands
of them (the pod and group maps, the queue, the plan), and a tuple does all three in C.
"""

from __future__ import annotations

from typing import NamedTuple


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
