"""kube-apiserver restarted in the middle of a burst of gang Jobs.

Every watch of the operator breaks at once and every request fails until the server
is back; then the watches resume (or relist), the expanders retry, and the loop goes
on from the cluster as it is. No gang may be left partly bound, none may be lost, and
all must start. One gang of the first half has no room until nodes are added after the
restart, so the restart surely lands while a gang waits and the operator must see the
new nodes through its resumed watches. A restart that keeps the server away longer
than the renew deadline (10 s) makes the leader step down and exit (status 2), as
client-go leaders do; the test restarts it as its Deployment would, and the new
process leads and finishes.
"""

from __future__ import annotations

import json
import time

from devtools.cluster.local import LocalCluster
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

from muster.operator.app import EXIT_LOST_LEADERSHIP
from tests.e2e.faults.faults import create_until_admitted, metric_total, supervised
from tests.e2e.support.harness import bound, pinned_to, pods_of, wait_all_bound

GANGS, WORKERS = 8, 2


def test_a_burst_of_gangs_survives_a_kube_apiserver_restart(
    operator: OperatorProcess,
    cluster: LocalCluster,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    pool.add(gpus=(GANGS // 2 - 1) * WORKERS)  # room for all but one gang of the first half
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
    started_before = wait_for_started(kubectl, namespace, first, GANGS // 2 - 1)
    with supervised(operator) as restarts:
        cluster.hack("restart", "kube-apiserver")
        back = time.monotonic()
        for _ in range(GANGS * WORKERS // 4 - 1):
            pool.add(gpus=4)
        pool.add(gpus=WORKERS)
        for name in second:  # refused while a restarted operator's webhooks start
            create_until_admitted(kubectl, namespace, gang_job(name, pool, workers=WORKERS))
        for name in names:
            wait_all_bound(kubectl, namespace, name, WORKERS, timeout=120)
    recovered = time.monotonic() - back
    print(
        f"apiserver restart: all {GANGS} gangs bound {recovered:.1f}s after it was back; "
        f"operator exits meanwhile: {restarts.exits or 'none'}"
    )

    assert len(started_before) == len(first) - 1, "the restart did not land while a gang waited"
    assert restarts.errors == []
    assert set(restarts.exits) <= {EXIT_LOST_LEADERSHIP}, "the operator failed, not stepped down"
    if not restarts.exits:  # the same process saw the outage and lived through it
        assert metric_total(operator, "muster_watch_errors_total") > errors_before
    for name in names:
        pods = pods_of(kubectl, namespace, name)
        assert len(pods) == WORKERS
        assert all(pinned_to(pod) == pod["spec"]["nodeName"] for pod in pods)


def wait_for_started(kubectl: Kubectl, namespace: str, names: list[str], count: int) -> list[str]:
    """The gangs fully bound once `count` of them are, so the restart lands at a known point."""
    deadline = time.monotonic() + 60
    while True:
        started = [n for n in names if len(bound(pods_of(kubectl, namespace, n))) == WORKERS]
        if len(started) >= count or time.monotonic() > deadline:
            return started
        time.sleep(0.5)
