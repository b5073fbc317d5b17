"""The forecast: the engine run forward in time, gang by gang."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.constants import EXPECTED_RUNTIME_ANNOTATION
from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig
from muster.scheduler.forecast.forecast import Outcome, Reach, forecast
from muster.scheduler.memory.runtimes import Basis
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod_group
from tests.unit.scheduler.device_builders import (
    claim,
    claim_template,
    device_class,
    from_template,
    request,
    resource_slice,
    sharing,
)

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
CONFIG = EngineConfig()


def _with_runtime(objects: list[Obj], runtime: str) -> list[Obj]:
    objects[0]["metadata"]["annotations"] = {EXPECTED_RUNTIME_ANNOTATION: runtime}
    return objects


def running(
    name: str, size: int, nodes: list[str], *, runtime: str | None, **args: Any
) -> list[Obj]:
    """An admitted gang whose pods started at T0 on `nodes` (one pod per node, in turn)."""
    objects = gang(name, size, **args)
    plan = {f"{name}-{i}": nodes[i % len(nodes)] for i in range(size)}
    priority = args.get("priority")
    objects[0] = pod_group(name, min_count=size, admitted=True, plan=plan, priority=priority)
    for member in objects[1:]:
        member["spec"]["nodeName"] = plan[member["metadata"]["name"]]
        member["spec"].pop("schedulingGates", None)
        member["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    return _with_runtime(objects, runtime) if runtime else objects


def key(name: str) -> GroupKey:
    return GroupKey("default", name)


def test_a_gang_of_the_same_shape_starts_when_the_running_one_ends() -> None:
    state = cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime="60s", gpu="1"),
        *gang("b", 4, gpu="1", created="2026-01-01T00:00:05Z"),
    )
    result = forecast(state, now=T0 + 10, config=CONFIG)
    estimate = result.estimates[key("b")]
    assert estimate.outcome is Outcome.STARTS
    assert estimate.start == T0 + 60
    assert estimate.basis is Basis.DECLARED
    assert [vacancy.owner for vacancy in estimate.vacancies] == ["default/a"]


def test_the_state_is_left_as_it_was() -> None:
    state = cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime="60s", gpu="1"),
        *gang("b", 4, gpu="1"),
    )
    forecast(state, now=T0, config=CONFIG)
    assert state.unadmitted_gangs == {key("b")}
    assert len(state.pods) == 8


def test_gangs_ahead_run_for_their_expected_runtime_in_queue_order() -> None:
    state = cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime="60s", gpu="1", priority=100),
        *_with_runtime(gang("low", 4, gpu="1", priority=1), "5m"),
        *_with_runtime(gang("high", 4, gpu="1", priority=10, preemption_policy="Never"), "2m"),
    )
    result = forecast(state, now=T0, config=CONFIG)
    assert result.estimates[key("high")].start == T0 + 60
    assert result.estimates[key("low")].start == T0 + 60 + 120
    starts = [(run.group.name, run.start, run.end) for run in result.timeline]
    assert starts == [
        ("a", T0, T0 + 60),
        ("high", T0 + 60, T0 + 180),
        ("low", T0 + 180, T0 + 480),
    ]


def test_a_small_gang_backfills_before_a_large_one() -> None:
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        *running("a", 4, ["n1"], runtime="10m", gpu="1"),
        *running("c", 2, ["n2"], runtime="1m", gpu="1"),
        *_with_runtime(gang("big", 8, gpu="1", created="2026-01-01T00:00:01Z"), "1h"),
        *_with_runtime(gang("small", 2, gpu="1", created="2026-01-01T00:00:02Z"), "1m"),
    )
    result = forecast(state, now=T0, config=CONFIG)
    assert result.estimates[key("small")].start == T0  # fits now on n2's free half
    assert result.estimates[key("big")].start == T0 + 600


def test_capacity_held_by_pods_of_unknown_runtime_gives_no_time() -> None:
    state = cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime=None, gpu="1"),
        *gang("b", 4, gpu="1"),
    )
    estimate = forecast(state, now=T0, config=CONFIG).estimates[key("b")]
    assert estimate.outcome is Outcome.UNKNOWN
    assert estimate.unknown == ("default/a",)
    assert "unknown runtime" in estimate.why


def test_a_start_past_the_horizon_is_not_given() -> None:
    state = cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime="30h", gpu="1"),
        *gang("b", 4, gpu="1"),
    )
    estimate = forecast(state, now=T0, config=CONFIG).estimates[key("b")]
    assert estimate.outcome is Outcome.BEYOND_HORIZON
    assert estimate.start is None


def test_a_gang_too_large_for_the_cluster_never_starts() -> None:
    state = cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime="1m", gpu="1"),
        *gang("huge", 8, gpu="1"),
    )
    result = forecast(state, now=T0, config=CONFIG)
    estimate = result.estimates[key("huge")]
    assert estimate.outcome is Outcome.NEVER
    assert estimate.why.startswith("it does not fit even on an empty cluster: ")
    assert result.cycles == 1  # the run does not wait for what never starts


def test_a_starving_gang_holds_nodes_from_the_moment_it_has_waited_long_enough() -> None:
    # big needs both nodes; small ones keep arriving... here: one long small gang
    # would take n2 at 5m, but big starves at 10m and n2 frees at 10m too.
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        *running("a", 4, ["n1"], runtime="20m", gpu="1"),
        *running("c", 4, ["n2"], runtime="15m", gpu="1"),
        *_with_runtime(gang("big", 8, gpu="1", created="2026-01-01T00:00:00Z"), "1h"),
        *_with_runtime(gang("small", 4, gpu="1", created="2026-01-01T00:01:00Z"), "2h"),
    )
    result = forecast(state, now=T0, config=EngineConfig(starvation_seconds=600))
    # at 15m big has starved: n2 is closed for it, small waits behind it
    assert result.estimates[key("big")].start == T0 + 1200
    assert result.estimates[key("small")].start == T0 + 1200 + 3600


def test_without_starvation_holds_the_small_gang_backfills() -> None:
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        *running("a", 4, ["n1"], runtime="20m", gpu="1"),
        *running("c", 4, ["n2"], runtime="15m", gpu="1"),
        *_with_runtime(gang("big", 8, gpu="1", created="2026-01-01T00:00:00Z"), "1h"),
        *_with_runtime(gang("small", 4, gpu="1", created="2026-01-01T00:01:00Z"), "2h"),
    )
    result = forecast(state, now=T0, config=EngineConfig(starvation_seconds=86400))
    assert result.estimates[key("small")].start == T0 + 900
    assert result.estimates[key("big")].start == T0 + 900 + 7200


def test_topology_domains_are_honoured() -> None:
    zone = "topology.kubernetes.io/zone"
    state = cluster(
        node("a1", gpu="2", labels={zone: "a"}),
        node("a2", gpu="2", labels={zone: "a"}),
        node("b1", gpu="2", labels={zone: "b"}),
        node("b2", gpu="2", labels={zone: "b"}),
        *running("x", 4, ["a1", "a2"], runtime="1h", gpu="1"),
        *running("y", 2, ["b1"], runtime="10m", gpu="1"),
        *running("z", 2, ["b2"], runtime="30m", gpu="1"),
        *gang("t", 4, gpu="1", topology_key=zone),
    )
    estimate = forecast(state, now=T0, config=CONFIG).estimates[key("t")]
    assert estimate.start == T0 + 1800
    assert estimate.domain == (zone, "b")
    assert [vacancy.owner for vacancy in estimate.vacancies] == ["default/z", "default/y"]


def test_a_preempting_gang_starts_now_and_its_victims_leave_the_run() -> None:
    state = cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime="1h", gpu="1"),
        *_with_runtime(gang("urgent", 4, gpu="1", priority=10), "1m"),
    )
    result = forecast(state, now=T0, config=CONFIG)
    assert result.estimates[key("urgent")].start == T0
    assert [run.group.name for run in result.timeline] == ["a", "urgent"]


def test_the_budget_bounds_the_run() -> None:
    state = cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime="60s", gpu="1"),
        *_with_runtime(gang("b", 4, gpu="1"), "1m"),
        *_with_runtime(gang("c", 4, gpu="1"), "1m"),
    )
    result = forecast(state, now=T0, config=CONFIG, reach=Reach(cycles=2))
    assert not result.complete
    assert result.estimates[key("b")].start == T0 + 60
    assert result.estimates[key("c")].outcome is Outcome.UNKNOWN


def in_backoff(objects: list[Obj], until: str) -> list[Obj]:
    """The gang rolled back, not to be admitted again before `until`."""
    objects[0]["status"] = {
        "conditions": [
            {"type": "PodGroupScheduled", "status": "False", "reason": "RolledBack"},
        ],
        "lifecycle": {"rollbacks": 1, "backoffUntil": until},
    }
    return objects


def test_a_gang_in_backoff_starts_when_its_backoff_ends_on_a_free_cluster() -> None:
    state = cluster(
        node("gpu", gpu="4"), *in_backoff(gang("b", 4, gpu="1"), "2026-01-01T00:00:30Z")
    )
    estimate = forecast(state, now=T0, config=CONFIG).estimates[key("b")]
    assert estimate.outcome is Outcome.STARTS
    assert estimate.start == T0 + 30
    assert estimate.backoff_until == T0 + 30


@pytest.mark.parametrize(
    ("until", "start", "by_backoff"),
    [("2026-01-01T00:02:00Z", 120, True), ("2026-01-01T00:00:10Z", 60, False)],
    ids=["backoff-ends-last", "capacity-frees-last"],
)
def test_a_gang_in_backoff_starts_when_both_its_backoff_ended_and_capacity_freed(
    until: str, start: float, by_backoff: bool
) -> None:
    state = cluster(
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime="60s", gpu="1"),
        *in_backoff(gang("b", 4, gpu="1"), until),
    )
    estimate = forecast(state, now=T0, config=CONFIG).estimates[key("b")]
    assert estimate.start == T0 + start
    assert estimate.backoff_until == (T0 + start if by_backoff else None)
    assert [vacancy.owner for vacancy in estimate.vacancies] == ["default/a"]


def test_a_gang_waiting_for_claimed_devices_starts_when_their_holders_end() -> None:
    holders = running("a", 2, ["gpu"], runtime="60s", spec=sharing("team"))
    state = cluster(
        node("gpu"),
        device_class(),
        resource_slice("gpu", 2),
        claim("team", request(count=2), allocated=[("gpu", "gpu-0"), ("gpu", "gpu-1")]),
        claim_template("one-gpu"),
        *holders,
        *gang("b", 2, spec=from_template("one-gpu"), created="2026-01-01T00:00:05Z"),
    )
    result = forecast(state, now=T0 + 10, config=CONFIG)
    estimate = result.estimates[key("b")]
    assert (estimate.outcome, estimate.start) == (Outcome.STARTS, T0 + 60)
    assert state.devices.claims[("default", "team")].allocated is not None  # left as it was
