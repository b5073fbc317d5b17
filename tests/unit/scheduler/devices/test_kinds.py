"""The door for the kinds of Dynamic Resource Allocation: taken in, changed or not, let go."""

from __future__ import annotations

from muster.scheduler import ClusterState
from tests.unit.scheduler.device_builders import (
    claim,
    claim_template,
    device_class,
    resource_slice,
)


def test_each_kind_is_taken_in_and_a_repeat_changes_nothing() -> None:
    state = ClusterState()
    for obj in (resource_slice("n1"), device_class(), claim("c"), claim_template("t")):
        assert state.apply(obj["kind"], obj).changed
        assert not state.apply(obj["kind"], obj).changed
    assert set(state.devices.slices) == {"n1-gpu.example.com"}
    assert set(state.devices.classes) == {"gpu.example.com"}
    assert set(state.devices.claims) == {("default", "c")}
    assert set(state.devices.templates) == {("default", "t")}


def test_an_allocation_is_a_change_and_an_annotation_is_not() -> None:
    state = ClusterState()
    state.apply("ResourceClaim", claim("c"))
    annotated = claim("c")
    annotated["metadata"]["annotations"] = {"note": "x"}
    assert not state.apply("ResourceClaim", annotated).changed
    assert state.apply("ResourceClaim", claim("c", allocated=[("n1", "gpu-0")])).changed


def test_slices_and_classes_are_cluster_scoped_and_deleted_by_name() -> None:
    state = ClusterState()
    state.apply("ResourceSlice", resource_slice("n1"))
    state.apply("DeviceClass", device_class())
    version = state.devices.version
    assert state.delete("ResourceSlice", "default", "n1-gpu.example.com").changed
    assert state.delete("DeviceClass", "", "gpu.example.com").changed
    assert not state.devices.slices and not state.devices.classes
    assert state.devices.version > version
    assert not state.delete("DeviceClass", "", "gpu.example.com").changed


def test_an_object_not_modelled_is_rejected_and_replaces_what_was_there() -> None:
    state = ClusterState()
    state.apply("ResourceClaimTemplate", claim_template("t"))
    odd = claim_template("t")
    odd["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
    applied = state.apply("ResourceClaimTemplate", odd)
    assert applied.rejected is not None and "adminAccess" in applied.rejected
    assert ("default", "t") not in state.devices.templates
