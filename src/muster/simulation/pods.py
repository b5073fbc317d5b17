"""What happens to a pod in a simulated cluster: bound to a node, or deleted and made
again by its Job.

These mirror the cluster's own steps (the operator lifts the gate and kube-scheduler
binds the pinned pod; a preempted pod of a Job comes back as a fresh gated pod), so the
next cycle of the engine sees what it would see in a real cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.gates import with_gang_gate, without_gang_gate
from muster.api.wire import FINISHED_PHASES

Manifest = dict[str, Any]


def bound(pod: Mapping[str, Any], node_name: str) -> Manifest:
    """The pod once released and bound: gate lifted, on its node."""
    result, spec = _with_own_spec(pod)
    spec["nodeName"] = node_name
    gates = without_gang_gate(spec.get("schedulingGates") or [])
    if gates:
        spec["schedulingGates"] = gates
    else:
        spec.pop("schedulingGates", None)
    return result


def gated(pod: Mapping[str, Any]) -> Manifest:
    """The pod with the gang gate, as the admission webhook creates a gang's pods."""
    result, spec = _with_own_spec(pod)
    spec["schedulingGates"] = with_gang_gate(spec.get("schedulingGates") or [])
    return result


def is_finished(pod: Mapping[str, Any]) -> bool:
    """Succeeded or Failed: the pod holds nothing any more."""
    return (pod.get("status") or {}).get("phase") in FINISHED_PHASES


def is_pending(pod: Mapping[str, Any]) -> bool:
    return not (pod.get("spec") or {}).get("nodeName") and not is_finished(pod)


def remade_by_job(pod: Mapping[str, Any]) -> Manifest:
    """The pod a Job creates in place of a preempted one: the same, but pending.

    It keeps the name so that reports stay comparable from run to run.
    """
    result, spec = _with_own_spec(pod)
    spec.pop("nodeName", None)
    result["status"] = {"phase": "Pending"}
    return result


def _with_own_spec(pod: Mapping[str, Any]) -> tuple[Manifest, Manifest]:
    """A copy of the pod whose top level and spec may be changed; the rest is shared.

    Objects of a simulation are never changed in place, only replaced, so sharing what
    a step does not touch is safe, and a cluster of 50,000 pods is not copied whole
    each time a gang binds.
    """
    spec = dict(pod.get("spec") or {})
    return {**pod, "spec": spec}, spec
