"""Admission warnings, as `kubectl apply` prints them, from Muster as installed: a typo
of one of Muster's keys names the key meant, a topology level no node carries is
said to be one at apply time and again in the gang's status, and a tenant's key
comes back bounded however long it is sent. (The native field dropped by the API
server is warned of on a cluster that drops it: tests/e2e/test_operator_native_field.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job, gang_pod_group
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

from muster.api.advice import MAX_WARNING_LENGTH, MAX_WARNINGS
from tests.e2e.support.harness import events_for, pod_group, wait_for_reason

pytestmark = pytest.mark.e2e

WARNING = "Warning: "


def applied(kubectl: Kubectl, namespace: str, obj: dict[str, Any]) -> tuple[int, list[str]]:
    """`kubectl apply` of the object: its exit code and the warnings it printed."""
    result = kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(obj), check=False)
    lines = result.stderr.splitlines()
    return result.returncode, [line.removeprefix(WARNING) for line in lines if WARNING in line]


def test_a_typo_of_a_key_is_warned_at_apply_with_the_key_meant(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    job = gang_job(
        "typo", pool, workers=2, annotations={"scheduling.muster.dev/topology-prefered": "x.io/r"}
    )
    code, warnings = applied(kubectl, namespace, job)
    assert code == 0, "a warning refuses nothing"
    assert warnings == [
        "unknown key scheduling.muster.dev/topology-prefered:"
        " did you mean scheduling.muster.dev/topology-preferred?"
    ]


def test_a_preferred_level_no_node_carries_is_warned_and_the_gang_is_told(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(4)
    level = "example.com/no-such-rack"
    job = gang_job(
        "unheld", pool, workers=2, annotations={"scheduling.muster.dev/topology-preferred": level}
    )
    code, warnings = applied(kubectl, namespace, job)
    assert code == 0
    assert warnings == [f"no node carries the preferred level {level}"]

    condition = wait_for_reason(kubectl, namespace, "unheld", "Scheduled")
    assert condition["message"] == f"2 pods placed (no node carries {level})"
    told = [
        e["message"] for e in events_for(kubectl, namespace, "unheld") if e["reason"] == "Scheduled"
    ]
    assert f"(no node carries {level})" in " ".join(told)


def test_a_required_key_no_node_carries_is_warned_and_the_gang_is_told(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(4)
    job = gang_job(
        "zonless",
        pool,
        workers=2,
        annotations={"scheduling.muster.dev/topology-key": "topology.kubernetes.io/zon"},
    )
    code, warnings = applied(kubectl, namespace, job)
    assert code == 0
    assert warnings == [
        "no node carries the topology key topology.kubernetes.io/zon"
        " (did you mean topology.kubernetes.io/zone?)"
    ]
    condition = wait_for_reason(kubectl, namespace, "zonless", "Unschedulable")
    assert "no node carries topology.kubernetes.io/zon;" in condition["message"]


def test_a_pod_groups_runtime_that_is_not_a_duration_is_warned_and_the_group_kept(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str
) -> None:
    """A PodGroup's runtime is only a hint to the estimates, so a typo is not refused;
    but it is said at apply time rather than left to be ignored in silence."""
    group = gang_pod_group("hinted", 2)
    group["metadata"]["annotations"] = {"scheduling.muster.dev/expected-runtime": "2hh"}
    code, warnings = applied(kubectl, namespace, group)
    assert code == 0
    assert warnings == [
        'expected-runtime "2hh" is not a duration such as 90m, 1h30m or 45s: ignored'
    ]
    assert pod_group(kubectl, namespace, "hinted")["metadata"]["name"] == "hinted"


def test_a_hostile_key_comes_back_cut_and_warnings_stay_few(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """A 60 KB key under Muster's prefix, and a hundred more: the API server refuses
    such keys only after mutating admission, so the gating webhook sees them all."""
    hostile = "scheduling.muster.dev/" + "x" * 60_000
    annotations = {hostile: "v", **{f"scheduling.muster.dev/k{i}": "v" for i in range(100)}}
    job = gang_job("hostile", pool, workers=1, annotations=annotations)
    _, warnings = applied(kubectl, namespace, job)
    assert 1 <= len(warnings) <= MAX_WARNINGS
    assert all(len(warning) <= MAX_WARNING_LENGTH for warning in warnings)
    assert "x" * 100 not in "".join(warnings)
