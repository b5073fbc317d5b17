"""An operator started as kube-apiserver restarts: its webhooks serve once it is ready.

A restarted kube-apiserver answers for a moment before its discovery shows every group
(measured: /apis without `batch` and the CRDs' group for about half a second), and kopf
scans the API's resources once, when it starts: a resource missing from that scan
would be answered 404 "The specified resource has no handlers" for the life of the
process, and with failurePolicy Fail every gang Job refused. So the operator is not
ready until every resource its webhooks need is resolved, scans again until it is, and
answers a call that comes before "call again" (503 with Retry-After, which the API
server obeys), never 404.

Five rounds. In each, the operator is killed, kube-apiserver restarted, and a new
operator started while the server is away, its connections held by a proxy
(`HeldProxy`) and let through the moment the server accepts connections again, so
that its first scan lands in the window. A submitter creates a gang Job from then on,
retrying each refusal after a second. Each round, within 30 s of the server's return,
the Job is accepted with the gang gate on its pods' template, no refusal is a 404, and
the gang runs whole. The window was hit: each new operator's own scan missed a
resource and it scanned again (`muster_webhook_resource_rescans_total`), or, as the
operator runs as installed (its ServiceAccount), the restarted server refused its
first requests, discovery included, for want of RBAC it had not read yet; and in at
least one round a call about the Job came before the rescan had found its resource,
was answered 503, and the Job was accepted when the API server called again (counted
in the operator's log), or, as the operator runs as installed behind a stand-in for
its Service that calls only a ready replica, was refused for want of one and made
again by the submitter.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from devtools.cluster.local import LocalCluster
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.gates import has_gang_gate
from tests.e2e.faults.faults import metric_total
from tests.e2e.faults.held_proxy import HeldProxy
from tests.e2e.support.harness import wait_all_bound

ROUNDS, WORKERS = 5, 2
WITHIN = 30.0  # seconds from the API server's return to the gang bound whole
RESCANS = "muster_webhook_resource_rescans_total"
# How the API server reports a webhook's 404 (kopf's "no handlers") to the submitter.
NOT_FOUND = "failed to call webhook: the server could not find the requested resource"
# Logged by the operator for each "call again" answered to the Job's gating webhook.
NOT_READY = "webhook gate-jobs: refused a call with 503"


def answers(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture
def proxied(
    operator: OperatorProcess, tmp_path: Path
) -> Iterator[tuple[OperatorProcess, HeldProxy]]:
    """The operator, which talks to the API server through the proxy during the test,
    and directly again after it."""
    direct = operator.service.credentials
    proxy = HeldProxy.in_front_of(direct)
    operator.service.credentials = proxy.kubeconfig(direct, tmp_path / "kubeconfig")
    try:
        yield operator, proxy
    finally:
        operator.service.credentials = direct
        operator.kill()
        operator.start()
        proxy.close()


def restart_under_a_new_operator(
    cluster: LocalCluster, operator: OperatorProcess, proxy: HeldProxy
) -> tuple[threading.Thread, threading.Thread]:
    """Restart kube-apiserver; start a new operator while it is away, its requests held
    until the server accepts connections again, and return then: the restart and the
    operator's start go on in threads (the latter ends once the operator is ready)."""
    operator.kill()  # how the old one ends does not matter here: quickly
    proxy.hold()
    restart = threading.Thread(target=cluster.hack, args=("restart", "kube-apiserver"))
    restart.start()
    wait_until("kube-apiserver to go away", lambda: not answers(proxy.upstream), timeout=30)
    starting = threading.Thread(target=operator.start, name="operator-start", daemon=True)
    starting.start()
    wait_until("kube-apiserver to be back", lambda: answers(proxy.upstream), 60, 0.02)
    proxy.release()
    return restart, starting


def submitted(
    kubectl: Kubectl, namespace: str, job: dict[str, object], deadline: float
) -> list[str]:
    """Create the Job as a submitter would, retrying each refusal after a second; the
    refusals' messages."""
    refusals: list[str] = []
    while True:
        created = kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(job), check=False)
        if created.returncode == 0:
            return refusals
        refusals.append(created.stderr.strip())
        assert time.monotonic() < deadline, f"never admitted: {refusals}"
        time.sleep(1)


def test_an_operator_started_as_kube_apiserver_restarts_admits_gangs_within_30s(
    proxied: tuple[OperatorProcess, HeldProxy],
    cluster: LocalCluster,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    operator, proxy = proxied
    pool.add(gpus=ROUNDS * WORKERS)
    rescans, refused, asked_again, took = [], [], [], []
    met_unready: list[bool] = []
    for index in range(ROUNDS):
        logged = len(operator.log_path.read_text(errors="replace"))
        restart, starting = restart_under_a_new_operator(cluster, operator, proxy)
        back = time.monotonic()
        name = f"round-{index}"
        job = gang_job(name, pool, workers=WORKERS)
        refusals = submitted(kubectl, namespace, job, deadline=back + WITHIN)
        template = kubectl.json("get", "job", name, "-n", namespace)["spec"]["template"]
        wait_all_bound(kubectl, namespace, name, WORKERS, timeout=back + WITHIN - time.monotonic())
        took.append(time.monotonic() - back)
        restart.join()
        starting.join()
        assert operator.ready(), "the new operator did not become ready"
        rescans.append(metric_total(operator, RESCANS))
        refused.append(len(refusals))
        this_start = operator.log_path.read_text(errors="replace")[logged:]
        asked_again.append(this_start.count(NOT_READY))
        met_unready.append(rescans[-1] > 0 or "Forbidden" in this_start)
        assert not [r for r in refusals if NOT_FOUND in r], refusals
        assert has_gang_gate(template["spec"].get("schedulingGates") or [])
    print(
        f"webhooks after {ROUNDS} kube-apiserver restarts: each gang bound "
        f"{', '.join(f'{t:.1f}' for t in took)} s after the server accepted connections; "
        f"creations refused meanwhile {refused} (none 404); the Job's calls answered 503 "
        f"and made again {asked_again}; rescans of discovery by each new operator {rescans}"
    )
    # Each new operator met the restarted server before it was whole: its own scan of
    # the discovery missed a resource and it scanned again, or (as installed) the
    # server refused what RBAC allows, its authorizer not having read the roles yet,
    # which it does before its discovery is whole; the operator waited it out.
    assert all(met_unready), "an operator started after the API server was whole again"
    # Its webhooks were called before the rescan had found their resources: as the
    # Service would, the stand-in sent no call to the replica until it said it was
    # ready (the Job refused for want of an endpoint, and created again), or a call
    # that reached it was answered 503 and made again by the API server.
    assert any(refused) or any(asked_again), "no call about a Job came before it was ready"
