"""What a cluster can offer, said in one line, and refused with the same reason."""

from __future__ import annotations

from muster.api.features import ServedFeatures, minor_of
from muster.api.problems import Problem

CLAIMING = {"containers": [], "resourceClaims": [{"name": "gpu"}]}


def test_minor_of_reads_the_api_servers_version() -> None:
    assert [minor_of(v) for v in ("v1.32.13", "v1.38.0-beta.0", "1.34", "", "v2.0")] == [
        32,
        38,
        34,
        None,
        None,
    ]


def test_a_cluster_that_serves_everything_says_so_and_refuses_nothing() -> None:
    features = ServedFeatures("v1.37.2")
    assert features.off() == []
    assert features.summary() == "Kubernetes v1.37.2: every feature on"
    assert features.claim_problems(CLAIMING, "spec") == []


def test_before_1_34_dra_is_off_because_of_the_version() -> None:
    features = ServedFeatures("v1.32.13", devices=False, kueue=False)
    assert features.summary() == (
        "Kubernetes v1.32.13: DRA off: resource.k8s.io/v1 not served (Kubernetes v1.32.13"
        " < 1.34); Kueue topologies off: kueue.x-k8s.io/v1beta2 not served"
    )


def test_from_1_34_dra_off_means_its_api_is_turned_off() -> None:
    assert ServedFeatures("v1.36.3", devices=False).devices_off() == (
        "DRA off: resource.k8s.io/v1 not served (turned off on this API server"
        " (Kubernetes v1.36.3))"
    )


def test_claims_are_refused_where_dra_is_off_naming_the_field_and_the_reason() -> None:
    features = ServedFeatures("v1.32.13", devices=False)
    assert features.claim_problems(CLAIMING, "spec.template.spec") == [
        Problem(
            "spec.template.spec.resourceClaims",
            "DRA off: resource.k8s.io/v1 not served (Kubernetes v1.32.13 < 1.34): this"
            " cluster cannot allocate the devices these claims ask for",
        )
    ]
    assert features.claim_problems({"containers": [], "resourceClaims": []}, "spec") == []
