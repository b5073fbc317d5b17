"""When each pod taking capacity is expected to end: declared runtimes first, then
deadlines, then what finished pods of its group (or CronJob) took; unknown ones listed."""

from __future__ import annotations

from typing import Any

from muster.api.constants import CRON_JOB_ANNOTATION, EXPECTED_RUNTIME_ANNOTATION
from muster.api.keys import PodKey
from muster.api.times import rfc3339
from muster.scheduler.forecast.endings import Endings
from muster.scheduler.memory.runtimes import Basis
from tests.unit.scheduler.builders import Obj, cluster, node, pod, pod_group

NOW = 1_798_761_600.0


def running(name: str, *, started: float | None, runtime: str | None = None, **extra: Any) -> Obj:
    obj = pod(name, node_name="n1", **extra)
    if runtime is not None:
        obj["metadata"]["annotations"] = {EXPECTED_RUNTIME_ANNOTATION: runtime}
    obj["status"] = {"phase": "Running"}
    if started is not None:
        obj["status"]["startTime"] = rfc3339(started)
    return obj


def finished(name: str, group: str, *, took: float) -> Obj:
    obj = pod(name, group=group, node_name="n1", phase="Succeeded")
    obj["status"]["startTime"] = rfc3339(NOW - 5_000)
    obj["status"]["containerStatuses"] = [
        {"state": {"terminated": {"finishedAt": rfc3339(NOW - 5_000 + took)}}}
    ]
    return obj


def group(name: str, *, runtime: str | None = None, cron_job: str | None = None) -> Obj:
    obj = pod_group(name, admitted=True)
    annotations = {}
    if runtime is not None:
        annotations[EXPECTED_RUNTIME_ANNOTATION] = runtime
    if cron_job is not None:
        annotations[CRON_JOB_ANNOTATION] = cron_job
    obj["metadata"]["annotations"] = annotations
    obj["status"]["admittedAt"] = rfc3339(NOW - 100)
    return obj


def key(name: str) -> PodKey:
    return PodKey("default", name)


def test_a_pod_ends_at_its_start_plus_its_declared_runtime_and_never_in_the_past() -> None:
    state = cluster(
        node("n1"),
        running("soon", started=NOW - 60, runtime="10m"),
        running("overdue", started=NOW - 10_000, runtime="10m"),
    )
    endings = Endings(state, NOW)
    assert endings.next_end() == NOW
    assert [(e.pod, e.end) for e in endings.until(NOW)] == [(key("overdue"), NOW)]
    (soon,) = endings.until(NOW + 540)
    assert (soon.pod, soon.owner, soon.node, soon.end) == (
        key("soon"),
        "default/soon",
        "n1",
        NOW + 540,
    )
    assert soon.runtime.basis is Basis.DECLARED
    assert endings.next_end() is None


def test_a_member_not_started_counts_from_its_gangs_admission_on_the_groups_runtime() -> None:
    state = cluster(node("n1"), group("g", runtime="1h"), running("g-0", started=None, group="g"))
    (ending,) = Endings(state, NOW).until(NOW + 10_000)
    assert (ending.owner, ending.end) == ("default/g", NOW - 100 + 3_600)


def test_a_pod_of_unknown_runtime_never_ends_and_is_listed() -> None:
    state = cluster(node("n1"), running("plain", started=NOW))
    endings = Endings(state, NOW)
    assert endings.unknown == {key("plain"): "default/plain"}
    assert endings.next_end() is None
    assert endings.last_of([key("plain")]) is None


def test_what_finished_pods_of_the_group_took_is_the_runtime_of_the_others() -> None:
    state = cluster(
        node("n1"),
        group("g"),
        finished("g-0", "g", took=100),
        finished("g-1", "g", took=300),
        running("g-2", started=NOW, group="g"),
    )
    (ending,) = Endings(state, NOW).until(NOW + 10_000)
    assert ending.runtime.basis is Basis.OBSERVED
    assert ending.end == NOW + 200


def test_a_cronjobs_earlier_jobs_tell_what_a_new_one_takes() -> None:
    state = cluster(
        node("n1"),
        group("old", cron_job="nightly"),
        finished("old-0", "old", took=500),
        group("new", cron_job="nightly"),
        running("new-0", started=NOW, group="new"),
    )
    (ending,) = Endings(state, NOW).until(NOW + 10_000)
    assert (ending.pod, ending.end) == (key("new-0"), NOW + 500)


def test_the_last_of_several_pods_and_a_pod_forgotten() -> None:
    state = cluster(
        node("n1"),
        running("a", started=NOW, runtime="1m"),
        running("b", started=NOW, runtime="2m"),
    )
    endings = Endings(state, NOW)
    last = endings.last_of([key("a"), key("b")])
    assert last is not None and last.pod == key("b")
    endings.until(NOW + 60)
    assert endings.last_of([key("a")]) is not None, "an end already passed still counts"
    endings.forget(key("b"))
    assert endings.next_end() is None
    assert endings.last_of([key("a"), key("b")]) is None
