"""An etcd compaction under the operator's watches: each gets 410 Gone and relists.

The fault cluster serves watches from etcd and the operator ends its watches every
5 to 10 s, so within seconds of the compaction its watches resume from revisions
etcd no longer has. Each must relist (and count it in `muster_watch_expired_total`),
and scheduling must go on: a gang created just after the compaction starts, and a
gang started before it is left alone.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.cluster import Kubectl, LocalCluster, wait_until
from tests.e2e.faults.faults import metric_labels, metric_total
from tests.e2e.harness import NodePool, OperatorProcess, bound, gang_job, pods_of, wait_all_bound

pytestmark = pytest.mark.faults

EXPIRED = "muster_watch_expired_total"


def test_watches_expired_by_a_compaction_relist_and_scheduling_goes_on(
    operator: OperatorProcess,
    cluster: LocalCluster,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    pool.add(gpus=4)
    kubectl.apply(gang_job("before", pool, workers=2), namespace)
    before = {pod["metadata"]["name"] for pod in wait_all_bound(kubectl, namespace, "before", 2)}
    expired_before = metric_total(operator, EXPIRED)

    cluster.hack("compact")
    compacted = time.monotonic()
    kubectl.apply(gang_job("after", pool, workers=2), namespace)
    wait_until(
        "a watch of the operator to expire (410 Gone)",
        lambda: metric_total(operator, EXPIRED) > expired_before,
        timeout=30,
    )
    wait_all_bound(kubectl, namespace, "after", 2, timeout=60)
    recovered = time.monotonic() - compacted
    print(
        f"compaction: the gang created after it bound {recovered:.1f}s later; "
        f"expired watches: {', '.join(metric_labels(operator, EXPIRED))}"
    )

    still = {pod["metadata"]["name"] for pod in bound(pods_of(kubectl, namespace, "before"))}
    assert still == before
    assert operator.process is not None and operator.process.poll() is None
