"""Gangs that can never start on the dev cluster's layout (2 zones x 2 racks x 2 nodes
of 4 GPUs: 32 GPUs), told so whatever else runs, and gangs that can, told what truly
stops them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import Verdict
from muster.scheduler.forecast.estimate_words import starts_in, waiting_for
from muster.scheduler.forecast.forecast import Outcome, forecast
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
CONFIG = EngineConfig()
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
NEVER = "it does not fit even on an empty cluster: "


def dev_nodes() -> list[Obj]:
    return [
        node(
            f"gpu-{zone}{rack}-{index}",
            cpu="32",
            gpu="4",
            labels={
                HOSTNAME: f"gpu-{zone}{rack}-{index}",
                ZONE: f"zone-{zone}",
                "topology.muster.dev/rack": f"zone-{zone}-rack-{rack}",
            },
        )
        for zone in "ab"
        for rack in "01"
        for index in "01"
    ]


def unknown_runtime() -> Obj:
    """A running pod nobody declared a runtime for (it never ends in a forecast)."""
    return pod("allreduce", gpu="2", node_name="gpu-a0-0", phase="Running")


def one_per_node(app: str, key: str = HOSTNAME) -> dict[str, Any]:
    term = {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}
    return {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    }


NEVER_FITTING: dict[str, tuple[Callable[[], list[Obj]], str]] = {
    "36 GPUs on 32": (
        lambda: gang("big", 9, gpu="4"),
        "8/8 nodes can host a pod of the gang; the gang needs 9 pods, at most 8 fit at once; "
        "short in total: nvidia.com/gpu (needs 36, 32 allocatable)",
    ),
    "a label no node has": (
        lambda: gang("big", 2, gpu="1", spec={"nodeSelector": {"missing": "x"}}),
        "0/8 nodes can host a pod of the gang: 8 node(s) didn't match Pod's node "
        "affinity/selector; the gang needs 2 pods, at most 0 fit at once",
    ),
    "9 one-per-node workers on 8 nodes": (
        lambda: gang("big", 9, gpu="1", spec=one_per_node("big"), labels={"app": "big"}),
        "0/8 nodes can host a pod of the gang once 8 are placed: 8 node(s) didn't match "
        "pod anti-affinity rules; the gang needs 9 pods, at most 8 fit at once",
    ),
    "8-GPU pods on 4-GPU nodes": (
        lambda: gang("big", 2, gpu="8"),
        "0/8 nodes can host a pod of the gang: 8 Insufficient nvidia.com/gpu; the gang "
        "needs 2 pods, at most 0 fit at once; no node has 8 nvidia.com/gpu allocatable",
    ),
    "5 one-per-node workers in one zone of 4 nodes": (
        lambda: gang(
            "big", 5, gpu="1", spec=one_per_node("big"), labels={"app": "big"}, topology_key=ZONE
        ),
        f"in {ZONE}=zone-a, 0/4 nodes can host a pod of the gang once 4 are placed: 4 node(s) "
        "didn't match pod anti-affinity rules; the gang needs 5 pods, at most 4 fit at once "
        f"({ZONE}=zone-a: 4, {ZONE}=zone-b: 4)",
    ),
}


def verdict_of(state_objects: list[Obj]) -> Verdict:
    result = schedule(cluster(*state_objects), now=T0, config=CONFIG)
    return result.verdicts[GroupKey("default", "big")]


@pytest.mark.parametrize("with_unknown", [False, True], ids=["alone", "beside-unknown-runtime"])
@pytest.mark.parametrize("case", sorted(NEVER_FITTING))
def test_a_gang_that_never_fits_says_why_whatever_else_runs(case: str, with_unknown: bool) -> None:
    make, reason = NEVER_FITTING[case]
    objects = [*dev_nodes(), *([unknown_runtime()] if with_unknown else []), *make()]
    verdict = verdict_of(objects)
    assert verdict.message == NEVER + reason
    assert verdict.explanation is not None and verdict.explanation.never
    ahead = forecast(cluster(*objects), now=T0, config=CONFIG)
    estimate = ahead.estimates[GroupKey("default", "big")]
    assert estimate.outcome is Outcome.NEVER
    assert starts_in(estimate, T0, ahead.horizon) == "never"
    words = waiting_for(estimate, ahead.first_cycle.verdicts.get(estimate.group), None)
    assert words == NEVER + reason
    assert "unknown runtime" not in words


def test_a_gang_that_waits_on_pods_of_unknown_runtime_is_told_so() -> None:
    objects = [*dev_nodes(), unknown_runtime(), *gang("big", 8, gpu="4")]
    verdict = verdict_of(objects)
    assert not verdict.message.startswith(NEVER)
    assert verdict.message == (
        "7/8 nodes can host a pod of the gang: 1 Insufficient nvidia.com/gpu; the gang needs "
        "8 pods, at most 7 fit at once; short in total: nvidia.com/gpu (needs 32, 30 free)"
    )
    estimate = forecast(cluster(*objects), now=T0, config=CONFIG).estimates[
        GroupKey("default", "big")
    ]
    assert estimate.outcome is Outcome.UNKNOWN
    assert estimate.unknown == ("default/allreduce",)


def test_capacity_split_in_small_pieces_is_named_only_when_it_is() -> None:
    busy = [
        pod(f"busy-{n}", cpu="0", gpu="3", node_name=n["metadata"]["name"]) for n in dev_nodes()
    ]
    fragmented = verdict_of([*dev_nodes(), *busy, *gang("big", 2, gpu="4")])
    assert fragmented.message.endswith(
        "enough is free in total, but split across nodes in too small pieces"
    )
    selected = {"nodeSelector": {ZONE: "zone-a"}}
    barred = verdict_of([*dev_nodes(), *busy[:4], *gang("big", 5, gpu="1", spec=selected)])
    assert "split across nodes" not in barred.message
    assert barred.message == (
        "4/8 nodes can host a pod of the gang: "
        "4 node(s) didn't match Pod's node affinity/selector; the gang needs 5 pods, "
        "at most 4 fit at once; short in total: nvidia.com/gpu (needs 5, 4 free)"
    )


def test_a_rule_that_stops_a_gang_inside_its_domain_is_named() -> None:
    """One-per-node workers of a zone, with a pod of their kind already on one node
    of each zone: the rule, not the counts per domain, is what stops them now."""
    spec = one_per_node("w")
    blockers = [
        pod(f"old-{n}", cpu="0", gpu="0", node_name=n, labels={"app": "w"}, phase="Running")
        for n in ("gpu-a0-0", "gpu-b0-0")
    ]
    objects = [
        *dev_nodes(),
        *blockers,
        *gang("big", 4, gpu="1", spec=spec, labels={"app": "w"}, topology_key=ZONE),
    ]
    verdict = verdict_of(objects)
    assert verdict.message == (
        f"in {ZONE}=zone-a, 0/4 nodes can host a pod of the gang once 3 are placed: "
        "4 node(s) didn't match pod anti-affinity rules; the gang needs 4 pods, "
        f"at most 3 fit at once ({ZONE}=zone-a: 3, {ZONE}=zone-b: 3)"
    )


def test_only_the_pods_of_unknown_runtime_in_its_way_are_blamed() -> None:
    """A gang that needs the whole of zone b waits on the pod there, not on one in zone a."""
    elsewhere = pod("elsewhere", gpu="1", node_name="gpu-a0-0", phase="Running")
    in_the_way = pod("in-the-way", gpu="1", node_name="gpu-b0-0", phase="Running")
    selected = {"nodeSelector": {ZONE: "zone-b"}}
    objects = [*dev_nodes(), elsewhere, in_the_way, *gang("big", 4, gpu="4", spec=selected)]
    ahead = forecast(cluster(*objects), now=T0, config=CONFIG)
    estimate = ahead.estimates[GroupKey("default", "big")]
    assert estimate.outcome is Outcome.UNKNOWN
    assert estimate.unknown == ("default/in-the-way",)
    words = waiting_for(estimate, ahead.first_cycle.verdicts.get(estimate.group), None)
    assert words.endswith(
        "it waits on capacity taken by pods of unknown runtime: default/in-the-way"
    )


def test_a_gang_that_never_fits_preempts_nobody() -> None:
    low = [
        pod(f"low-{n['metadata']['name']}", gpu="4", node_name=n["metadata"]["name"], priority=1)
        for n in dev_nodes()
    ]
    result = schedule(
        cluster(*dev_nodes(), *low, *gang("big", 9, gpu="4", priority=100)), now=T0, config=CONFIG
    )
    assert result.admissions == ()
    message = result.verdicts[GroupKey("default", "big")].message
    assert message.startswith(NEVER)
    assert "preempting" not in message
