"""Taints and tolerations, with kube-scheduler's TaintToleration meaning.

Only `NoSchedule` and `NoExecute` taints keep a pod off a node; `PreferNoSchedule` is a
scoring hint and is ignored here, as the filter ignores it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from muster.api.keys import shared
from muster.scheduler.objects.fields import mapping_field
from muster.scheduler.rules.filters import untolerated_taint

FILTERING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def describe(self) -> str:
        """kube-scheduler's rendering, so users recognise the message."""
        return untolerated_taint(self.key, self.value)


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" or "Exists"
    value: str
    effect: str  # "" tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def taint_from(raw: object, where: str) -> Taint:
    """A node's taint, or a device's (the same shape)."""
    taint = mapping_field(raw, where)
    return Taint(
        str(taint.get("key", "")), str(taint.get("value") or ""), str(taint.get("effect", ""))
    )


def toleration_from(raw: object, where: str) -> Toleration:
    """A pod's toleration, or a device request's (the same shape)."""
    toleration = mapping_field(raw, where)
    return Toleration(
        key=shared(toleration.get("key") or ""),
        operator=shared(toleration.get("operator") or "Equal"),
        value=shared(toleration.get("value") or ""),
        effect=shared(toleration.get("effect") or ""),
    )


def first_untolerated(taints: Iterable[Taint], tolerations: tuple[Toleration, ...]) -> Taint | None:
    """The first filtering taint no toleration covers (the one kube-scheduler reports)."""
    for taint in taints:
        if taint.effect not in FILTERING_EFFECTS:
            continue
        if not any(toleration.tolerates(taint) for toleration in tolerations):
            return taint
    return None


def tolerates_unschedulable(tolerations: tuple[Toleration, ...]) -> bool:
    """Whether the pod may land on a cordoned node (NodeUnschedulable filter)."""
    cordon = Taint(UNSCHEDULABLE_TAINT_KEY, "", "NoSchedule")
    return any(toleration.tolerates(cordon) for toleration in tolerations)
