"""What a pod asks of a node, computed the way kube-scheduler computes it.

A pod needs the larger of (a) its containers plus its sidecars (restartable init
containers, which keep running) and (b) the peak of its init phase, where each regular
init container runs beside the sidecars started before it; pod overhead comes on top.
Requests default to limits when only limits are given (the API server's defaulting,
which offline YAML has not been through).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.keys import shared
from muster.scheduler.objects.fields import mapping_field
from muster.scheduler.objects.quantity import QuantityError, to_amount

Amounts = dict[str, int]


def _container_requests(container: object) -> Amounts:
    container = mapping_field(container, "container")
    resources = mapping_field(container.get("resources"), "container resources")
    limits = mapping_field(resources.get("limits"), "resources.limits")
    requests = mapping_field(resources.get("requests"), "resources.requests")
    merged = {**limits, **requests}
    return {shared(name): to_amount(str(name), raw) for name, raw in merged.items()}


def _add(total: Amounts, extra: Amounts) -> None:
    for name, amount in extra.items():
        total[name] = total.get(name, 0) + amount


def _raise_to(total: Amounts, floor: Amounts) -> None:
    for name, amount in floor.items():
        if amount > total.get(name, 0):
            total[name] = amount


def _containers(spec: Mapping[str, Any], field: str) -> list[object]:
    containers = spec.get(field) or []
    if not isinstance(containers, list):
        raise QuantityError(f"spec.{field} is not a list")
    return containers


def pod_requests(spec: Mapping[str, Any]) -> Amounts:
    """The pod's effective requests by resource name (cpu in millicores), zeros dropped."""
    total: Amounts = {}
    for container in _containers(spec, "containers"):
        _add(total, _container_requests(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in _containers(spec, "initContainers"):
        requests = _container_requests(container)
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            _raise_to(init_peak, sidecars)
        else:
            _add(requests, sidecars)
            _raise_to(init_peak, requests)
    _raise_to(total, init_peak)
    overhead = spec.get("overhead")
    if overhead:
        overhead = mapping_field(overhead, "spec.overhead")
        _add(total, {str(name): to_amount(str(name), raw) for name, raw in overhead.items()})
    return {name: amount for name, amount in sorted(total.items()) if amount > 0}
