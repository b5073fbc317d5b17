"""What the fault tests share: the Lease's holder, the operator's metrics, the audit log,
the moment a gang's release begins.

The audit log (`hack/cluster.py up --audit`) has one JSON line per request with its
verb, object, user agent and the moment the API server received it. The operator's
user agent is `muster/<identity>`, so the requests of two replicas that share one
kubeconfig are told apart there.
"""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from devtools.factories import NodePool, gang_job, held
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.ports import free_port
from devtools.waiting import wait_until

from tests.e2e.support.harness import GROUP_LABEL, LEASE, WEBHOOK_CONFIGURATION, is_gated, pods_of

WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# A release spread out by the operator's own client-side rate limit: one request every
# quarter second once the burst of one is spent, so a gang of 8 takes about 2 s to be
# released, far longer than a watch takes to tell the test that it has begun.
SLOW_RELEASE = ("--kube-qps=4", "--kube-burst=1")

POLL_SECONDS = 0.2  # how often a helper below looks again


def holder(kubectl: Kubectl) -> str | None:
    found = kubectl("get", *LEASE, "-o", "jsonpath={.spec.holderIdentity}", check=False)
    return found.stdout or None


def metric_samples(process: OperatorProcess, name: str) -> dict[str, float]:
    """A metric's samples by label set (as Prometheus prints it, e.g. `resource="..."`)."""
    samples = {}
    for line in process.metrics().splitlines():
        if line.startswith((f"{name} ", f"{name}{{")):
            labels = line.partition("{")[2].rpartition("}")[0]
            samples[labels] = float(line.rsplit(" ", 1)[1])
    return samples


def metric_total(process: OperatorProcess, name: str) -> float:
    """The sum of a metric's samples over all its labels (0 while it has none)."""
    return sum(metric_samples(process, name).values())


@dataclass(frozen=True)
class Request:
    """One line of the audit log."""

    verb: str
    user_agent: str
    resource: str
    name: str
    code: int
    received: datetime
    subresource: str = ""

    @property
    def write(self) -> bool:
        return self.verb in WRITES


def audit_log(state_dir: Path) -> list[Request]:
    """Every request of the audit log, the files the API server rotated out included:
    it starts a new `audit.log` each 100 MB (lumberjack's default size, which
    `--audit-log-maxsize` 0 leaves), the older ones renamed `audit-<time>.log`, whose
    names sort before `audit.log` in the order they were written."""
    path = state_dir / "logs" / "audit.log"
    assert path.exists(), f"{path} is missing: the cluster was not started with --audit"
    lines = [
        line
        for each in sorted(path.parent.glob("audit*.log"))
        for line in each.read_text(errors="replace").splitlines()
    ]
    requests = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the line being written right now
        ref = entry.get("objectRef") or {}
        requests.append(
            Request(
                verb=str(entry.get("verb", "")),
                user_agent=str(entry.get("userAgent", "")),
                resource=str(ref.get("resource", "")),
                name=str(ref.get("name", "")),
                code=int((entry.get("responseStatus") or {}).get("code") or 0),
                received=datetime.fromisoformat(entry["requestReceivedTimestamp"]),
                subresource=str(ref.get("subresource", "")),
            )
        )
    return requests


def create_until_admitted(
    kubectl: Kubectl, namespace: str, obj: dict[str, Any], timeout: float = 90
) -> int:
    """Create `obj` as a submitter that retries would; the number of refusals first.

    A gang Job is refused while its webhook does not answer (it fails closed).
    """
    refusals = 0
    deadline = time.monotonic() + timeout
    while True:
        created = kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(obj), check=False)
        if created.returncode == 0 or "AlreadyExists" in created.stderr:
            return refusals
        assert time.monotonic() < deadline, f"never admitted: {created.stderr}"
        refusals += 1
        time.sleep(1)


def user_agent(identity: str) -> str:
    return f"muster/{identity}"


@dataclass
class Restarts:
    """What the supervisor saw: the exit status of each operator process it replaced."""

    exits: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@contextmanager
def supervised(operator: OperatorProcess) -> Iterator[Restarts]:
    """Start the operator again whenever it exits, as its Deployment would.

    A leader that cannot renew its Lease for the renew deadline (10 s) steps down and
    exits; an API server outage longer than that ends the leader this way, and the
    restart leads again once the server is back.
    """
    restarts = Restarts()
    stopping = threading.Event()

    def watch() -> None:
        while not stopping.wait(0.5):
            process = operator.process
            if process is None or process.poll() is None:
                continue
            restarts.exits.append(process.returncode)
            operator.process = None
            try:
                operator.start()
            except AssertionError as error:
                restarts.errors.append(str(error))

    thread = threading.Thread(target=watch, name="operator-supervisor", daemon=True)
    thread.start()
    try:
        yield restarts
    finally:
        stopping.set()
        thread.join(timeout=90)


def when_the_release_begins(
    kubeconfig: Path, namespace: str, group: str, start: Callable[[], None]
) -> None:
    """Run `start` (which leads to the gang's release) and return the moment a watch of
    the gang's pods shows the first of them released (its gang gate gone)."""
    when_a_member_shows(
        kubeconfig,
        namespace,
        group,
        "gates={.spec.schedulingGates}",
        lambda line: "scheduling.muster.dev/gang" not in line,
        start,
        "released",
    )


def when_the_takedown_begins(
    kubeconfig: Path, namespace: str, group: str, start: Callable[[], None]
) -> None:
    """Run `start` (which leads to the gang's preemption) and return the moment a watch
    of the gang's pods shows the first of them being deleted (evicted)."""
    when_a_member_shows(
        kubeconfig,
        namespace,
        group,
        "deleting={.metadata.deletionTimestamp}",
        lambda line: not line.endswith("deleting="),
        start,
        "taken down",
    )


def when_a_member_shows(
    kubeconfig: Path,
    namespace: str,
    group: str,
    field: str,
    shows: Callable[[str], bool],
    start: Callable[[], None],
    what: str,
) -> None:
    """Run `start` and return once a watch of the gang's pods prints a line (`NAME
    field`, jsonpath) that `shows`."""
    watch = subprocess.Popen(
        Kubectl(kubeconfig).command(
            "get",
            "pods",
            "-n",
            namespace,
            "-l",
            f"{GROUP_LABEL}={group}",
            "--watch",
            "-o",
            f'jsonpath={{.metadata.name}} {field}{{"\\n"}}',
        ),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        start()
        assert watch.stdout is not None
        for line in watch.stdout:
            if shows(line.rstrip("\n")):
                return
        raise AssertionError(f"the watch ended before any pod was {what}")
    finally:
        watch.kill()
        watch.wait()


def first_new_member(
    kubectl: Kubectl, namespace: str, group: str, known: set[str]
) -> tuple[str, float]:
    """The first member of `group` that is none of `known` (a replacement its Job made),
    and when it was first seen (monotonic)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        fresh = sorted(
            pod["metadata"]["name"]
            for pod in pods_of(kubectl, namespace, group)
            if pod["metadata"]["name"] not in known
        )
        if fresh:
            return fresh[0], time.monotonic()
        time.sleep(POLL_SECONDS)
    raise AssertionError("the Job made no replacement in 90 s")


def first_seen_bound(kubectl: Kubectl, namespace: str, name: str) -> float:
    """When the pod was first seen bound (monotonic)."""
    seen: list[float] = []

    def is_bound() -> bool:
        pod = kubectl.json("get", "pod", name, "-n", namespace)
        if pod["spec"].get("nodeName"):
            seen.append(time.monotonic())
        return bool(seen)

    wait_until(f"replacement {name} bound", is_bound, timeout=60, interval=POLL_SECONDS)
    return seen[0]


@contextmanager
def beside_a_standby(
    operator: OperatorProcess, identity: str, *flags: str
) -> Iterator[OperatorProcess]:
    """A standby replica (`identity`, not started) for the test. Afterwards the first
    replica leads again, with the suite's flags, whatever the test did to it: frozen,
    it is thawed and killed; it starts again (a standby, at first), and the standby
    stops, which gives the Lease back."""
    standby = operator.replica(identity, *flags)
    try:
        yield standby
    finally:
        if operator.process is not None and operator.process.poll() is None:
            operator.process.send_signal(signal.SIGCONT)
            operator.kill()
        operator.process = None
        operator.start()
        standby.stop()
    kubectl = Kubectl(operator.kubeconfig)
    wait_until("the first replica to lead again", lambda: holder(kubectl) == operator.identity, 30)


def released_of(kubectl: Kubectl, namespace: str, group: str) -> tuple[int, int]:
    """(released, existing): the gang's pods that are ungated, and all of them."""
    pods = pods_of(kubectl, namespace, group)
    return sum(not is_gated(pod) for pod in pods), len(pods)


def begin_a_slow_held_release(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    *,
    group: str,
    workers: int,
) -> None:
    """A gang Job of `workers` pods born with the hold gate (`held`), on a node of its
    own, released by the operator restarted with `SLOW_RELEASE`; returns the moment
    the first pod is released. The caller restarts the operator as it was."""
    pool.add(gpus=workers)
    operator.restart(*SLOW_RELEASE)
    job = held(gang_job(group, pool, workers=workers))
    when_the_release_begins(
        operator.kubeconfig, namespace, group, lambda: kubectl.apply(job, namespace)
    )


def death_of(operator: object) -> str | None:
    """What to say when the test's operator exited on its own (a test that stops it
    on purpose, `stop()` or `kill()`, leaves no process behind)."""
    if not isinstance(operator, OperatorProcess) or operator.process is None:
        return None
    code = operator.process.poll()
    if code is None:
        return None
    return f"the operator died during this test (exit status {code}):\n{operator.log_tail()}"


WEBHOOK_KINDS = ("mutatingwebhookconfiguration", "validatingwebhookconfiguration")


def _replace(kubectl: Kubectl, configuration: dict[str, Any]) -> None:
    configuration = copy.deepcopy(configuration)
    configuration["metadata"].pop("resourceVersion", None)
    kubectl.persist("replace", "-f", "-", input=json.dumps(configuration))


@contextmanager
def webhooks_down(kubectl: Kubectl) -> Iterator[None]:
    """The admission webhooks unreachable (pointed at a port nothing listens on, as a
    Service without ready endpoints) until the block ends."""
    saved = [kubectl.json("get", kind, WEBHOOK_CONFIGURATION) for kind in WEBHOOK_KINDS]
    dead = f"127.0.0.1:{free_port()}"
    for configuration in saved:
        broken = copy.deepcopy(configuration)
        for webhook in broken["webhooks"]:
            url = urlsplit(webhook["clientConfig"]["url"])
            webhook["clientConfig"]["url"] = url._replace(netloc=dead).geturl()
        _replace(kubectl, broken)
    try:
        yield
    finally:
        for configuration in saved:
            _replace(kubectl, configuration)
