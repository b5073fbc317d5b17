"""How the state takes in the kinds of Dynamic Resource Allocation (`resource.k8s.io/v1`):
ResourceSlice and DeviceClass (cluster-scoped), ResourceClaim and ResourceClaimTemplate.

Each is kept in the state's `DeviceBook` as its record (`intake`), and the
record before and after an event tells whether it changed anything: a claim's
unrelated annotation starts no cycle, its allocation does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from muster.scheduler.devices.intake import claim_from, class_from, slice_from, template_from
from muster.scheduler.objects.fields import mapping_field

if TYPE_CHECKING:
    from muster.scheduler.state.store import ClusterStore

Put = Callable[["ClusterStore", Mapping[str, Any]], None]
Remove = Callable[["ClusterStore", str, str], object]
Record = Callable[["ClusterStore", str, str], object]

DEVICE_CLUSTER_SCOPED = frozenset({"ResourceSlice", "DeviceClass"})


def _name(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = mapping_field(obj.get("metadata"), "metadata")
    return str(metadata.get("namespace") or "default"), str(metadata.get("name") or "")


def _put_slice(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    record = slice_from(obj)
    if state.devices.slices.get(record.name) != record:
        state.devices.slices[record.name] = record
        state.devices.changed(slices=True)


def _remove_slice(state: ClusterStore, _: str, name: str) -> object:
    found = state.devices.slices.pop(name, None)
    if found is not None:
        state.devices.changed(slices=True)
    return found


def _put_class(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    name, selectors = class_from(obj)
    if state.devices.classes.get(name) != selectors:
        state.devices.classes[name] = selectors
        state.devices.changed()


def _remove_class(state: ClusterStore, _: str, name: str) -> object:
    found = state.devices.classes.pop(name, None)
    if found is not None:
        state.devices.changed()
    return found


def _put_claim(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    record = claim_from(obj)
    key = (record.namespace, record.name)
    if state.devices.claims.get(key) != record:
        state.devices.claims[key] = record
        state.devices.changed(claim=key)


def _remove_claim(state: ClusterStore, namespace: str, name: str) -> object:
    found = state.devices.claims.pop((namespace, name), None)
    if found is not None:
        state.devices.changed(claim=(namespace, name))
    return found


def _put_template(state: ClusterStore, obj: Mapping[str, Any]) -> None:
    key = _name(obj)
    spec = template_from(obj)
    if state.devices.templates.get(key) != spec:
        state.devices.templates[key] = spec
        state.devices.changed()


def _remove_template(state: ClusterStore, namespace: str, name: str) -> object:
    found = state.devices.templates.pop((namespace, name), None)
    if found is not None:
        state.devices.changed()
    return found


DEVICE_KINDS: dict[str, tuple[Put, Remove, Record]] = {
    "ResourceSlice": (
        _put_slice,
        _remove_slice,
        lambda state, _, name: state.devices.slices.get(name),
    ),
    "DeviceClass": (
        _put_class,
        _remove_class,
        lambda state, _, name: state.devices.classes.get(name),
    ),
    "ResourceClaim": (
        _put_claim,
        _remove_claim,
        lambda state, namespace, name: state.devices.claims.get((namespace, name)),
    ),
    "ResourceClaimTemplate": (
        _put_template,
        _remove_template,
        lambda state, namespace, name: state.devices.templates.get((namespace, name)),
    ),
}
