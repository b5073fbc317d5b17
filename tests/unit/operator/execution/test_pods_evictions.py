"""Evictions that fail: a PodDisruptionBudget's refusal is not throttling.

The Eviction API answers 429 both when the server throttles and when a budget
refuses (with a `DisruptionBudget` cause); only throttling is retried by the client,
and only a refusal that stands is ever turned into a DELETE, and only for pods the
engine decided must go (`Evict.force`). Against the real API server:
tests/e2e/faults/test_budget_victim.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from muster.api.keys import GroupKey, PodKey
from muster.client.kube import KubeError
from muster.operator.execution.loop import SchedulingLoop
from muster.operator.execution.pods import BatchOutcome, Failure, PodActions
from muster.scheduler.decisions.plan import Evict, Step, StepKind
from tests.unit.client.test_kube import Response as Answer
from tests.unit.client.test_kube import ScriptedApiClient, client
from tests.unit.operator.execution.test_loop import loop_with_victim

BUDGET_REFUSAL = {
    "kind": "Status",
    "reason": "TooManyRequests",
    "message": "Cannot evict pod as it would violate the pod's disruption budget.",
    "details": {"causes": [{"reason": "DisruptionBudget", "message": "needs 3 healthy pods"}]},
}
THROTTLED = {"kind": "Status", "reason": "TooManyRequests", "message": "slow down"}


async def test_a_budget_refusal_comes_back_at_once_and_is_not_throttling() -> None:
    api = ScriptedApiClient(Answer(429, BUDGET_REFUSAL))
    try:
        await client(api).request("POST", "/api/v1/namespaces/a/pods/p/eviction", body={})
    except KubeError as error:
        assert error.budget_refused and not error.throttled
    else:
        raise AssertionError("the refusal was not raised")
    assert len(api.calls) == 1


async def test_throttling_of_an_eviction_is_retried_after_retry_after() -> None:
    api = ScriptedApiClient(Answer(429, THROTTLED, {"Retry-After": "0"}), Answer(201, {}))
    await client(api).request("POST", "/api/v1/namespaces/a/pods/p/eviction", body={})
    assert len(api.calls) == 2


class AnsweringKube:
    """Answers each pod's request with the error scripted for it (or success)."""

    def __init__(self, errors: dict[str, KubeError]) -> None:
        self.errors = errors

    async def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        name = path.split("/")[6]
        if name in self.errors:
            raise self.errors[name]
        return {}


async def test_only_answers_that_stand_count_as_refused() -> None:
    kube = AnsweringKube(
        {
            "budget": KubeError(429, "TooManyRequests", "pdb", causes=("DisruptionBudget",)),
            "forbidden": KubeError(403, "Forbidden", "policy"),
            "throttled": KubeError(429, "TooManyRequests", "slow down"),
            "unanswered": KubeError(0, "Unreachable", "timeout"),
        }
    )
    actions = PodActions(kube, concurrency=4)  # type: ignore[arg-type]
    names = ["budget", "forbidden", "throttled", "unanswered", "fine"]
    outcome = await actions.evict(PodKey("ns", name) for name in names)
    assert outcome.done == (PodKey("ns", "fine"),)
    assert outcome.refused == {PodKey("ns", "budget"), PodKey("ns", "forbidden")}


class RefusingPods:
    """Evictions answer as scripted; deletions succeed and are recorded."""

    def __init__(self, outcome: BatchOutcome) -> None:
        self.outcome = outcome
        self.deleted: list[PodKey] = []

    async def evict(self, pods: Iterable[PodKey]) -> BatchOutcome:
        return self.outcome

    async def delete(self, pods: Iterable[PodKey]) -> BatchOutcome:
        self.deleted.extend(pods)
        return BatchOutcome(tuple(pods), {})


def refusing(loop: SchedulingLoop) -> RefusingPods:
    budget, throttled = PodKey("ns", "budget"), PodKey("ns", "throttled")
    pods = RefusingPods(
        BatchOutcome(
            done=(PodKey("ns", "gone"),),
            failed={budget: Failure(429, "pdb"), throttled: Failure(429, "slow down")},
            refused=frozenset({budget}),
        )
    )
    loop.pods = pods  # type: ignore[assignment]
    return pods


STEP = Step(GroupKey("ns", "victim"), StepKind.TAKE_DOWN, ())


async def test_pods_that_must_go_are_deleted_when_refused_but_never_when_throttled() -> None:
    loop, _ = loop_with_victim()
    pods = refusing(loop)
    done = await loop._evict(STEP, Evict((PodKey("ns", "budget"),), force=True))
    assert pods.deleted == [PodKey("ns", "budget")]
    assert not done  # the throttled pod is still there: the next cycle asks again


async def test_a_refusal_is_honoured_for_pods_that_may_stay() -> None:
    loop, _ = loop_with_victim()
    pods = refusing(loop)
    assert not await loop._evict(STEP, Evict((PodKey("ns", "budget"),), force=False))
    assert pods.deleted == []
