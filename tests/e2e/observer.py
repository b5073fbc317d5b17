"""A watch over a namespace's pods that catches a partially started gang as it happens.

Every gang of a test is observed while the test runs (the autouse `gang_observer`
fixture in conftest.py). A gang is the set of pods labelled
`scheduling.muster.dev/pod-group: NAME` whose PodGroup NAME has a `gang` policy; a pod
is bound once `spec.nodeName` is set, until the pod is deleted.

What counts as partial. A gang's bound count rises from 0 when its pods bind, and
falls back to 0 when it is rolled back, preempted or deleted; in between it legitimately
passes through every value. Falling is never a violation: whatever the order the pods
of a gang are taken down in, each step down is part of a whole gang leaving. Rising is
where a gang half-starts, but kube-scheduler binds the pods of a released gang one at a
time, so a rise is not instantaneous either. The rule is therefore:

    once a gang rises from 0 bound, it must have at least minCount pods bound within
    GRACE seconds of its first bind.

A rise that reaches minCount later than that, stops below minCount for longer than
that, or falls back to 0 after more than GRACE seconds without ever reaching minCount
is a violation: a partial gang. A rise that falls back to 0 within the grace (a release
rolled back at once) is not. minCount is read from the PodGroup when the rise begins;
pods of a missing PodGroup or of a `basic` one are not a gang and are not judged.

The grace (GRACE_SECONDS, `MUSTER_E2E_PARTIAL_GANG_GRACE` to change it) is how long
the binds of one released gang may be spread out: the operator ungates the pods of a
plan together and kube-scheduler binds them at once (over the suite's gangs, the first
and the minCount-th bind were at most a fraction of a second apart; the run's slowest is
printed at the end). The grace leaves room for a slow moment on a loaded machine, and is
still far below the release timeout (60 s by default) after which the operator rolls a
gang back, so a gang that cannot bind all of its pods is always caught. Times are
taken when the watch delivers each change, so a delivery that lags can only make a
spread look shorter, never longer.

A violation fails the test at its next `wait_until` poll (the observer registers a
check there) and, failing that, when the test ends; the message names the gang, its
pods, where and when each one bound, and what became of the rise. Tests that create
partial gangs on purpose opt out with `@pytest.mark.allow_partial_gangs(reason)`.

The watch is the API server's own (list, then watch from the list's resourceVersion),
so no change between the list and the watch is lost and the observer is in sync with
the namespace before the test does anything.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import yaml

from tests.e2e.cluster import POLL_CHECKS

GROUP_LABEL = "scheduling.muster.dev/pod-group"
PODGROUPS_PATH = "/apis/scheduling.muster.dev/v1beta1/namespaces/{namespace}/podgroups/{name}"
GRACE_SECONDS = float(os.environ.get("MUSTER_E2E_PARTIAL_GANG_GRACE", "5"))


# ---- the rule, with no I/O ------------------------------------------------------------


@dataclass(frozen=True)
class Bind:
    pod: str
    node: str
    at: float  # monotonic
    wall: datetime


@dataclass
class Rise:
    """One climb of a gang's bound count from 0."""

    gang: str
    min_count: int
    started: float
    binds: list[Bind] = field(default_factory=list)
    reached: float | None = None  # when minCount pods were bound
    fell: float | None = None  # when it fell back to 0 before reaching minCount
    unbound: list[str] = field(default_factory=list)  # members seen, never bound, in the rise

    def late(self, grace: float, now: float) -> bool:
        end = self.reached if self.reached is not None else self.fell
        return (now if end is None else end) - self.started > grace

    def describe(self, grace: float) -> str:
        first = self.binds[0].at
        binds = ", ".join(
            f"{b.pod} on {b.node} at {b.wall.strftime('%H:%M:%S.%f')[:-3]}Z (+{b.at - first:.2f}s)"
            for b in self.binds
        )
        if self.reached is not None:
            outcome = f"reached minCount only after {self.reached - self.started:.2f}s"
        elif self.fell is not None:
            outcome = f"fell back to 0 bound after {self.fell - self.started:.2f}s"
        else:
            outcome = "still below minCount"
        bound_at_most = max_bound_before(self)
        unbound = ", ".join(self.unbound) or "none"
        return (
            f"partial gang {self.gang}: {bound_at_most} of minCount {self.min_count} pods bound "
            f"for more than {grace:g}s ({outcome}); binds: {binds}; "
            f"members never bound meanwhile: {unbound}"
        )


def max_bound_before(rise: Rise) -> int:
    """How many pods were bound while the rise was short of minCount."""
    return min(len(rise.binds), rise.min_count - 1) if rise.reached else len(rise.binds)


class GangLedger:
    """The rule applied to a stream of pod states; pure, so it is tested without a cluster.

    `min_count(gang)` answers the PodGroup's gang minCount, or None when the pods are
    not a gang (no PodGroup, or a `basic` one).
    """

    def __init__(self, min_count: Callable[[str], int | None], grace: float = GRACE_SECONDS):
        self.grace = grace
        self._min_count = min_count
        self._pods: dict[str, tuple[str | None, str | None]] = {}  # pod -> (gang, node)
        self._rising: dict[str, Rise] = {}
        self._whole: set[str] = set()  # rose to minCount, not yet back to 0
        self._not_gangs: set[str] = set()  # rose from 0 without being a gang
        self._violated: list[Rise] = []  # finished rises that broke the rule
        self.spreads: list[float] = []  # first bind -> minCount-th bind, of good rises
        self.falls: list[float] = []  # first bind -> back to 0, of rises undone in time

    def pod(self, name: str, gang: str | None, node: str | None, at: float) -> None:
        """A pod as it is now (added or modified)."""
        before = self._pods.get(name, (None, None))
        self._pods[name] = (gang, node or None)
        for touched in {before[0], gang} - {None}:
            assert touched is not None
            self._update(touched, at)

    def gone(self, name: str, at: float) -> None:
        before = self._pods.pop(name, (None, None))
        if before[0] is not None:
            self._update(before[0], at)

    def _members(self, gang: str) -> list[tuple[str, str | None]]:
        return sorted((pod, node) for pod, (g, node) in self._pods.items() if g == gang)

    def _update(self, gang: str, at: float) -> None:
        members = self._members(gang)
        bound = [(pod, node) for pod, node in members if node]
        rise = self._rising.get(gang)
        if not bound:
            self._whole.discard(gang)
            self._not_gangs.discard(gang)
            if rise is not None:
                del self._rising[gang]
                rise.fell = at
                if rise.late(self.grace, at):
                    self._violated.append(rise)
                else:
                    self.falls.append(at - rise.started)
            return
        if gang in self._whole or gang in self._not_gangs:
            return
        if rise is None:
            min_count = self._min_count(gang)
            if min_count is None:
                self._not_gangs.add(gang)
                return
            rise = self._rising[gang] = Rise(gang, min_count, started=at)
        wall = datetime.now(UTC)
        seen = {b.pod for b in rise.binds}
        rise.binds.extend(Bind(pod, node, at, wall) for pod, node in bound if pod not in seen)
        seen |= {pod for pod, _ in bound}
        waiting = {pod for pod, node in members if not node} | set(rise.unbound)
        rise.unbound = sorted(waiting - seen)
        if len(bound) >= rise.min_count:
            rise.reached = at
            del self._rising[gang]
            self._whole.add(gang)
            if rise.late(self.grace, at):
                self._violated.append(rise)
            else:
                self.spreads.append(at - rise.started)

    def violations(self, now: float) -> list[Rise]:
        stalled = [r for r in self._rising.values() if r.late(self.grace, now)]
        return [*self._violated, *stalled]

    def undecided(self, now: float) -> float:
        """Seconds until every rise now in progress is decided (0: none is pending)."""
        pending = [r.started + self.grace - now for r in self._rising.values()]
        return max([0.0, *pending])


# ---- the watch --------------------------------------------------------------------------


class ApiClient:
    """Just enough of a Kubernetes client for a list and a watch, from a kubeconfig."""

    def __init__(self, kubeconfig: Path):
        config = yaml.safe_load(kubeconfig.read_text())
        context_name = config.get("current-context")
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        server = urlsplit(cluster["server"])
        self.host, self.port = server.hostname or "127.0.0.1", server.port or 443
        self._files = tempfile.TemporaryDirectory(prefix="muster-observer-")
        self.context = ssl.create_default_context(
            cafile=self._file(cluster, "certificate-authority")
        )
        if "token" in user:
            self.headers = {"Authorization": f"Bearer {user['token']}"}
        else:
            self.headers = {}
            cert = self._file(user, "client-certificate")
            if cert is None:
                raise ValueError(f"{kubeconfig}: the user has neither a token nor a certificate")
            self.context.load_cert_chain(cert, self._file(user, "client-key"))

    def _file(self, section: dict[str, Any], key: str) -> str | None:
        if section.get(key):
            return str(section[key])
        data = section.get(f"{key}-data")
        if not data:
            return None
        path = Path(self._files.name) / key
        path.write_bytes(base64.b64decode(data))
        return str(path)

    def connect(self, timeout: float | None = 10) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            self.host, self.port, context=self.context, timeout=timeout
        )

    def get(self, path: str) -> tuple[int, Any]:
        connection = self.connect()
        try:
            connection.request("GET", path, headers=self.headers)
            response = connection.getresponse()
            body = response.read()
            return response.status, json.loads(body) if body else None
        finally:
            connection.close()

    def close(self) -> None:
        self._files.cleanup()


class GangObserver:
    """The ledger fed by a watch of one namespace's pods, in a thread of its own."""

    def __init__(self, kubeconfig: Path, namespace: str, grace: float = GRACE_SECONDS):
        self.namespace = namespace
        self.api = ApiClient(kubeconfig)
        self.ledger = GangLedger(self._min_count, grace)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connection: http.client.HTTPSConnection | None = None
        self._thread: threading.Thread | None = None
        self._reported: set[int] = set()  # ids of the rises already raised
        self.errors: list[str] = []

    # -- lifecycle

    def start(self) -> None:
        version = self._relist()
        self._thread = threading.Thread(
            target=self._run, args=(version,), name=f"gang-observer-{self.namespace}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        connection = self._connection
        if connection is not None and connection.sock is not None:
            with suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.api.close()

    def finish(self) -> None:
        """Settle, then stop watching (once; later calls do nothing)."""
        if self._stopping.is_set():
            return
        self.settle()
        self.stop()

    def settle(self) -> None:
        """Wait until every rise in progress is decided (at most the grace)."""
        with self._lock:
            wait = self.ledger.undecided(time.monotonic())
        if wait:
            time.sleep(wait + 0.5)

    # -- verdicts

    def violations(self) -> list[Rise]:
        with self._lock:
            return list(self.ledger.violations(time.monotonic()))

    def check(self) -> None:
        """Raise for violations not raised yet: each one fails a test once."""
        fresh = self.unreported()
        self._reported.update(id(rise) for rise in fresh)
        if fresh:
            raise AssertionError(self.report(fresh))

    def unreported(self) -> list[Rise]:
        return [rise for rise in self.violations() if id(rise) not in self._reported]

    def report(self, rises: list[Rise]) -> str:
        lines = [f"in namespace {self.namespace}:"]
        lines += [f"  {rise.describe(self.ledger.grace)}" for rise in rises]
        return "\n".join(lines)

    # -- the watch

    def _min_count(self, gang: str) -> int | None:
        path = PODGROUPS_PATH.format(namespace=self.namespace, name=quote(gang))
        try:
            status, group = self.api.get(path)
        except (OSError, http.client.HTTPException, ValueError) as error:
            self.errors.append(f"reading PodGroup {gang}: {error}")
            return None
        if status != 200 or not isinstance(group, dict):
            return None
        gang_policy = (group.get("spec", {}).get("schedulingPolicy") or {}).get("gang")
        if not isinstance(gang_policy, dict):
            return None
        return int(gang_policy.get("minCount", 1))

    def _pods_path(self, **query: str) -> str:
        return f"/api/v1/namespaces/{quote(self.namespace)}/pods?{urlencode(query)}"

    def _relist(self) -> str:
        status, listing = self.api.get(self._pods_path())
        if status != 200:
            raise AssertionError(f"listing pods of {self.namespace}: HTTP {status}: {listing}")
        now = time.monotonic()
        with self._lock:
            listed = {pod["metadata"]["name"] for pod in listing["items"]}
            for name in [name for name in self.ledger._pods if name not in listed]:
                self.ledger.gone(name, now)
            for pod in listing["items"]:
                self._apply("MODIFIED", pod, now)
        version: str = listing["metadata"]["resourceVersion"]
        return version

    def _apply(self, kind: str, pod: dict[str, Any], at: float) -> None:
        name = pod["metadata"]["name"]
        if kind == "DELETED":
            self.ledger.gone(name, at)
            return
        gang = (pod["metadata"].get("labels") or {}).get(GROUP_LABEL)
        self.ledger.pod(name, gang, pod.get("spec", {}).get("nodeName"), at)

    def _run(self, version: str) -> None:
        while not self._stopping.is_set():
            try:
                version = self._watch(version)
            except (OSError, http.client.HTTPException, ValueError) as error:
                if self._stopping.is_set():
                    return
                self.errors.append(f"watch interrupted: {error}")
                version = ""
            if not version and not self._stopping.is_set():
                try:
                    version = self._relist()
                except (OSError, http.client.HTTPException, ValueError) as error:
                    self.errors.append(f"relist failed: {error}")
                    time.sleep(0.5)

    def _watch(self, version: str) -> str:
        """Follow the watch until it ends; the version to resume from, "" to relist."""
        connection = self.api.connect(timeout=None)
        self._connection = connection
        try:
            connection.request(
                "GET",
                self._pods_path(watch="1", resourceVersion=version, allowWatchBookmarks="true"),
                headers=self.api.headers,
            )
            response = connection.getresponse()
            if response.status != 200:
                response.read()
                return ""
            while not self._stopping.is_set():
                line = response.readline()
                if not line:
                    return version
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    return ""  # e.g. 410 Gone: too old a version to resume from
                version = obj.get("metadata", {}).get("resourceVersion", version)
                if event.get("type") == "BOOKMARK":
                    continue
                with self._lock:
                    self._apply(event["type"], obj, time.monotonic())
            return version
        finally:
            self._connection = None
            connection.close()


@contextmanager
def observing(
    kubeconfig: Path, namespace: str, grace: float = GRACE_SECONDS
) -> Iterator[GangObserver]:
    """An observer, in sync with the namespace, whose violations fail `wait_until` polls."""
    observer = GangObserver(kubeconfig, namespace, grace)
    observer.start()
    POLL_CHECKS.append(observer.check)
    try:
        yield observer
    finally:
        POLL_CHECKS.remove(observer.check)
        observer.stop()
