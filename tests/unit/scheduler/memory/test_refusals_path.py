"""kube-scheduler refusing a released pod, through whole cycles: the rollback quotes it,
the node is remembered and avoided, the gang stops being planned after
`max_rollbacks`, and both memories reset when they should."""

from __future__ import annotations

from muster.api.keys import GroupKey, PodKey
from muster.scheduler import EngineConfig
from muster.scheduler.decisions.plan import StepKind
from muster.scheduler.decisions.results import Reason
from tests.unit.scheduler.fake_api import FakeApi, admitted

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12, max_rollbacks=2, rollback_backoff=10.0)


def released_to(api: FakeApi, key: GroupKey) -> dict[PodKey, str]:
    return {
        PodKey(obj["metadata"]["namespace"], obj["metadata"]["name"]): obj["spec"]["nodeSelector"][
            "kubernetes.io/hostname"
        ]
        for obj in api.members(key)
        if "nodeSelector" in obj["spec"] and "deletionTimestamp" not in obj["metadata"]
    }


def three_nodes_and_a_gang() -> tuple[FakeApi, GroupKey]:
    api = FakeApi(now=NOW, config=CONFIG)
    for _ in range(3):
        api.add_node(cpu=2)
    return api, api.add_gang("g", size=2, min_count=2, cpu=1)


def refused_once(api: FakeApi, key: GroupKey) -> str:
    """Admit the gang, let kube-scheduler refuse its first pod, roll back, and let the
    evicted pods go; the refused node."""
    api.cycle()
    placed = released_to(api, key)
    assert placed, "admitted and released"
    first = sorted(placed)[0]
    api.bind(first, refuse=True)
    for other in sorted(placed)[1:]:
        api.bind(other)
    result = api.cycle()
    [step] = [s for s in result.plan.steps if s.group == key]
    assert step.kind is StepKind.ROLL_BACK
    api.finish_leaving()
    return placed[first]


def test_a_refusal_rolls_the_gang_back_quoting_kube_scheduler_and_is_avoided_next() -> None:
    api, key = three_nodes_and_a_gang()
    refused = refused_once(api, key)
    status = api.groups[key]["status"]
    scheduled = status["conditions"][0]
    assert (scheduled["status"], scheduled["reason"]) == ("False", "RolledBack")
    assert "kube-scheduler refused pod g-" in scheduled["message"]
    assert f'"0/3 nodes are available: {refused} refused"' in scheduled["message"]
    [remembered] = status["refusals"]["nodes"]
    assert remembered["node"] == refused and remembered["count"] == 1
    assert status["lifecycle"]["rollbacks"] == 1
    api.now += 11  # past the backoff
    api.restart()  # the memory is in the status, not in the operator
    api.cycle()
    assert refused not in set(released_to(api, key).values())
    assert admitted(api.groups[key]["status"])


def test_after_max_rollbacks_the_gang_stays_unschedulable_until_the_node_set_changes() -> None:
    api, key = three_nodes_and_a_gang()
    for _ in range(CONFIG.max_rollbacks):
        refused_once(api, key)
        api.now += 600
    message = api.groups[key]["status"]["conditions"][0]["message"]
    assert "2 such rollbacks in a row: not planned again until a node is added" in message
    result = api.cycle()
    verdict = result.verdicts[key]
    assert verdict.reason is Reason.UNSCHEDULABLE
    assert "kube-scheduler refused its released pods in 2 rollbacks in a row" in verdict.message
    assert not result.admissions and not released_to(api, key)
    api.now += 3600
    assert not api.cycle().admissions, "time alone does not bring it back"
    api.add_node(cpu=2)
    (admission,) = api.cycle().admissions
    assert admission.group == key


def test_the_rollback_count_resets_once_the_gang_binds_whole() -> None:
    api, key = three_nodes_and_a_gang()
    refused = refused_once(api, key)
    api.now += 11
    api.cycle()
    for pod_key in released_to(api, key):
        api.bind(pod_key)
    api.cycle()
    status = api.groups[key]["status"]
    assert "lifecycle" not in status or status["lifecycle"].get("rollbacks", 0) == 0
    assert status["refusals"]["rollbacks"] == 0
    assert [n["node"] for n in status["refusals"]["nodes"]] == [refused], "still avoided"
