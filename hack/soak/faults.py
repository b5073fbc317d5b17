"""The soak's catalogue of faults, each carried out against the soak's cluster and checked
to have hit (a fault that did not happen must not count).

Each kind reuses what the fault suite already does (tests/e2e/faults): signals to a
replica as `supervised` restarts it, `cluster.py restart` of a component, the held
proxy between the replicas and the API server, the webhook configurations pointed at
nothing (`webhooks_down`). Two are the soak's own:

- `nodes-silent`: KWOK is stopped (SIGSTOP) past the node monitor grace period, so no
  node Lease is renewed; the node lifecycle controller marks the nodes NotReady and
  taints them (`node.kubernetes.io/unreachable`, NoSchedule and NoExecute), as it does
  for kubelets that go silent (pkg/controller/nodelifecycle of Kubernetes v1.37.2:
  `tryUpdateNodeHealth` compares the Lease's renewTime with the grace period). KWOK is
  then continued and the nodes come back Ready. Evictions do not follow within the
  fault: pods tolerate `unreachable` for 300 s (the DefaultTolerationSeconds admission
  plugin), and with every node NotReady the controller counts a full disruption and
  stops evicting anyway.
- `node-deleted`: a node with members of running gangs deleted and, after a while,
  created again as it was (a node replaced); PodGC deletes the pods bound to it
  (pkg/controller/podgc, `gcOrphaned`), which the Jobs may count as failures (the
  judge allows one per pod that was there).
- `member-deleted`: one bound member of a running gang deleted, as a user or an
  eviction would; the Job's failure count may rise by one for it (the judge allows it).
- `apf-throttled`: a FlowSchema that sends the operator's ServiceAccount's requests
  for pods, Jobs and Muster's own objects to a PriorityLevelConfiguration of
  THROTTLED_SEATS seats, none lendable, none borrowed, whose limit response is Reject:
  each such request beyond them meets 429. The API server's flowcontrol (v1.37.2
  `apf_controller.go`) gives a level ceil(server limit x shares / sum of shares) seats
  and this cluster's server limit is 3000, so one share alone would be 13 seats; a
  ballast level of BALLAST_SHARES shares, all lendable (others borrow them back), makes
  one share THROTTLED_SEATS. The Lease (coordination.k8s.io) is not matched, so the
  leader keeps leading. Hit when the API server's
  `apiserver_flowcontrol_rejected_requests_total` for the level rose.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from devtools import installed
from devtools.cluster.local import LocalCluster
from devtools.factories import NodePool
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until
from tests.e2e.faults.faults import holder, webhooks_down
from tests.e2e.faults.held_proxy import HeldProxy
from tests.e2e.support.harness import GROUP_LABEL, LEASE
from tests.e2e.support.ledger import FINISHED

from hack.soak.excuses import BLACKOUT_KINDS, Excuse
from hack.soak.plan import FaultPlan
from hack.soak.report import FaultRecord
from hack.soak.stream import probe_job

NAMESPACE = "muster-soak"
COMPONENTS = {
    "kube-apiserver-restart": "kube-apiserver",
    "etcd-restart": "etcd",
    "kube-scheduler-restart": "kube-scheduler",
    "kube-controller-manager-restart": "kube-controller-manager",
}
SIGNALS = {
    "replica-sigkill": signal.SIGKILL,
    "replica-sigterm": signal.SIGTERM,
}
SLOW_LINK_SECONDS = 0.3
SYSTEM = "node.kubernetes.io/"  # taints the node lifecycle controller sets
THROTTLE = "muster-soak-throttle"
BALLAST = "muster-soak-ballast"
BALLAST_SHARES = 2000
THROTTLED_SEATS = 2
THROTTLED_GROUPS = ("", "batch", "scheduling.muster.dev")
LEAD_PATIENCE = 180.0  # seconds to wait for a replica to lead again after a blackout
NODES_BACK_PATIENCE = 60.0  # seconds to wait for a node to be Ready after KWOK continues


@dataclass
class Target:
    """What the faults act on, and what they leave for the judge."""

    cluster: LocalCluster
    kubectl: Kubectl
    replicas: list[OperatorProcess]
    proxy: HeldProxy
    pool: NodePool
    clock: Callable[[], float]  # seconds after the start
    deleted: Counter[str] = field(default_factory=Counter)  # Job -> pods the soak deleted
    deletions: list[tuple[float, str]] = field(default_factory=list)  # (moment, gang)
    excuses: list[Excuse] = field(default_factory=list)  # nobody could mend a gang

    def pid(self, component: str) -> int | None:
        path = self.cluster.state_dir / "pids" / f"{component}.pid"
        return int(path.read_text()) if path.exists() else None

    def leader(self) -> OperatorProcess | None:
        name = holder(self.kubectl)
        return next((r for r in self.replicas if r.identity == name and r.running()), None)


def inject(target: Target, fault: FaultPlan, rng: random.Random) -> FaultRecord:
    """Carry the fault out (blocking for as long as it lasts) and say whether it hit."""
    at = target.clock()
    try:
        hit, evidence = CAUSES[fault.kind](target, fault, rng)
    except (AssertionError, OSError, ValueError) as error:
        hit, evidence = False, f"failed: {error}"
    if fault.kind in BLACKOUT_KINDS:
        back = _led_again(target, datetime.now().astimezone())
        why = f"{fault.kind}: no replica could write until one led again"
        target.excuses.append(Excuse(round(at, 2), round(back, 2), why))
    return FaultRecord(fault.kind, round(at, 2), fault.lasts, hit, evidence)


def _led_again(target: Target, after: datetime) -> float:
    """The moment (seconds after the start) a Lease renewal later than `after` was seen:
    a replica leads again, and can write. The end of the run if none is seen in time."""
    deadline = time.monotonic() + LEAD_PATIENCE
    while time.monotonic() < deadline:
        with suppress(subprocess.TimeoutExpired):
            lease = target.kubectl(
                "get", *LEASE, "-o", "jsonpath={.spec.renewTime}", check=False, timeout=10
            )
            renewed = lease.stdout.strip()
            if lease.returncode == 0 and renewed and datetime.fromisoformat(renewed) > after:
                return target.clock()
        time.sleep(0.5)
    return target.clock()


Outcome = tuple[bool, str]


def _replica(target: Target, rng: random.Random) -> OperatorProcess | None:
    """The leader, or a running replica when none leads."""
    running = [r for r in target.replicas if r.running()]
    return target.leader() or (rng.choice(running) if running else None)


def _signal(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    replica = _replica(target, rng)
    process = replica.process if replica else None
    if replica is None or process is None:
        return False, "no replica was running"
    process.send_signal(SIGNALS[fault.kind])
    deadline = time.monotonic() + 30
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    code = process.poll()
    return code is not None, f"{replica.identity} exited with {code}"


def _pause(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    """SIGSTOP past the Lease; hit when another replica took the Lease meanwhile."""
    replica = _replica(target, rng)
    process = replica.process if replica else None
    if replica is None or process is None:
        return False, "no replica was running"
    process.send_signal(signal.SIGSTOP)
    try:
        time.sleep(fault.lasts)
        taken_by = holder(target.kubectl)
    finally:
        process.send_signal(signal.SIGCONT)
    hit = taken_by not in (None, replica.identity)
    return hit, f"{replica.identity} stopped {fault.lasts:g}s; the Lease went to {taken_by}"


def _restart(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    component = COMPONENTS[fault.kind]
    before = target.pid(component)
    target.cluster.hack("restart", component)
    after = target.pid(component)
    return before != after and after is not None, f"{component} pid {before} -> {after}"


def _nodes_silent(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    """Hit when nodes went NotReady. From the moment every node is NotReady until one is
    Ready again, no pod can be placed by anyone (each node is tainted
    `unreachable:NoSchedule`): a gang short of members then waits, excused. Muster could
    take a falling gang down whole meanwhile, but does not take running members down
    because their nodes stopped heartbeating, as the node lifecycle controller gives
    pods on unreachable nodes 300 s."""
    pid = target.pid("kwok")
    if pid is None:
        return False, "kwok is not running"
    os.kill(pid, signal.SIGSTOP)
    not_ready: set[str] = set()
    silent_from: float | None = None
    try:
        deadline = time.monotonic() + fault.lasts
        while time.monotonic() < deadline:
            readiness = _readiness(target.kubectl)
            not_ready |= {node for node, ready in readiness.items() if not ready}
            if silent_from is None and readiness and not any(readiness.values()):
                silent_from = target.clock()
            time.sleep(2)
    finally:
        os.kill(pid, signal.SIGCONT)
    if silent_from is not None:
        back = _some_node_ready(target)
        why = "nodes-silent: every node NotReady, none could take a pod"
        target.excuses.append(Excuse(round(silent_from, 2), round(back, 2), why))
    return bool(not_ready), f"{len(not_ready)} nodes seen NotReady: {sorted(not_ready)}"


def _some_node_ready(target: Target) -> float:
    """The moment (seconds after the start) a node was first seen Ready again."""
    deadline = time.monotonic() + NODES_BACK_PATIENCE
    while time.monotonic() < deadline and not any(_readiness(target.kubectl).values()):
        time.sleep(0.5)
    return target.clock()


def _readiness(kubectl: Kubectl) -> dict[str, bool]:
    """Each node's Ready condition (nothing when the API server did not answer)."""
    found = kubectl("get", "nodes", "-o", "json", check=False, timeout=10)
    if found.returncode != 0:
        return {}
    return {
        node["metadata"]["name"]: any(
            condition["type"] == "Ready" and condition["status"] == "True"
            for condition in node["status"].get("conditions") or []
        )
        for node in json.loads(found.stdout)["items"]
    }


def _member_deleted(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    pods: list[dict[str, Any]] = target.kubectl.json(
        "get", "pods", "-n", NAMESPACE, "-l", GROUP_LABEL
    )["items"]
    running = [
        pod
        for pod in pods
        if pod["spec"].get("nodeName")
        and pod["status"].get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
    ]
    if not running:
        return False, "no member was running"
    pod = rng.choice(sorted(running, key=lambda p: str(p["metadata"]["name"])))
    name = pod["metadata"]["name"]
    job = pod["metadata"]["labels"].get("job-name", "")
    target.deleted[job] += 1
    target.deletions.append((round(target.clock(), 2), pod["metadata"]["labels"][GROUP_LABEL]))
    deleted = target.kubectl("delete", "pod", name, "-n", NAMESPACE, "--wait=false", check=False)
    return deleted.returncode == 0, f"deleted {name} of {job} on {pod['spec']['nodeName']}"


def _node_deleted(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    pods: list[dict[str, Any]] = target.kubectl.json("get", "pods", "-n", NAMESPACE)["items"]
    busy = sorted({p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")})
    if not busy:
        return False, "no node had a pod of the soak"
    name = rng.choice(busy)
    node = target.kubectl.json("get", "node", name)
    on_it = [
        p
        for p in pods
        if p["spec"].get("nodeName") == name and p["status"].get("phase") not in FINISHED
    ]
    target.deleted.update(p["metadata"]["labels"].get("job-name", "") for p in on_it)
    gangs = {p["metadata"]["labels"].get(GROUP_LABEL) for p in on_it} - {None}
    at = round(target.clock(), 2)
    target.deletions += [(at, gang) for gang in sorted(gangs)]
    target.kubectl("delete", "node", name, "--wait=true", timeout=60)
    gone = target.kubectl("get", "node", name, check=False).returncode != 0
    time.sleep(fault.lasts)
    target.kubectl.apply(_as_created(node))
    wait_until(f"node {name} Ready again", lambda: target.pool.ready(name), 60)
    return gone, f"deleted {name} with {len(on_it)} pods, created it again"


def _as_created(node: dict[str, Any]) -> dict[str, Any]:
    """The node as its pool made it: metadata, taints and capacity (no server fields)."""
    metadata = node["metadata"]
    status = node["status"]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": metadata["name"],
            "labels": metadata.get("labels") or {},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {
            "taints": [
                t for t in node["spec"].get("taints") or [] if not t["key"].startswith(SYSTEM)
            ]
        },
        "status": {"capacity": status["capacity"], "allocatable": status["allocatable"]},
    }


def _throttled(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    """The throttle is taken away however the fault ends, even while the API server
    restarts: one left in place would throttle the operator until the next such fault,
    unexcused (it did once, for 220 s, seed 165727035)."""
    before = _flowcontrol(target.kubectl, "rejected_requests_total")
    try:
        target.kubectl.apply(_priority_level(BALLAST, BALLAST_SHARES, lendable=100))
        target.kubectl.apply(_priority_level(THROTTLE, 1, lendable=0))
        target.kubectl.apply(_flow_schema())
        time.sleep(fault.lasts)
        seats = _flowcontrol(target.kubectl, "nominal_limit_seats")
        rejected = _flowcontrol(target.kubectl, "rejected_requests_total") - before
    finally:
        target.kubectl.persist("delete", "flowschema", THROTTLE, "--ignore-not-found")
        target.kubectl.persist(
            "delete", "prioritylevelconfiguration", THROTTLE, BALLAST, "--ignore-not-found"
        )
    return rejected > 0, f"{seats:g} seats; {rejected:g} of the operator's requests got 429"


def _flowcontrol(kubectl: Kubectl, metric: str) -> float:
    """An `apiserver_flowcontrol_` metric of the throttled level, summed over its labels."""
    metrics = kubectl("get", "--raw", "/metrics", timeout=30).stdout
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith(f"apiserver_flowcontrol_{metric}{{")
        and f'priority_level="{THROTTLE}"' in line
    )


def _priority_level(name: str, shares: int, *, lendable: int) -> dict[str, Any]:
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name},
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": shares,
                "lendablePercent": lendable,
                "borrowingLimitPercent": 0,
                "limitResponse": {"type": "Reject"},
            },
        },
    }


def _flow_schema() -> dict[str, Any]:
    return {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": THROTTLE},
        "spec": {
            "priorityLevelConfiguration": {"name": THROTTLE},
            "matchingPrecedence": 90,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [
                        {
                            "kind": "ServiceAccount",
                            "serviceAccount": {
                                "name": installed.SERVICE_ACCOUNT,
                                "namespace": installed.NAMESPACE,
                            },
                        }
                    ],
                    "resourceRules": [
                        {
                            "verbs": ["*"],
                            "apiGroups": list(THROTTLED_GROUPS),
                            "resources": ["*"],
                            "namespaces": ["*"],
                            "clusterScope": True,
                        }
                    ],
                }
            ],
        },
    }


def _webhook_outage(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    probe = target.cluster.state_dir / "soak-probe.json"
    with webhooks_down(target.kubectl):
        refused = _refused(target.kubectl, probe, target.pool)
        time.sleep(fault.lasts)
    return refused, f"a gang Job was {'refused' if refused else 'admitted'} during the outage"


def _refused(kubectl: Kubectl, probe: Path, pool: NodePool) -> bool:
    """Whether a server-side dry run of a gang Job is refused (its webhook unreachable)."""
    probe.write_text(probe_job(pool))
    created = kubectl("create", "-n", NAMESPACE, "--dry-run=server", "-f", str(probe), check=False)
    return created.returncode != 0


def _proxy_cut(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    proxy = target.proxy
    cuts, held = proxy.cuts, proxy.held
    proxy.hold()
    proxy.cut()
    try:
        time.sleep(fault.lasts)
    finally:
        proxy.release()
    cut, waited = proxy.cuts - cuts, proxy.held - held
    return cut > 0, f"{cut} connections cut, {waited} held for {fault.lasts:g}s"


def _proxy_slow(target: Target, fault: FaultPlan, rng: random.Random) -> Outcome:
    proxy = target.proxy
    delayed = proxy.delayed
    proxy.latency = SLOW_LINK_SECONDS
    try:
        time.sleep(fault.lasts)
    finally:
        proxy.latency = 0.0
    count = proxy.delayed - delayed
    return count > 0, f"{count} chunks delayed {SLOW_LINK_SECONDS:g}s each"


CAUSES: dict[str, Callable[[Target, FaultPlan, random.Random], Outcome]] = {
    "replica-sigkill": _signal,
    "replica-sigterm": _signal,
    "replica-sigstop": _pause,
    **dict.fromkeys(COMPONENTS, _restart),
    "nodes-silent": _nodes_silent,
    "node-deleted": _node_deleted,
    "member-deleted": _member_deleted,
    "apf-throttled": _throttled,
    "webhook-outage": _webhook_outage,
    "proxy-cut": _proxy_cut,
    "proxy-slow": _proxy_slow,
}
