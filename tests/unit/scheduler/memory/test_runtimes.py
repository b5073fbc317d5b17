"""Expected runtimes: parsed from annotations and deadlines, most specific first."""

from __future__ import annotations

from muster.api.constants import (
    ACTIVE_DEADLINE_ANNOTATION,
    CRON_JOB_ANNOTATION,
    EXPECTED_RUNTIME_ANNOTATION,
)
from muster.api.keys import GroupKey, PodKey
from muster.scheduler.forecast.endings import Endings
from muster.scheduler.memory.runtimes import (
    Basis,
    Runtime,
    format_duration,
    observed,
    runtime_from,
    weakest,
)
from tests.unit.scheduler.builders import Obj, cluster, node, pod, pod_group


def test_durations_are_shown_short() -> None:
    assert [format_duration(s) for s in (45, 720, 7200, 9000)] == ["45s", "12m", "2h", "2h30m"]


def test_an_annotation_wins_over_a_deadline() -> None:
    annotations = {EXPECTED_RUNTIME_ANNOTATION: "10m", ACTIVE_DEADLINE_ANNOTATION: "3600"}
    assert runtime_from(annotations) == Runtime(600, Basis.DECLARED)
    assert runtime_from({ACTIVE_DEADLINE_ANNOTATION: "3600"}) == Runtime(3600, Basis.DEADLINE)
    assert runtime_from({}, 120) == Runtime(120, Basis.DEADLINE)
    assert runtime_from({EXPECTED_RUNTIME_ANNOTATION: "soon"}) is None


def test_observed_is_the_median_and_the_weakest_basis_is_the_bound() -> None:
    assert observed([10, 30, 20, 0]) == Runtime(20, Basis.OBSERVED)
    assert observed([]) is None
    assert weakest([Basis.DECLARED, Basis.DEADLINE, Basis.OBSERVED]) is Basis.DEADLINE
    assert weakest([]) is None


def test_runtimes_are_looked_for_pod_first_then_group_then_deadline_then_history() -> None:
    group = pod_group("g", min_count=1)
    group["metadata"]["annotations"] = {ACTIVE_DEADLINE_ANNOTATION: "900"}
    declared = pod("declared", group="g", node_name="n", gated=False)
    declared["metadata"]["annotations"] = {EXPECTED_RUNTIME_ANNOTATION: "5m"}
    plain = pod("plain", group="g", node_name="n", gated=False)
    lone = pod("lone", node_name="n", spec={"activeDeadlineSeconds": 30})
    done = _finished("done", "h", "00:02:00")
    state = cluster(node("n"), group, pod_group("h", min_count=1), declared, plain, lone, done)
    endings = Endings(state, now=0.0)
    record = state.groups[GroupKey("default", "g")]
    runtime_of = {
        name: endings.runtime_of(state.pods[PodKey("default", name)].record, record)
        for name in ("declared", "plain")
    }
    assert runtime_of == {
        "declared": Runtime(300, Basis.DECLARED),
        "plain": Runtime(900, Basis.DEADLINE),
    }
    assert endings.runtime_of(state.pods[PodKey("default", "lone")].record, None) == Runtime(
        30, Basis.DEADLINE
    )
    history = state.groups[GroupKey("default", "h")]
    assert endings.runtime_of(state.pods[PodKey("default", "done")].record, history) == Runtime(
        120, Basis.OBSERVED
    )


def _finished(name: str, group: str, took: str) -> Obj:
    """A Succeeded member pod that ran from midnight for `took` (`00:02:00`)."""
    done = pod(name, group=group, node_name="n", gated=False, phase="Succeeded")
    done["status"].update(
        startTime="2026-01-01T00:00:00Z",
        containerStatuses=[{"state": {"terminated": {"finishedAt": f"2026-01-01T{took}Z"}}}],
    )
    return done


def _of_cron_job(group: Obj, cron_job: str) -> Obj:
    group["metadata"]["annotations"] = {CRON_JOB_ANNOTATION: cron_job}
    return group


def test_a_cron_jobs_new_job_is_expected_to_take_what_its_earlier_jobs_took() -> None:
    state = cluster(
        node("n"),
        _of_cron_job(pod_group("nightly-1", min_count=1), "nightly"),
        _of_cron_job(pod_group("nightly-2", min_count=1), "nightly"),
        _of_cron_job(pod_group("hourly-1", min_count=1), "hourly"),
        _of_cron_job(pod_group("nightly-3", min_count=1), "nightly"),
        _of_cron_job(pod_group("again-1", min_count=1), "again"),
        _of_cron_job(pod_group("again-2", min_count=1), "again"),
        _finished("nightly-1-a", "nightly-1", "00:02:00"),
        _finished("nightly-2-a", "nightly-2", "00:04:00"),
        _finished("nightly-2-b", "nightly-2", "00:03:00"),
        _finished("hourly-1-a", "hourly-1", "00:30:00"),
        _finished("again-1-a", "again-1", "00:10:00"),
        _finished("again-2-a", "again-2", "00:01:00"),
    )
    endings = Endings(state, now=0.0)
    waiting = state.groups[GroupKey("default", "nightly-3")]
    member = pod("nightly-3-a", group="nightly-3")
    state.apply("Pod", member)
    assert endings.runtime_of(state.pods[PodKey("default", "nightly-3-a")].record, waiting) == (
        Runtime(180, Basis.OBSERVED)  # not hourly's
    )
    # a group's own finished pods are more specific than its CronJob's
    again = state.pods[PodKey("default", "again-2-a")].record
    assert endings.runtime_of(again, state.groups[GroupKey("default", "again-2")]) == Runtime(
        60, Basis.OBSERVED
    )
