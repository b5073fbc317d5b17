"""Adopted PodGroups and their pods: what Muster makes of them."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.adoption import (
    ADOPTED_FROM_LABEL,
    SCHEDULER_PLUGINS,
    VOLCANO,
    adopted_apis,
    adopted_owner,
    adopted_pod_group,
    adopted_pod_patch,
    api_of,
    min_member,
    owned_by,
)
from muster.api.constants import GANG_GATE, POD_GROUP_LABEL

NAMES = ("volcano", "scheduler-plugins-scheduler")


def volcano_group(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "ray-a-pg", "namespace": "ml", "uid": "u1"},
        "spec": spec,
    }


def pod(**extra: Any) -> dict[str, Any]:
    metadata = {"name": "p", "namespace": "ml", **extra.pop("metadata", {})}
    return {"metadata": metadata, "spec": {"schedulerName": "volcano", **extra}}


def test_adopt_names_the_apis_in_a_stable_order_and_refuses_unknown_ones() -> None:
    assert adopted_apis("volcano, scheduler-plugins") == (SCHEDULER_PLUGINS, VOLCANO)
    assert adopted_apis("") == ()
    with pytest.raises(ValueError, match="yunikorn not known"):
        adopted_apis("volcano,yunikorn")


def test_an_object_is_of_the_api_its_api_version_says() -> None:
    assert api_of(volcano_group()) is VOLCANO
    assert api_of({"apiVersion": "scheduling.x-k8s.io/v1alpha1"}) is SCHEDULER_PLUGINS
    assert api_of({"apiVersion": "scheduling.muster.dev/v1beta1"}) is None


@pytest.mark.parametrize(("value", "size"), [(4, 4), (0, 1), (None, 1), (True, 1), ("3", 1)])
def test_min_member_is_a_gang_size_of_at_least_one(value: object, size: int) -> None:
    assert min_member(volcano_group(minMember=value)) == size


def test_an_adopted_group_becomes_a_muster_gang_of_its_name_that_it_owns() -> None:
    made = adopted_pod_group(volcano_group(minMember=4, priorityClassName="high"), VOLCANO)
    assert made["metadata"]["name"] == "ray-a-pg"
    assert made["metadata"]["namespace"] == "ml"
    assert made["metadata"]["labels"] == {ADOPTED_FROM_LABEL: "volcano"}
    assert made["spec"] == {
        "schedulingPolicy": {"gang": {"minCount": 4}},
        "priorityClassName": "high",
    }
    [owner] = made["metadata"]["ownerReferences"]
    assert owner["uid"] == "u1" and owner["controller"] and not owner["blockOwnerDeletion"]
    assert owned_by(made, volcano_group())
    assert not owned_by(made, {"metadata": {"uid": "other"}})
    assert adopted_owner(made) == (VOLCANO, "ray-a-pg")
    assert adopted_owner({"metadata": {"name": "job"}}) is None


def test_a_new_member_pod_gets_the_label_the_gate_and_the_default_scheduler() -> None:
    member = pod(metadata={"annotations": {"scheduling.k8s.io/group-name": "ray-a-pg"}})
    changes = adopted_pod_patch(member, (VOLCANO,), NAMES)
    assert changes == {
        "labels": {POD_GROUP_LABEL: "ray-a-pg"},
        "schedulingGates": [{"name": GANG_GATE}],
        "schedulerName": "default-scheduler",
    }


def test_a_pod_of_an_api_not_adopted_or_of_none_is_left_alone() -> None:
    member = pod(metadata={"annotations": {"scheduling.k8s.io/group-name": "ray-a-pg"}})
    assert adopted_pod_patch(member, (SCHEDULER_PLUGINS,), NAMES) is None
    assert adopted_pod_patch(pod(), (SCHEDULER_PLUGINS, VOLCANO), NAMES) is None


def test_a_pod_naming_its_node_or_another_scheduler_keeps_them() -> None:
    member = pod(
        metadata={"labels": {"scheduling.x-k8s.io/pod-group": "a"}},
        nodeName="n1",
        schedulerName="my-scheduler",
    )
    assert adopted_pod_patch(member, (SCHEDULER_PLUGINS,), NAMES) == {
        "labels": {"scheduling.x-k8s.io/pod-group": "a", POD_GROUP_LABEL: "a"}
    }


def test_a_pod_that_has_it_all_already_needs_nothing() -> None:
    member = pod(
        metadata={"labels": {"scheduling.x-k8s.io/pod-group": "a", POD_GROUP_LABEL: "a"}},
        schedulingGates=[{"name": GANG_GATE}],
        schedulerName="default-scheduler",
    )
    assert adopted_pod_patch(member, (SCHEDULER_PLUGINS,), NAMES) is None
