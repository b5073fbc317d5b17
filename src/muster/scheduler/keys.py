"""The identities of pods and PodGroups (both namespaced), as the engine names them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class GroupKey:
    """A PodGroup's identity: PodGroups are namespaced."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True, order=True)
class PodKey:
    """A pod's identity."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"
