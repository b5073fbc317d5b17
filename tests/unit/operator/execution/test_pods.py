"""The pin: node affinity on the node's name, narrowing whatever the pod required before."""

from __future__ import annotations

from typing import Any

from muster.api.keys import GroupKey, PodKey
from muster.client.kube import KubeError, NotLeadingError
from muster.operator.execution.pods import (
    NOT_LEADING,
    Failure,
    PodActions,
    pinned_terms,
    release_patch,
    ungate_patch,
)
from muster.scheduler.decisions.plan import Release
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.rules.node_affinity import Term
from muster.scheduler.state.intake import node_term

ON_NODE = {"key": "metadata.name", "operator": "In", "values": ["node-7"]}
ZONE = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
SSD = {"key": "disk", "operator": "In", "values": ["ssd"]}
SKIPPED = {"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}
DENIED = "ValidatingAdmissionPolicy 'p' with binding 'p' denied request: no"
STALE = 'Operation cannot be fulfilled on pods "stale": the object has been modified'
GROUP = GroupKey("ns", "g")
VERSIONS = {PodKey("ns", name): "7" for name in ("a", "refused", "unsent", "stale")}


def terms(*raw: dict[str, Any]) -> tuple[Term, ...]:
    """Terms as the engine reads them from a pod."""
    return tuple(node_term(term) for term in raw)


def test_a_pod_without_required_terms_gains_one() -> None:
    assert pinned_terms("node-7", []) == [{"matchFields": [ON_NODE]}]


def test_every_existing_term_is_narrowed_and_none_is_lost() -> None:
    own = terms({"matchExpressions": [ZONE]}, {"matchExpressions": [SSD], "matchFields": []})
    assert pinned_terms("node-7", own) == [
        {"matchExpressions": [ZONE], "matchFields": [ON_NODE]},
        {"matchExpressions": [SSD], "matchFields": [ON_NODE]},
    ]


def test_each_requirement_comes_back_as_the_api_server_stored_it() -> None:
    """Empty lists are left out, as the server leaves them out of what it stores."""
    labelled = {"key": "gpu", "operator": "Exists"}
    own = terms({"matchFields": [SKIPPED]}, {"matchExpressions": [labelled]})
    assert pinned_terms("node-7", own) == [
        {"matchFields": [SKIPPED, ON_NODE]},
        {"matchExpressions": [labelled], "matchFields": [ON_NODE]},
    ]


def test_the_release_removes_the_gate_and_sets_the_pin_in_one_patch() -> None:
    patch = release_patch("node-7", "41", terms({"matchExpressions": [ZONE]}))
    assert patch["metadata"] == {"resourceVersion": "41"}  # only from the version decided on
    assert patch["spec"]["schedulingGates"] == [
        {"$patch": "delete", "name": "scheduling.muster.dev/gang"}
    ]
    required = patch["spec"]["affinity"]["nodeAffinity"]
    assert required["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [ZONE], "matchFields": [ON_NODE]}
    ]
    assert "nodeSelector" not in patch["spec"]


def test_ungating_is_conditional_too() -> None:
    assert ungate_patch("41") == {
        "metadata": {"resourceVersion": "41"},
        "spec": {"schedulingGates": [{"$patch": "delete", "name": "scheduling.muster.dev/gang"}]},
    }


class RecordingKube:
    def __init__(self) -> None:
        self.patches: list[tuple[str, Any]] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if path.endswith("/refused"):
            raise KubeError(422, "Invalid", DENIED)
        if path.endswith("/stale"):
            raise KubeError(409, "Conflict", STALE)
        if path.endswith("/unsent"):
            raise NotLeadingError(method, path)
        self.patches.append((path, kwargs["body"]))
        return {}


async def test_a_release_pins_from_the_pods_own_terms() -> None:
    kube = RecordingKube()
    actions = PodActions(kube, concurrency=4)  # type: ignore[arg-type]
    zoned = (("a", terms({"matchExpressions": [ZONE]})),)
    placements = (("a", "node-7"), ("refused", "x"), ("unsent", "x"))
    outcome = await actions.release(Release(GROUP, placements, zoned), VERSIONS)
    assert outcome.done == (PodKey("ns", "a"),)
    assert outcome.failed == {
        PodKey("ns", "refused"): Failure(422, DENIED),
        PodKey("ns", "unsent"): Failure(0, "PATCH /api/v1/namespaces/ns/pods/unsent not sent"),
    }
    [(_, body)] = kube.patches
    assert body == release_patch("node-7", "7", terms({"matchExpressions": [ZONE]}))


async def test_a_release_from_a_stale_version_is_a_failure_to_retry_not_a_refusal() -> None:
    """409: the pod changed since the cycle read it (or a new leader wrote it). Not a
    refusal: the engine releases it again from the version it has seen by then."""
    kube = RecordingKube()
    actions = PodActions(kube, concurrency=4)  # type: ignore[arg-type]
    outcome = await actions.release(Release(GROUP, (("stale", "node-7"),)), VERSIONS)
    assert outcome.failed == {PodKey("ns", "stale"): Failure(409, STALE)}
    assert not ReleaseFailure(409, STALE, 0.0).refused


async def test_a_pod_of_unknown_version_is_not_released_unconditionally() -> None:
    kube = RecordingKube()
    actions = PodActions(kube, concurrency=4)  # type: ignore[arg-type]
    outcome = await actions.ungate(
        [PodKey("ns", "a"), PodKey("ns", "new")], {PodKey("ns", "a"): "3"}
    )
    assert outcome.done == (PodKey("ns", "a"),)
    assert outcome.failed == {
        PodKey("ns", "new"): Failure(0, "no resourceVersion known for pod ns/new")
    }
    assert kube.patches == [("/api/v1/namespaces/ns/pods/a", ungate_patch("3"))]


async def test_no_batch_starts_without_leadership() -> None:
    kube = RecordingKube()
    actions = PodActions(kube, concurrency=4, still_leading=lambda: False)  # type: ignore[arg-type]
    outcome = await actions.release(Release(GROUP, (("a", "node-7"),)), VERSIONS)
    assert outcome.done == () and outcome.failed == {PodKey("ns", "a"): Failure(0, NOT_LEADING)}
    assert kube.patches == []
