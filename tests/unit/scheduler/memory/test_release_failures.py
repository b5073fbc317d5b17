"""A release the API server does not carry out, through whole cycles: a refusal rolls
the gang back at once quoting the API, any other failure is retried on the release's
one clock until its deadline, and a failure never outlives the release it was seen in."""

from __future__ import annotations

from muster.api.keys import GroupKey, PodKey
from muster.api.times import rfc3339
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.plan import Evict, Release, StepKind
from muster.scheduler.decisions.results import CycleResult, Reason
from muster.scheduler.memory.release_failures import RETRY_SECONDS
from tests.unit.scheduler.fake_api import FakeApi, admitted

NOW = 1_798_761_600.0
CONFIG = EngineConfig(release_timeout=60.0, rollback_backoff=10.0)
DENIED = (
    "pods \"g-2\" is forbidden: ValidatingAdmissionPolicy 'no-release' with binding "
    "'no-release' denied request: this pod may not be released"
)


def a_gang() -> tuple[FakeApi, GroupKey, list[PodKey]]:
    api = FakeApi(now=NOW, config=CONFIG)
    for _ in range(2):
        api.add_node(cpu=2)
    key = api.add_gang("g", size=2, min_count=2, cpu=2)
    members = sorted(PodKey("default", obj["metadata"]["name"]) for obj in api.members(key))
    return api, key, members


def step_of(result: CycleResult, key: GroupKey) -> StepKind:
    [step] = [s for s in result.plan.steps if s.group == key]
    return step.kind


def released(result: CycleResult, key: GroupKey) -> set[str]:
    return {
        pod
        for step in result.plan.steps
        for action in step.actions
        if isinstance(action, Release) and action.group == key
        for pod, _ in action.placements
    }


def scheduled(api: FakeApi, key: GroupKey) -> dict[str, str]:
    condition: dict[str, str] = api.groups[key]["status"]["conditions"][0]
    return condition


def test_a_refused_release_rolls_the_gang_back_at_once_with_the_apis_words() -> None:
    api, key, (first, second) = a_gang()
    api.refuse_release[second] = (403, DENIED)
    api.cycle()
    api.bind(first)
    api.now += 0.5
    result = api.cycle()
    assert step_of(result, key) is StepKind.ROLL_BACK
    [step] = [s for s in result.plan.steps if s.group == key]
    assert step.actions[-1] == Evict((first,), force=True)  # the refused pod is still gated
    condition = scheduled(api, key)
    assert (condition["status"], condition["reason"]) == ("False", Reason.ROLLED_BACK)
    assert (
        f'the API server refused to release pod {second.name}: "{DENIED}"' in (condition["message"])
    )
    assert "refusals" not in api.groups[key]["status"]  # no node is to blame


def test_a_422_is_a_refusal_too_and_a_refusal_of_several_pods_counts_them() -> None:
    api, key, members = a_gang()
    for member in members:
        api.refuse_release[member] = (422, "Invalid value: denied")
    api.cycle()
    result = api.cycle()
    assert step_of(result, key) is StepKind.ROLL_BACK
    assert "(and 1 more pod(s))" in scheduled(api, key)["message"]


def test_a_failed_release_is_retried_on_the_admissions_clock_and_rolled_back_at_its_end() -> None:
    api, key, (first, second) = a_gang()
    api.refuse_release[second] = (500, "etcdserver: request timed out")
    api.cycle()
    started = api.groups[key]["status"]["lifecycle"]["releaseStarted"]
    assert started == rfc3339(NOW)
    api.bind(first)
    api.now += RETRY_SECONDS / 2
    soon = api.cycle()
    assert step_of(soon, key) is StepKind.FOLLOW and not released(soon, key)
    assert soon.plan.wake_at == NOW + RETRY_SECONDS
    api.now = NOW + RETRY_SECONDS
    again = api.cycle()
    assert released(again, key) == {second.name}
    assert api.groups[key]["status"]["lifecycle"]["releaseStarted"] == started
    api.now = NOW + CONFIG.release_timeout
    late = api.cycle()
    assert step_of(late, key) is StepKind.ROLL_BACK
    message = scheduled(api, key)["message"]
    assert f"1 pod(s) not bound within 60s of release: {second.name}" in message
    assert f'releasing pod {second.name} failed: "etcdserver: request timed out"' in message


def test_a_failure_passes_and_the_gang_completes_on_the_same_clock() -> None:
    api, key, (first, second) = a_gang()
    api.refuse_release[second] = (0, "connection reset by peer")
    api.cycle()
    del api.refuse_release[second]
    api.now += RETRY_SECONDS
    assert released(api.cycle(), key) == {second.name}
    api.bind(first)
    api.bind(second)
    api.now += 1
    api.cycle()
    assert admitted(api.groups[key]["status"])
    assert api.groups[key]["status"]["lifecycle"] == {
        "rollbacks": 0,
        "releaseStarted": rfc3339(NOW),
    }


def test_a_refusal_seen_in_an_earlier_release_does_not_decide_about_a_later_one() -> None:
    api, key, (_, second) = a_gang()
    api.refuse_release[second] = (403, DENIED)
    api.cycle()
    api.cycle()  # rolled back; the refused pod stays gated, and its failure with it
    api.finish_leaving()
    assert second in api.state.release_failures
    del api.refuse_release[second]  # the policy is gone
    api.now += 11  # past the backoff
    readmission = schedule(api.state, now=api.now, config=CONFIG)
    assert readmission.admissions
    api.execute(readmission.plan, limit=1)  # its plan written, its release not yet made
    finishing = api.cycle()
    assert step_of(finishing, key) is StepKind.FOLLOW
    assert second.name in released(finishing, key)


def test_a_restarted_operator_finishes_a_release_on_its_clock_without_restarting_it() -> None:
    api, key, (first, second) = a_gang()
    api.cycle(crash_after=1)  # the plan written, nothing released, then a crash
    assert admitted(api.groups[key]["status"])
    api.now += 10
    finishing = api.cycle()
    assert released(finishing, key) == {first.name, second.name}
    assert api.groups[key]["status"]["lifecycle"]["releaseStarted"] == rfc3339(NOW)
    api.now = NOW + CONFIG.release_timeout
    assert step_of(api.cycle(), key) is StepKind.ROLL_BACK
    assert "2 pod(s) not bound within 60s of release" in scheduled(api, key)["message"]


def test_members_kept_back_by_a_raised_min_count_are_not_late_past_the_release_timeout() -> None:
    api, key, _ = a_gang()
    api.cycle(crash_after=1)  # the admission's status write, nothing released
    api.set_min_count(key, 3)  # beyond what fits: its members are kept back
    api.cycle()
    api.now += CONFIG.release_timeout + 1
    kept = api.cycle()
    assert not [step for step in kept.plan.steps if step.group == key]  # no rollback, no release
    assert admitted(api.groups[key]["status"])
