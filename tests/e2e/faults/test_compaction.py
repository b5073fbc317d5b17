"""An etcd compaction under the operator's watches: each gets 410 Gone and relists.

The fault cluster serves watches from etcd and the operator ends its watches every
5 to 10 s, so within seconds of the compaction its watches resume from revisions
etcd no longer has. Each must relist (and count it in `muster_watch_expired_total`),
and scheduling must go on: once watches have expired and relisted, a new gang starts,
and a gang started before the compaction is left alone. (Which watches expire depends
on how fresh each one's resourceVersion was: the API server may send a watch from
etcd a bookmark with the current revision, which it can resume from.)
"""

from __future__ import annotations

import time

from devtools.cluster.local import LocalCluster
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.faults.faults import metric_samples
from tests.e2e.support.harness import bound, pods_of, wait_all_bound

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
    expired_before = metric_samples(operator, EXPIRED)

    def expired_since() -> set[str]:
        now = metric_samples(operator, EXPIRED)
        return {labels for labels, n in now.items() if n > expired_before.get(labels, 0)}

    cluster.hack("compact")
    compacted = time.monotonic()
    wait_until(
        "a watch of the operator to expire (410 Gone) and relist",
        lambda: bool(expired_since()),
        timeout=30,
    )
    relisted = time.monotonic() - compacted
    kubectl.apply(gang_job("after", pool, workers=2), namespace)
    created = time.monotonic()
    wait_all_bound(kubectl, namespace, "after", 2, timeout=60)
    print(
        f"compaction: a first watch expired {relisted:.1f}s after it; a new gang bound "
        f"{time.monotonic() - created:.1f}s after its creation; expired: {sorted(expired_since())}"
    )

    still = {pod["metadata"]["name"] for pod in bound(pods_of(kubectl, namespace, "before"))}
    assert still == before
    assert operator.process is not None and operator.process.poll() is None
