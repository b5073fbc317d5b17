"""The devices that count (newest pool generations), the devices allocated, a pod's needs."""

from __future__ import annotations

from muster.api.keys import PodKey
from muster.scheduler.devices.book import CLAIM_MISSING, TEMPLATE_MISSING
from muster.scheduler.devices.intake import PodClaim
from tests.unit.scheduler.builders import cluster, pod
from tests.unit.scheduler.device_builders import (
    DRIVER,
    claim,
    claim_template,
    from_template,
    request,
    resource_slice,
)


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    state = cluster(
        resource_slice("n1", 2, generation=1, name="old"),
        resource_slice("n1", 4, generation=2, name="new"),
    )
    pools = state.devices.pools()
    assert len(pools.on_node["n1"]) == 4
    assert pools.on_node["n1"][3].id == (DRIVER, "n1", "gpu-3")
    assert not pools.incomplete


def test_a_pool_missing_slices_of_its_generation_is_incomplete() -> None:
    state = cluster(resource_slice("n1", 2, slice_count=2))
    assert state.devices.pools().incomplete == frozenset({"n1"})


def test_a_slice_not_local_to_one_node_is_not_counted() -> None:
    obj = resource_slice("n1", 2)
    del obj["spec"]["nodeName"]
    obj["spec"]["allNodes"] = True
    assert cluster(obj).devices.pools().on_node == {}


def test_devices_allocated_in_claims_status_are_known_and_forgotten_with_the_claim() -> None:
    state = cluster(resource_slice("n1", 2), claim("c", allocated=[("n1", "gpu-1")]))
    assert state.devices.allocated() == {(DRIVER, "n1", "gpu-1")}
    state.delete("ResourceClaim", "default", "c")
    assert state.devices.allocated() == frozenset()


def test_a_pods_needs_are_its_claims_or_the_requests_of_its_template() -> None:
    state = cluster(
        claim("team", request(count=2)), claim_template("one-gpu"), claim("w-0-gpu-abc")
    )
    needs = state.devices.needs(
        "default",
        "w-0",
        (
            PodClaim("shared", "team", None, shared=True),
            PodClaim("gpu", "w-0-gpu-abc", "one-gpu"),
            PodClaim("spare", None, "one-gpu"),
        ),
    )
    assert not isinstance(needs, str)
    assert [(need.key, need.shared, need.requests[0].count) for need in needs] == [
        (("default", "team"), True, 2),
        (("default", "w-0-gpu-abc"), False, 1),
        (("default", "w-0", "spare"), False, 1),
    ]


def test_a_claim_named_in_the_status_but_not_seen_yet_is_its_templates() -> None:
    state = cluster(claim_template("one-gpu"))
    needs = state.devices.needs("default", "w-0", (PodClaim("gpu", "w-0-gpu-abc", "one-gpu"),))
    assert not isinstance(needs, str)
    assert needs[0].key == ("default", "w-0-gpu-abc")


def test_a_missing_shared_claim_or_template_is_why_the_pod_cannot_be_placed() -> None:
    state = cluster()
    shared = (PodClaim("gpu", "team", None, shared=True),)
    assert state.devices.needs("default", "p", shared) == CLAIM_MISSING.format(name="team")
    made = (PodClaim("gpu", None, "one-gpu"),)
    assert state.devices.needs("default", "p", made) == TEMPLATE_MISSING.format(name="one-gpu")


def test_pods_with_claims_are_indexed_while_they_are_there() -> None:
    state = cluster(pod("p", spec=from_template("one-gpu")), pod("plain"))
    assert set(state.devices.claimants) == {PodKey("default", "p")}
    state.delete("Pod", "default", "p")
    assert not state.devices.claimants


def test_a_pod_that_left_lets_go_of_its_own_claims_and_of_shared_ones_no_pod_names() -> None:
    state = cluster(
        claim("w-0-gpu", allocated=[("n1", "gpu-0")]),
        claim("team", allocated=[("n1", "gpu-1")]),
        pod("w-1", spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": "team"}]}),
    )
    made = PodClaim("gpu", "w-0-gpu", "one-gpu")
    shared = PodClaim("gpu", "team", None, shared=True)
    state.devices.deallocate("default", (made, shared))
    assert ("default", "w-0-gpu") not in state.devices.claims
    assert state.devices.claims[("default", "team")].allocated is not None  # w-1 names it
    state.delete("Pod", "default", "w-1")
    state.devices.deallocate("default", (shared,))
    assert state.devices.claims[("default", "team")].allocated is None
    assert state.devices.allocated() == frozenset()


def test_claims_made_for_a_pod_hold_devices_for_it_until_deleted_or_deallocated() -> None:
    made = claim("w-0-gpu", allocated=[("n1", "gpu-0")])
    made["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "w-0", "controller": True}]
    state = cluster(made)
    assert state.devices.allocated_for("default", "w-0")
    assert not state.devices.allocated_for("default", "w-1")
    assert not state.devices.allocated_for("other", "w-0")
    del made["status"]
    state.apply("ResourceClaim", made)
    assert not state.devices.allocated_for("default", "w-0")


def test_what_a_pod_needs_is_read_again_when_its_claim_changes() -> None:
    state = cluster(claim("team"), claim("other"))
    claims = (PodClaim("gpu", "team", None, shared=True),)
    before = state.devices.needs("default", "p", claims)
    assert not isinstance(before, str) and before[0].allocated is None
    state.apply("ResourceClaim", claim("other", allocated=[("n1", "gpu-1")]))
    assert state.devices.needs("default", "p", claims) is before  # another claim changed
    state.apply("ResourceClaim", claim("team", allocated=[("n1", "gpu-0")]))
    after = state.devices.needs("default", "p", claims)
    assert not isinstance(after, str) and after[0].allocated == ((DRIVER, "n1", "gpu-0"),)
