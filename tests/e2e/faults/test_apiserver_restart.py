"""kube-apiserver restarted in the middle of a burst of gang Jobs.

Every watch of the operator breaks at once and every request fails until the server
is back; then the watches resume (or relist), the expanders retry, and the loop goes
on from the cluster as it is. No gang may be left partly bound, none may be lost, and
all must start.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.cluster import Kubectl, LocalCluster
from tests.e2e.faults.faults import metric_total
from tests.e2e.harness import (
    NodePool,
    OperatorProcess,
    bound,
    gang_job,
    pinned_to,
    pods_of,
    wait_all_bound,
)

pytestmark = pytest.mark.faults

GANGS, WORKERS = 8, 2


def test_a_burst_of_gangs_survives_a_kube_apiserver_restart(
    operator: OperatorProcess,
    cluster: LocalCluster,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    for _ in range(GANGS * WORKERS // 4):
        pool.add(gpus=4)
    names = [f"burst-{i}" for i in range(GANGS)]
    errors_before = metric_total(operator, "muster_watch_errors_total")
    first, second = names[: GANGS // 2], names[GANGS // 2 :]
    kubectl.apply(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [gang_job(name, pool, workers=WORKERS) for name in first],
            }
        ),
        namespace,
    )
    started_before = [n for n in first if len(bound(pods_of(kubectl, namespace, n))) == WORKERS]
    cluster.hack("restart", "kube-apiserver")
    back = time.monotonic()
    for name in second:
        kubectl.apply(gang_job(name, pool, workers=WORKERS), namespace)
    for name in names:
        wait_all_bound(kubectl, namespace, name, WORKERS, timeout=120)
    recovered = time.monotonic() - back
    print(f"apiserver restart: all {GANGS} gangs bound {recovered:.1f}s after it was back")

    assert len(started_before) < len(first), "every gang had started before the restart"
    assert operator.process is not None and operator.process.poll() is None
    assert metric_total(operator, "muster_watch_errors_total") > errors_before
    for name in names:
        pods = pods_of(kubectl, namespace, name)
        assert len(pods) == WORKERS
        assert all(pinned_to(pod) == pod["spec"]["nodeName"] for pod in pods)
