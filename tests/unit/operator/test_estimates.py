"""Start-time estimates in the operator: a forecast on a budget, few writes, rare events."""

from __future__ import annotations

from muster.operator.estimates import Estimates
from muster.operator.status import Scheduling, StatusChange, desired_status
from muster.scheduler import ClusterState, EngineConfig
from muster.scheduler.results import GroupKey
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod
from tests.unit.scheduler.test_forecast import T0, running

B = GroupKey("default", "b")


def _state(runtime: str, *extra: Obj) -> ClusterState:
    return cluster(
        *extra,
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime=runtime, gpu="1"),
        *gang("b", 4, gpu="1"),
    )


def test_a_waiting_gang_gets_its_start_once_and_again_only_when_it_moves() -> None:
    estimates = Estimates(horizon=86400, interval=30, config=EngineConfig())
    state = _state("1h")
    first = estimates.updates(state, T0)
    assert first[B].fields == {
        "estimatedStartTime": "2026-01-01T01:00:00Z",
        "estimate": {
            "start": "~60m",
            "basis": "declared",
            "waitingFor": "needs 4 nvidia.com/gpu; node gpu frees them at ~01:00 UTC "
            "when default/a ends (expected runtime 60m, declared)",
        },
    }
    assert first[B].moved is None
    assert estimates.updates(state, T0 + 60) == {}  # nothing changed, nothing written
    later = estimates.updates(state, T0 + 20 * 60)  # the wait shown shrank by a third
    assert later[B].fields["estimate"]["start"] == "~40m"
    assert later[B].moved is None
    changed = _state("3h", node("cpu"), pod("web", node_name="cpu"))  # a forecast is due
    moved = estimates.updates(changed, T0 + 21 * 60)
    assert moved[B].fields["estimatedStartTime"] == "2026-01-01T03:00:00Z"
    message = moved[B].moved
    assert message is not None
    assert message.startswith("expected start moved from 01:00 UTC to 03:00 UTC")


def test_a_forecast_waits_for_the_interval_and_for_a_change() -> None:
    estimates = Estimates(horizon=86400, interval=30, config=EngineConfig())
    estimates.updates(_state("1h"), T0)
    first = estimates.last
    estimates.updates(_state("3h"), T0 + 10)
    assert estimates.last is first


def test_the_status_keeps_the_estimate_until_the_gang_is_admitted() -> None:
    pod_group = gang("b", 1)[0]
    fields = {"estimatedStartTime": "2026-01-01T01:00:00Z", "estimate": {"start": "~60m"}}
    waiting = desired_status(pod_group, [], StatusChange(estimate=fields), now="t")
    assert waiting["estimatedStartTime"] == "2026-01-01T01:00:00Z"
    kept = desired_status({**pod_group, "status": waiting}, [], StatusChange(), now="t")
    assert kept["estimate"] == {"start": "~60m"}
    admitted = desired_status(
        {**pod_group, "status": waiting},
        [],
        StatusChange(scheduling=Scheduling(True, "Scheduled", "")),
        now="t",
    )
    assert "estimate" not in admitted and "estimatedStartTime" not in admitted
