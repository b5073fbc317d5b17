"""Dynamic Resource Allocation objects read into records, and what is refused as not modelled."""

from __future__ import annotations

import celpy
import pytest

from muster.scheduler.devices.intake import (
    PodClaim,
    claim_from,
    class_from,
    pod_claims,
    slice_from,
    template_from,
)
from muster.scheduler.objects.fields import IntakeError
from tests.unit.scheduler.device_builders import (
    DRIVER,
    claim,
    claim_template,
    device_class,
    request,
    resource_slice,
)


def test_a_slice_keeps_its_pool_node_and_each_device_kind() -> None:
    record = slice_from(resource_slice("n1", 2, generation=3, slice_count=2))
    assert (record.driver, record.pool, record.generation, record.slice_count) == (
        DRIVER,
        "n1",
        3,
        2,
    )
    assert record.node == "n1"
    assert [device.id for device in record.devices] == [
        (DRIVER, "n1", "gpu-0"),
        (DRIVER, "n1", "gpu-1"),
    ]
    kind = record.devices[1].kind
    assert kind.attributes == (("index", 1), ("product", "H100"))
    assert kind.capacity == (("memory", 80 * 2**30),)


def test_a_slice_of_devices_shared_by_claims_is_not_modelled() -> None:
    obj = resource_slice("n1", 1)
    obj["spec"]["devices"][0]["allowMultipleAllocations"] = True
    with pytest.raises(IntakeError, match="shared by claims"):
        slice_from(obj)


def test_a_class_keeps_its_selectors_unparsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Intake runs on the operator's event loop: it never parses an expression (the
    judging process does, `test_selector_cases`)."""

    def parsing(self: celpy.Environment, text: str) -> None:
        raise AssertionError(f"parsed at intake: {text}")

    monkeypatch.setattr(celpy.Environment, "compile", parsing)
    assert class_from(device_class("gpu", "device.driver == 'x'")) == (
        "gpu",
        ("device.driver == 'x'",),
    )
    assert class_from(device_class("gpu", "device.driver =="))[1] == ("device.driver ==",)


def test_a_claim_keeps_its_requests_and_the_devices_of_its_allocation() -> None:
    record = claim_from(
        claim("c", request(count=2), request("all", all_devices=True), allocated=[("n1", "gpu-0")])
    )
    assert [(r.name, r.all_devices, r.count) for r in record.requests] == [
        ("gpu", False, 2),
        ("all", True, 1),
    ]
    assert record.allocated == ((DRIVER, "n1", "gpu-0"),)
    assert claim_from(claim("c")).allocated is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"exactly": {"deviceClassName": "gpu", "adminAccess": True}}, "adminAccess"),
    ],
)
def test_requests_not_modelled_are_refused(change: dict[str, object], why: str) -> None:
    obj = claim("c")
    obj["spec"]["devices"]["requests"][0].update(change)
    with pytest.raises(IntakeError, match=why):
        claim_from(obj)


def test_match_attribute_constraints_are_read_and_others_refused() -> None:
    obj = claim_template("t", request("a"), request("b"))
    obj["spec"]["spec"]["devices"]["constraints"] = [
        {"requests": ["a", "b"], "matchAttribute": "gpu.example.com/numa"}
    ]
    spec = template_from(obj)
    assert [(c.requests, c.attribute) for c in spec.constraints] == [
        (("a", "b"), "gpu.example.com/numa")
    ]
    obj["spec"]["spec"]["devices"]["constraints"] = [{"distinctAttribute": "x.com/y"}]
    with pytest.raises(IntakeError, match="only matchAttribute"):
        template_from(obj)


def test_a_pods_claims_are_named_as_the_resourceclaim_controller_names_them() -> None:
    spec = {
        "resourceClaims": [
            {"name": "shared", "resourceClaimName": "team-gpus"},
            {"name": "made", "resourceClaimTemplateName": "one-gpu"},
            {"name": "pending", "resourceClaimTemplateName": "one-gpu"},
            {"name": "none", "resourceClaimTemplateName": "one-gpu"},
        ]
    }
    status = {
        "resourceClaimStatuses": [
            {"name": "made", "resourceClaimName": "worker-0-made-x7k2p"},
            {"name": "none"},
        ]
    }
    assert pod_claims(spec, status) == (
        PodClaim("shared", "team-gpus", None, shared=True),
        PodClaim("made", "worker-0-made-x7k2p", "one-gpu"),
        PodClaim("pending", None, "one-gpu"),
    )


def test_a_claim_made_for_a_pod_names_it_as_its_owner() -> None:
    obj = claim("w-0-gpu-x7k2p")
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "w-0", "controller": True}
    ]
    assert claim_from(obj).owner == "w-0"
    assert claim_from(claim("team")).owner is None


def test_device_taints_and_the_tolerations_of_requests_are_read() -> None:
    obj = resource_slice("n1", 1)
    obj["spec"]["devices"][0]["taints"] = [{"key": "health", "value": "bad", "effect": "NoExecute"}]
    (device,) = slice_from(obj).devices
    assert [(t.key, t.value, t.effect) for t in device.taints] == [("health", "bad", "NoExecute")]
    tolerant = request()
    tolerant["exactly"]["tolerations"] = [{"key": "health", "operator": "Exists"}]
    (read,) = claim_from(claim("c", tolerant)).requests
    assert [(t.key, t.operator) for t in read.tolerations] == [("health", "Exists")]


def test_a_first_available_list_is_read_in_order() -> None:
    obj = claim("c")
    obj["spec"]["devices"]["requests"] = [
        {
            "name": "gpu",
            "firstAvailable": [
                {"name": "h100", "deviceClassName": "h100", "count": 2},
                {"name": "any", "deviceClassName": "gpu", "allocationMode": "All"},
            ],
        }
    ]
    (read,) = claim_from(obj).requests
    assert read.name == "gpu"
    assert [(o.name, o.class_name, o.count, o.all_devices) for o in read.options] == [
        ("h100", "h100", 2, False),
        ("any", "gpu", 1, True),
    ]
    (plain,) = claim_from(claim("c")).requests
    assert plain.options == (plain,)
