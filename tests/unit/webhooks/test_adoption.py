"""The pods of adopted PodGroups, at creation: members of their Muster gang."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import kopf

from muster.api.adoption import VOLCANO, Adoption
from muster.api.constants import GANG_GATE, POD_GROUP_LABEL
from muster.webhooks.adoption import ADOPTION_MEMO, adopt_pod

ADOPTION = Adoption(apis=(VOLCANO,), scheduler_names=("volcano",))


def admitted(pod: dict[str, Any], adoption: Adoption | None) -> dict[str, Any]:
    patch = kopf.Patch()
    memo = SimpleNamespace(**{ADOPTION_MEMO: adoption})
    handler = cast(Any, adopt_pod)  # kopf types it as its own callback
    handler(body=kopf.Body(cast(Any, pod)), patch=patch, memo=memo)
    return dict(patch)


def volcano_pod() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "ray-a-worker-0",
            "annotations": {"scheduling.k8s.io/group-name": "ray-a-pg"},
            "labels": {"ray.io/node-type": "worker"},
        },
        "spec": {"schedulerName": "volcano", "containers": []},
    }


def test_a_member_joins_its_gang_gated_and_goes_to_the_default_scheduler() -> None:
    assert admitted(volcano_pod(), ADOPTION) == {
        "metadata": {"labels": {"ray.io/node-type": "worker", POD_GROUP_LABEL: "ray-a-pg"}},
        "spec": {"schedulingGates": [{"name": GANG_GATE}], "schedulerName": "default-scheduler"},
    }


def test_a_replica_that_adopts_nothing_changes_nothing() -> None:
    assert admitted(volcano_pod(), None) == {}


def test_a_pod_already_a_member_is_left_as_it_is() -> None:
    pod = volcano_pod()
    pod["metadata"]["labels"][POD_GROUP_LABEL] = "ray-a-pg"
    pod["spec"] |= {"schedulingGates": [{"name": GANG_GATE}], "schedulerName": "default-scheduler"}
    assert admitted(pod, ADOPTION) == {}
