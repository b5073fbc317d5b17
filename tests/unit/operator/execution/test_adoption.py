"""The adopter: each adopted PodGroup's Muster PodGroup made, sized, its status told."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from muster.api.adoption import SCHEDULER_PLUGINS, VOLCANO, Adoption, adopted_pod_group
from muster.api.priority import with_resolved_priority
from muster.client.kube import KubeError
from muster.operator.execution.adoption import Adopter

ADOPTION = Adoption(
    apis=(SCHEDULER_PLUGINS, VOLCANO),
    scheduler_names=("volcano",),
    namespace_selector={"matchLabels": {"adopt": "yes"}},
)


class Kube:
    """Records each request; a POST of what exists answers 409, a GET what exists."""

    def __init__(self, existing: dict[str, Any] | None = None) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.existing = existing or {}

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.requests.append((method, path, body))
        if method == "POST" and self.existing:
            raise KubeError(409, "AlreadyExists", path)
        if method == "GET":
            return self.existing
        return body


class Events:
    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    async def record(self, involved: Any, kind: str, reason: str, message: str) -> None:
        self.told.append((involved["name"], reason))


def foreign(api_version: str = "scheduling.volcano.sh/v1beta1", size: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": "ray-a-pg", "namespace": "ml", "uid": "u1"},
        "spec": {"minMember": size},
    }


CLASSES = [
    {"metadata": {"name": "research"}, "value": 1000},
    {"metadata": {"name": "system-node-critical"}, "value": 2_000_001_000},
]


async def priority_classes() -> list[dict[str, Any]]:
    return CLASSES


def adopter(kube: Kube, events: Events | None = None, *, labels: Any = None) -> Adopter:
    made = Adopter(kube, events or Events(), ADOPTION, priority_classes=priority_classes)  # type: ignore[arg-type]
    made.namespaces.upsert({"metadata": {"name": "ml", "labels": labels or {"adopt": "yes"}}})
    return made


def work(made: Adopter, api: str = "volcano") -> None:
    asyncio.run(made._adopt((api, "ml", "ray-a-pg")))


def test_an_adopted_group_in_an_adopted_namespace_gets_its_muster_pod_group() -> None:
    kube = Kube()
    events = Events()
    made = adopter(kube, events)
    made.foreign_sink(VOLCANO).upsert(foreign())
    work(made)
    assert events.told == [("ray-a-pg", "Adopted")]
    [(method, path, body)] = kube.requests
    assert (method, path) == ("POST", "/apis/scheduling.muster.dev/v1beta1/namespaces/ml/podgroups")
    assert body == with_resolved_priority(adopted_pod_group(foreign(), VOLCANO), CLASSES)
    assert (body["spec"]["priority"], body["spec"]["preemptionPolicy"]) == (
        0,
        "PreemptLowerPriority",
    )


def test_an_adopted_group_gets_the_priority_of_the_class_it_names() -> None:
    kube = Kube()
    made = adopter(kube)
    group = foreign()
    group["spec"]["priorityClassName"] = "research"
    made.foreign_sink(VOLCANO).upsert(group)
    work(made)
    [(_, _, body)] = kube.requests
    assert (body["spec"]["priorityClassName"], body["spec"]["priority"]) == ("research", 1000)


@pytest.mark.parametrize("named", ["system-node-critical", "made-up"])
def test_a_class_admission_would_refuse_makes_nothing_and_is_told_once(named: str) -> None:
    kube = Kube()
    events = Events()
    made = adopter(kube, events)
    group = foreign()
    group["spec"]["priorityClassName"] = named
    made.foreign_sink(VOLCANO).upsert(group)
    work(made)
    work(made)
    assert kube.requests == []
    assert events.told == [("ray-a-pg", "AdoptionRefused")]


def test_nothing_is_done_outside_the_adopted_namespaces() -> None:
    kube = Kube()
    made = adopter(kube, labels={"adopt": "no"})
    made.foreign_sink(VOLCANO).upsert(foreign())
    work(made)
    assert kube.requests == []
    assert len(made.queue) == 1  # queued when it came; labelled, it waits there still
    made.namespaces.upsert({"metadata": {"name": "ml", "labels": {"adopt": "yes"}}})
    assert len(made.queue) == 1


def test_a_namespace_being_deleted_is_adopted_no_more() -> None:
    made = adopter(Kube())
    assert made.adopts("ml")
    made.namespaces.upsert(
        {"metadata": {"name": "ml", "labels": {"adopt": "yes"}, "deletionTimestamp": "now"}}
    )
    assert not made.adopts("ml")


def test_a_made_group_follows_min_member_and_its_status_is_told_the_api_s_way() -> None:
    kube = Kube()
    made = adopter(kube)
    group = foreign("scheduling.x-k8s.io/v1alpha1", size=4)
    made.foreign_sink(SCHEDULER_PLUGINS).upsert(group)
    ours = adopted_pod_group(foreign("scheduling.x-k8s.io/v1alpha1", size=3), SCHEDULER_PLUGINS)
    made.upsert(ours)
    work(made, "scheduler-plugins")
    (resize_method, resize_path, resize), (method, path, patch) = kube.requests
    assert resize_method == "PATCH" and resize_path.endswith(
        "/scheduling.muster.dev/v1beta1/namespaces/ml/podgroups/ray-a-pg"
    )
    assert resize[-1] == {
        "op": "replace",
        "path": "/spec/schedulingPolicy/gang/minCount",
        "value": 4,
    }
    assert (method, path) == (
        "PATCH",
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/ray-a-pg/status",
    )
    assert patch["status"]["phase"] == "Pending"


def test_volcano_status_is_written_into_the_object() -> None:
    kube = Kube()
    made = adopter(kube)
    made.foreign_sink(VOLCANO).upsert(foreign())
    ours = copy.deepcopy(adopted_pod_group(foreign(), VOLCANO))
    ours["status"] = {
        "conditions": [{"type": "PodGroupScheduled", "status": "False", "reason": "WaitingForPods"}]
    }
    made.upsert(ours)
    work(made)
    [(method, path, patch)] = kube.requests
    assert (method, path) == (
        "PATCH",
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups/ray-a-pg",
    )
    assert patch["status"]["phase"] == "Inqueue"
    work(made)  # told already: the answer is what it compares with next
    assert len(kube.requests) == 1


def test_a_muster_group_of_that_name_it_does_not_own_is_told_once_and_left_alone() -> None:
    kube = Kube(existing={"metadata": {"name": "ray-a-pg", "ownerReferences": []}})
    events = Events()
    made = adopter(kube, events)
    made.foreign_sink(VOLCANO).upsert(foreign())
    work(made)
    work(made)
    assert [method for method, _, _ in kube.requests] == ["POST", "GET", "POST", "GET"]
    assert events.told == [("ray-a-pg", "AdoptionConflict")]


def test_a_min_resources_beyond_the_cluster_is_told_once_and_judges_nothing() -> None:
    kube = Kube()
    events = Events()
    made = Adopter(
        kube,  # type: ignore[arg-type]
        events,  # type: ignore[arg-type]
        ADOPTION,
        priority_classes=priority_classes,
        capacity=lambda: {"cpu": 8000, "nvidia.com/gpu": 4},
    )
    made.namespaces.upsert({"metadata": {"name": "ml", "labels": {"adopt": "yes"}}})
    group = foreign()
    group["spec"]["minResources"] = {"cpu": "4", "nvidia.com/gpu": "8"}
    made.foreign_sink(VOLCANO).upsert(group)
    made.upsert(adopted_pod_group(group, VOLCANO))
    work(made)
    asyncio.run(made._precheck(group))  # the same ask again: told already
    assert events.told == [("ray-a-pg", "MinResourcesBeyondCluster")]
    [(_, _, patch)] = kube.requests  # its status is written as for any gang
    assert patch["status"]["phase"] == "Pending"


def test_nothing_is_prechecked_before_the_nodes_are_listed() -> None:
    events = Events()
    made = adopter(Kube(), events)
    group = foreign()
    group["spec"]["minResources"] = {"cpu": "4000"}
    made.foreign_sink(VOLCANO).upsert(group)
    made.upsert(adopted_pod_group(group, VOLCANO))
    work(made)
    assert events.told == []
