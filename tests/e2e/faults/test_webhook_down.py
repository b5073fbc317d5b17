"""The admission webhooks unreachable while gang Jobs are created.

The webhook configurations are pointed at a port nothing listens on, as when no
webhook pod is ready behind the Service; the operator itself keeps running. Creating
a gang Job then fails (its webhook fails closed), so no Job can slip in without its
gate; a submitter retries, as any controller that creates Jobs does. A gang Job
admitted before the outage and resumed during it has its pods created (or refused
and retried by the Job controller) meanwhile. Once the webhooks answer again, every
Job exists, and every gang starts whole, each pod pinned by Muster.
"""

from __future__ import annotations

import json
import time

from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

from tests.e2e.faults.faults import webhooks_down
from tests.e2e.support.harness import pinned_to, pods_of, wait_all_bound

OUTAGE_SECONDS = 10.0


def test_gang_jobs_created_while_the_webhooks_are_down_wait_and_then_start(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    for _ in range(2):
        pool.add(gpus=4)
    early = gang_job("early", pool, workers=2)
    early["spec"]["suspend"] = True
    kubectl.apply(early, namespace)
    late = [gang_job(f"late-{i}", pool, workers=2) for i in range(3)]
    refusals = 0
    with webhooks_down(kubectl):
        started = time.monotonic()
        kubectl("patch", "job", "early", "-n", namespace, "-p", '{"spec":{"suspend":false}}')
        while time.monotonic() - started < OUTAGE_SECONDS:
            for job in late:
                created = kubectl(
                    "create", "-n", namespace, "-f", "-", input=json.dumps(job), check=False
                )
                assert created.returncode != 0, "a gang Job was admitted with its webhook down"
                assert "webhook" in created.stderr, created.stderr
                refusals += 1
            time.sleep(1)
        early_pods = len(pods_of(kubectl, namespace, "early"))
    back = time.monotonic()
    for job in late:  # the submitter's next try
        kubectl.apply(job, namespace)
    for name in ("early", *(job["metadata"]["name"] for job in late)):
        pods = wait_all_bound(kubectl, namespace, name, 2, timeout=120)
        assert all(pinned_to(pod) == pod["spec"]["nodeName"] for pod in pods)
    recovered = time.monotonic() - back
    print(
        f"webhooks down: {refusals} creations refused in {OUTAGE_SECONDS:g}s, the resumed "
        f"Job had {early_pods} pods; all 4 gangs bound {recovered:.1f}s after the webhooks "
        "were back"
    )
