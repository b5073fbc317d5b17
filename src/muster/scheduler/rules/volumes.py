"""Volumes that tie a pod to nodes: claims bound to PersistentVolumes with node affinity.

kube-scheduler's VolumeBinding filter (`volumebinding/binder.go` `checkBoundClaims`)
refuses a node that a bound claim's PersistentVolume cannot be used from (its
`spec.nodeAffinity.required`, as zonal disks carry), and every node when the claim is
bound to a volume that does not exist. Claims not bound yet (`WaitForFirstConsumer`
provisioning) and claims the engine has not seen leave the node choice free: they are
not modelled, and a refusal by kube-scheduler rolls the gang back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from muster.scheduler.rules.filters import NODE_CONFLICT, PV_NOT_FOUND
from muster.scheduler.rules.labels import LabelIndex
from muster.scheduler.rules.node_affinity import Term, matching_nodes

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class VolumeRule:
    """What a pod's bound volumes ask of its node."""

    missing: bool  # a claim is bound to a volume that does not exist
    terms: tuple[tuple[Term, ...], ...]  # each bound volume's required node terms

    def refused(self, labels: LabelIndex) -> tuple[BoolArray, str]:
        """Nodes the volumes cannot be used from, and kube-scheduler's reason."""
        if self.missing:
            return np.ones(labels.size, dtype=np.bool_), PV_NOT_FOUND
        usable = np.ones(labels.size, dtype=np.bool_)
        for terms in self.terms:
            usable &= matching_nodes((), terms, labels)
        return ~usable, NODE_CONFLICT


class Volumes:
    """Claims and volumes as the API gives them, kept up to date one event at a time."""

    def __init__(self) -> None:
        self._claims: dict[tuple[str, str], str | None] = {}  # -> bound volume name
        self._volumes: dict[str, tuple[Term, ...] | None] = {}  # -> required node terms

    def copy(self) -> Volumes:
        twin = Volumes()
        twin._claims, twin._volumes = dict(self._claims), dict(self._volumes)
        return twin

    def apply_claim(self, namespace: str, name: str, volume: str | None) -> None:
        self._claims[(namespace, name)] = volume

    def delete_claim(self, namespace: str, name: str) -> None:
        self._claims.pop((namespace, name), None)

    def apply_volume(self, name: str, terms: tuple[Term, ...] | None) -> None:
        self._volumes[name] = terms

    def delete_volume(self, name: str) -> None:
        self._volumes.pop(name, None)

    def claim(self, namespace: str, name: str) -> tuple[str | None] | None:
        """The claim as kept (its bound volume, in a 1-tuple); None when none is kept."""
        key = (namespace, name)
        return (self._claims[key],) if key in self._claims else None

    def volume(self, name: str) -> tuple[tuple[Term, ...] | None] | None:
        """The volume as kept (its node terms, in a 1-tuple); None when none is kept."""
        return (self._volumes[name],) if name in self._volumes else None

    def rule_for(self, namespace: str, claims: tuple[str, ...]) -> VolumeRule | None:
        """The rule of a pod's claims (None: they leave every node open)."""
        missing = False
        terms: list[tuple[Term, ...]] = []
        for claim in claims:
            volume = self._claims.get((namespace, claim))
            if volume is None:
                continue  # not seen, or not bound yet: not modelled
            if volume not in self._volumes:
                missing = True
                continue
            required = self._volumes[volume]
            if required is not None:
                terms.append(required)
        if not missing and not terms:
            return None
        return VolumeRule(missing, tuple(terms))
