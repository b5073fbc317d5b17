"""A watch over a namespace's pods that catches a partial gang as it happens.

Every gang of a test is observed while the test runs (the autouse `gang_observer`
fixture in conftest.py; the demo's test and the native-gang cluster's observe their
namespaces themselves). A gang is the set of pods labelled
`scheduling.muster.dev/pod-group: NAME` whose PodGroup NAME has a `gang` policy or, on
a cluster that gang-schedules by itself, the pods whose `spec.schedulingGroup` names a
`scheduling.k8s.io` PodGroup with one. The rule is all-or-nothing, as for
kube-scheduler's gangs: a gang is short of its `minCount` only while it is starting or
while it is leaving whole.

Counting. A member pod *stands* while it is bound (`spec.nodeName` set), has not
finished (phase neither Succeeded nor Failed) and is not being deleted (no
`deletionTimestamp`: an eviction, a preemption, a rollback or the Job's garbage
collection is taking it down). A gang *holds* its standing members plus those that
Succeeded: a member that has done its work still counts towards the gang, so a gang
whose pods complete one after another is not short.

The rules, with GRACE seconds for what the API server does one request at a time:

- **Rise.** Once a gang's standing count rises from 0, it must hold minCount pods
  within GRACE of its first bind. A rise that gets there later, stops short for longer
  than that, or falls back to 0 standing after more than GRACE without getting there
  is a partial gang. A rise undone within the grace (a release rolled back at once) is
  not.
- **Bypass.** A member created with its node named (`spec.nodeName`, which Muster's
  pod webhook annotates `bypassed-gang-admission`) was bound by its creator, not
  released: it counts towards the gang, but its bind starts no rise. The rise starts
  at the first bind of a member Muster released.
- **Fall.** Once a gang disrupted whole (`disruptionMode: all`, the default; a
  `single` gang may lose pods one by one) has held minCount pods, whenever it holds fewer while some
  member still stands, it must within GRACE either hold minCount again (its members
  replaced and bound) or have no member standing (taken down whole: preempted, rolled
  back, evicted, its Job deleted or failed). A gang left running short for longer, as
  a victim whose evictions were refused part-way, is a partial gang.

minCount is read from the PodGroup when a rise begins, and again when a fall begins
(a gang resized while it runs is judged by its new size). Pods whose PodGroup does not
exist or has a `basic` policy are not a gang and are not judged; a PodGroup that
cannot be read is retried, and one still unreadable after PATIENCE seconds fails the
test (its gang could not be judged).

The grace (GRACE_SECONDS, `MUSTER_E2E_PARTIAL_GANG_GRACE` to change it) is how long
the binds of one released gang, or the deletions of one gang taken down, may be
spread out: the operator ungates the pods of a plan together and kube-scheduler binds
them at once (over the suite's gangs, the first and the minCount-th bind were at most a
fraction of a second apart; the run's slowest is printed at the end). The grace leaves
room for a slow moment on a loaded machine, and is still far below the release timeout
(60 s by default) after which the operator rolls a gang back, so a gang that cannot
bind all of its pods is always caught. Times are taken when the watch delivers each
change, so a delivery that lags can only make a spread look shorter, never longer.

The observer cannot look away. Its watch is the API server's own (list, then watch
from the list's resourceVersion), so it is in sync with the namespace before the test
does anything. A watch that ends or breaks resumes from the last resourceVersion it
saw, which loses nothing; one whose version expired (410 Gone) lists the namespace
again, which yields the net change. A watch, a relist or a PodGroup read that keeps
failing for PATIENCE seconds (`MUSTER_E2E_OBSERVER_PATIENCE`) fails the test, and so
does a watch thread that ends while the test runs: a test passes only if its gangs
were in view throughout.

A violation or an error fails the test at its next `wait_until` poll (the observer
registers a check there) and, failing that, when the test body returns; the message
names the gang, its pods, where and when each one bound, and what became of it.
Tests that create partial gangs on purpose opt out with
`@pytest.mark.allow_partial_gangs(reason)`.
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
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import yaml

from tests.e2e.support.cluster import POLL_CHECKS

GROUP_LABEL = "scheduling.muster.dev/pod-group"
BYPASSED = "scheduling.muster.dev/bypassed-gang-admission"
# A gang of the cluster's own (Kubernetes 1.37 native gang scheduling) is named after
# its PodGroup in this API group: `spec.schedulingGroup.podGroupName` on the pod.
NATIVE = "scheduling.k8s.io/"
PODGROUPS_PATH = "/apis/{api}/v1beta1/namespaces/{namespace}/podgroups/{name}"
GRACE_SECONDS = float(os.environ.get("MUSTER_E2E_PARTIAL_GANG_GRACE", "5"))
PATIENCE_SECONDS = float(os.environ.get("MUSTER_E2E_OBSERVER_PATIENCE", "60"))
FINISHED = ("Succeeded", "Failed")
# The server ends each watch after WATCH_SECONDS; a connection silent for longer than
# WATCH_SILENCE is taken for dead and resumed, so a watch never hangs unseen.
WATCH_SECONDS = 60
WATCH_SILENCE = 90.0


def clock(at: datetime) -> str:
    return at.strftime("%H:%M:%S.%f")[:-3] + "Z"


# ---- the rule, with no I/O ------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """A member pod as the rule sees it."""

    gang: str | None
    node: str | None = None
    phase: str = ""
    leaving: bool = False  # deletionTimestamp set: being taken down
    bypassed: bool = False  # created bound (its node named): not released by Muster

    @property
    def standing(self) -> bool:
        return bool(self.node) and self.phase not in FINISHED and not self.leaving

    @property
    def held(self) -> bool:
        return self.standing or self.phase == "Succeeded"

    def describe(self, pod: str) -> str:
        where = f"{pod} on {self.node}" if self.node else f"{pod} unbound"
        notes = [self.phase] if self.phase in FINISHED else []
        notes += ["leaving"] if self.leaving else []
        return f"{where} ({', '.join(notes)})" if notes else where


@dataclass(frozen=True)
class Bind:
    pod: str
    node: str
    at: float  # monotonic
    wall: datetime


@dataclass
class Rise:
    """One climb of a gang's standing count from 0."""

    gang: str
    min_count: int
    started: float
    binds: list[Bind] = field(default_factory=list)
    reached: float | None = None  # when the gang held minCount pods
    fell: float | None = None  # when it fell back to 0 standing before reaching minCount
    unbound: list[str] = field(default_factory=list)  # members seen, never bound, in the rise

    @property
    def spread(self) -> float | None:
        """First bind to minCount held, once it is."""
        return None if self.reached is None else self.reached - self.started

    def late(self, grace: float, now: float) -> bool:
        end = self.reached if self.reached is not None else self.fell
        return (now if end is None else end) - self.started > grace

    def describe(self, grace: float) -> str:
        first = self.binds[0].at
        binds = ", ".join(
            f"{b.pod} on {b.node} at {clock(b.wall)} (+{b.at - first:.2f}s)" for b in self.binds
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


@dataclass
class Fall:
    """A gang that held minCount pods holding fewer while some member still stands."""

    gang: str
    min_count: int
    started: float
    wall: datetime
    lowest: int  # the fewest pods held meanwhile
    members: list[str] = field(default_factory=list)  # as they were at the lowest
    ended: float | None = None
    restored: bool = False  # ended holding minCount again, rather than taken down whole

    def lasted(self, now: float) -> float:
        return (now if self.ended is None else self.ended) - self.started

    def late(self, grace: float, now: float) -> bool:
        return self.lasted(now) > grace

    def describe(self, grace: float) -> str:
        if self.ended is None:
            outcome = "still short, not taken down"
        elif self.restored:
            outcome = f"whole again only after {self.lasted(self.ended):.2f}s"
        else:
            outcome = f"taken down whole only after {self.lasted(self.ended):.2f}s"
        return (
            f"partial gang {self.gang}: fell from whole to {self.lowest} of minCount "
            f"{self.min_count} pods at {clock(self.wall)} and stayed short for more than "
            f"{grace:g}s with members standing ({outcome}); members at the lowest: "
            f"{', '.join(self.members)}"
        )


Verdict = Rise | Fall


@dataclass(frozen=True)
class GangPolicy:
    """What the rules need of a gang's PodGroup."""

    min_count: int
    disrupted_whole: bool = True  # `disruptionMode: all`, the default; `single` may fall


@dataclass
class GangState:
    policy: GangPolicy | None  # None: not a gang (no PodGroup, or a `basic` one)
    rise: Rise | None = None
    fall: Fall | None = None


class GangLedger:
    """The rules applied to a stream of pod states; pure, so it is tested without a cluster.

    `policy(gang)` answers the PodGroup's gang policy, or None when the pods are not a
    gang (no PodGroup, or a `basic` one).
    """

    def __init__(self, policy: Callable[[str], GangPolicy | None], grace: float = GRACE_SECONDS):
        self.grace = grace
        self._policy = policy
        self._pods: dict[str, Member] = {}
        self._gangs: dict[str, GangState] = {}  # gangs with a member standing
        self._violated: list[Verdict] = []  # finished rises and falls that broke a rule
        self.risen: list[Rise] = []  # rises that reached minCount in time
        self.undone: list[float] = []  # first bind -> back to 0, of rises undone in time
        self.falls: list[Fall] = []  # every fall, ended or not

    def pod(
        self,
        name: str,
        gang: str | None,
        node: str | None,
        at: float,
        *,
        phase: str = "",
        leaving: bool = False,
        bypassed: bool = False,
    ) -> None:
        """A pod as it is now (added or modified)."""
        before = self._pods.get(name, Member(None)).gang
        self._pods[name] = Member(gang, node or None, phase, leaving, bypassed)
        for touched in {before, gang} - {None}:
            assert touched is not None
            self._update(touched, at)

    def gone(self, name: str, at: float) -> None:
        before = self._pods.pop(name, Member(None)).gang
        if before is not None:
            self._update(before, at)

    def pods(self) -> list[str]:
        return list(self._pods)

    def _members(self, gang: str) -> dict[str, Member]:
        return {pod: m for pod, m in sorted(self._pods.items()) if m.gang == gang}

    def _update(self, gang: str, at: float) -> None:
        members = self._members(gang)
        standing = {pod: m for pod, m in members.items() if m.standing}
        held = sum(m.held for m in members.values())
        state = self._gangs.get(gang)
        if not standing:
            if state is not None:
                del self._gangs[gang]
                self._left(state, at)
            return
        if state is None:
            if all(m.bypassed for m in standing.values()):
                return  # bound by their creators: no release to judge yet
            state = self._gangs[gang] = GangState(self._policy(gang))
            if state.policy is not None:
                state.rise = Rise(gang, state.policy.min_count, started=at)
        if state.policy is None:
            return
        if state.rise is not None:
            self._rising(state, members, held, at)
        elif held >= state.policy.min_count:
            self._end_fall(state, at, restored=True)
        else:
            self._falling(gang, state, members, held, at)

    def _rising(self, state: GangState, members: dict[str, Member], held: int, at: float) -> None:
        rise = state.rise
        assert rise is not None
        wall = datetime.now(UTC)
        seen = {b.pod for b in rise.binds}
        rise.binds.extend(
            Bind(pod, m.node, at, wall)
            for pod, m in members.items()
            if m.standing and m.node and pod not in seen
        )
        seen = {b.pod for b in rise.binds}
        waiting = {pod for pod, m in members.items() if not m.node} | set(rise.unbound)
        rise.unbound = sorted(waiting - seen)
        if held >= rise.min_count:
            rise.reached = at
            state.rise = None
            if rise.late(self.grace, at):
                self._violated.append(rise)
            else:
                self.risen.append(rise)

    def _falling(
        self, gang: str, state: GangState, members: dict[str, Member], held: int, at: float
    ) -> None:
        described = [m.describe(pod) for pod, m in members.items()]
        fall = state.fall
        if fall is None:
            state.policy = policy = self._policy(gang)  # resized, or no gang any more?
            if policy is not None and policy.disrupted_whole and held < policy.min_count:
                state.fall = Fall(gang, policy.min_count, at, datetime.now(UTC), held, described)
                self.falls.append(state.fall)
        elif held < fall.lowest:
            fall.lowest, fall.members = held, described

    def _end_fall(self, state: GangState, at: float, *, restored: bool) -> None:
        fall, state.fall = state.fall, None
        if fall is None:
            return
        fall.ended, fall.restored = at, restored
        if fall.late(self.grace, at):
            self._violated.append(fall)

    def _left(self, state: GangState, at: float) -> None:
        """No member stands any more: the rise is undone, or the gang taken down whole."""
        self._end_fall(state, at, restored=False)
        rise = state.rise
        if rise is None:
            return
        rise.fell = at
        if rise.late(self.grace, at):
            self._violated.append(rise)
        else:
            self.undone.append(at - rise.started)

    def violations(self, now: float) -> list[Verdict]:
        stalled = [v for v in self._in_progress() if v.late(self.grace, now)]
        return [*self._violated, *stalled]

    def _in_progress(self) -> list[Verdict]:
        return [v for s in self._gangs.values() for v in (s.rise, s.fall) if v is not None]

    def undecided(self, now: float) -> float:
        """Seconds until every rise and fall now in progress is decided (0: none is)."""
        pending = [v.started + self.grace - now for v in self._in_progress()]
        return max([0.0, *pending])


# ---- the watch --------------------------------------------------------------------------


class ApiError(Exception):
    """The API server answered, but not with what was asked for."""


class ApiClient:
    """Just enough of a Kubernetes client for a list, a get and a watch, from a kubeconfig.

    `user`: act as that user (impersonation), to see the observer with fewer rights.
    """

    def __init__(self, kubeconfig: Path, user: str | None = None):
        config = yaml.safe_load(kubeconfig.read_text())
        context_name = config.get("current-context")
        context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        credentials = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        server = urlsplit(cluster["server"])
        self.host, self.port = server.hostname or "127.0.0.1", server.port or 443
        self._files = tempfile.TemporaryDirectory(prefix="muster-observer-")
        self.context = ssl.create_default_context(
            cafile=self._file(cluster, "certificate-authority")
        )
        self.headers = {"Impersonate-User": user} if user else {}
        if "token" in credentials:
            self.headers["Authorization"] = f"Bearer {credentials['token']}"
        else:
            cert = self._file(credentials, "client-certificate")
            if cert is None:
                raise ValueError(f"{kubeconfig}: the user has neither a token nor a certificate")
            self.context.load_cert_chain(cert, self._file(credentials, "client-key"))

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


def refusal(status: int, body: Any) -> str:
    message = body.get("message") if isinstance(body, dict) else body
    return f"HTTP {status}: {message}"


def gang_of(pod: dict[str, Any]) -> str | None:
    """The pod's gang: the cluster's own when it has one (prefixed with its API group;
    Muster leaves those alone, though their pods may carry its label), else Muster's
    PodGroup named by its label."""
    native = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    muster = (pod["metadata"].get("labels") or {}).get(GROUP_LABEL)
    return f"{NATIVE}{native}" if native else muster


def policy_of(group: dict[str, Any]) -> GangPolicy | None:
    spec = group.get("spec") or {}
    gang = (spec.get("schedulingPolicy") or {}).get("gang")
    if not isinstance(gang, dict):
        return None
    single = "single" in (spec.get("disruptionMode") or {})
    return GangPolicy(int(gang.get("minCount", 1)), disrupted_whole=not single)


# What a request to the API server may fail with, besides an answer it did not want.
FAILURES = (OSError, http.client.HTTPException, ValueError, ApiError)


class GangObserver:
    """The ledger fed by a watch of one namespace's pods, in a thread of its own."""

    def __init__(
        self,
        kubeconfig: Path,
        namespace: str,
        grace: float = GRACE_SECONDS,
        patience: float = PATIENCE_SECONDS,
        user: str | None = None,
    ):
        self.namespace = namespace
        self.patience = patience
        self.api = ApiClient(kubeconfig, user)
        self.ledger = GangLedger(self._policy, grace)
        self.resume_from = ""  # the resourceVersion the watch resumes from
        self.errors: list[str] = []  # what kept the observer from seeing: each fails the test
        self.interruptions: list[str] = []  # what it recovered from, for the record
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connection: http.client.HTTPSConnection | None = None
        self._thread: threading.Thread | None = None
        self._troubled_since: float | None = None  # the current run of failures began
        self._reported: set[int] = set()  # ids of the verdicts already raised
        self._errors_reported = 0

    # -- lifecycle

    def start(self) -> None:
        self._relist()
        self._thread = threading.Thread(
            target=self._run, name=f"gang-observer-{self.namespace}", daemon=True
        )
        self._thread.start()

    def interrupt(self) -> None:
        """Break the watch's connection, as a network failure would."""
        connection = self._connection
        if connection is not None and connection.sock is not None:
            with suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self._stopping.set()
        self.interrupt()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.api.close()

    def finish(self) -> None:
        """Settle, stop watching, and raise for what was not raised yet (once; later
        calls do nothing)."""
        if self._stopping.is_set():
            return
        self.settle()
        self.stop()
        self.check()

    def settle(self) -> None:
        """Wait until every rise and fall in progress is decided (at most the grace)."""
        with self._lock:
            wait = self.ledger.undecided(time.monotonic())
        if wait:
            time.sleep(wait + 0.5)

    # -- verdicts

    def violations(self) -> list[Verdict]:
        with self._lock:
            return list(self.ledger.violations(time.monotonic()))

    def check(self) -> None:
        """Raise for violations and errors not raised yet: each one fails a test once."""
        fresh = self.unreported()
        errors = self.errors[self._errors_reported :]
        self._reported.update(id(verdict) for verdict in fresh)
        self._errors_reported += len(errors)
        if fresh or errors:
            raise AssertionError(self.report(fresh, errors))

    def unreported(self) -> list[Verdict]:
        return [v for v in self.violations() if id(v) not in self._reported]

    def report(self, verdicts: list[Verdict], errors: list[str]) -> str:
        lines = [f"in namespace {self.namespace}:"]
        lines += [f"  {verdict.describe(self.ledger.grace)}" for verdict in verdicts]
        lines += [f"  the observer could not see: {error}" for error in errors]
        return "\n".join(lines)

    def _error(self, message: str) -> None:
        self.errors.append(f"{message} (at {clock(datetime.now(UTC))})")

    # -- the watch

    def _policy(self, gang: str) -> GangPolicy | None:
        """The gang's policy, None when it is not a gang; retried for PATIENCE."""
        api, _, name = gang.rpartition("/")
        path = PODGROUPS_PATH.format(
            api=api or "scheduling.muster.dev", namespace=quote(self.namespace), name=quote(name)
        )
        deadline = time.monotonic() + self.patience
        while True:
            try:
                status, group = self.api.get(path)
                if status == 404:
                    return None
                if status != 200 or not isinstance(group, dict):
                    raise ApiError(refusal(status, group))
                return policy_of(group)
            except FAILURES as error:
                if time.monotonic() >= deadline or self._stopping.is_set():
                    self._error(
                        f"PodGroup {gang} unreadable for {self.patience:g}s ({error}): "
                        "its pods were not judged"
                    )
                    return None
                self.interruptions.append(f"reading PodGroup {gang}: {error}")
                time.sleep(0.5)

    def _pods_path(self, **query: str) -> str:
        return f"/api/v1/namespaces/{quote(self.namespace)}/pods?{urlencode(query)}"

    def _relist(self) -> None:
        status, listing = self.api.get(self._pods_path())
        if status != 200:
            raise ApiError(f"listing pods: {refusal(status, listing)}")
        now = time.monotonic()
        with self._lock:
            listed = {pod["metadata"]["name"] for pod in listing["items"]}
            for name in [name for name in self.ledger.pods() if name not in listed]:
                self.ledger.gone(name, now)
            for pod in listing["items"]:
                self._apply("MODIFIED", pod, now)
        self.resume_from = listing["metadata"]["resourceVersion"]

    def _apply(self, kind: str, pod: dict[str, Any], at: float) -> None:
        metadata = pod["metadata"]
        if kind == "DELETED":
            self.ledger.gone(metadata["name"], at)
            return
        self.ledger.pod(
            metadata["name"],
            gang_of(pod),
            pod.get("spec", {}).get("nodeName"),
            at,
            phase=pod.get("status", {}).get("phase", ""),
            leaving=bool(metadata.get("deletionTimestamp")),
            bypassed=BYPASSED in (metadata.get("annotations") or {}),
        )

    def _run(self) -> None:
        """Watch until stopped; the thread ending before that is an error of its own."""
        ended = "it returned"
        try:
            self._follow()
        except Exception as error:
            ended = "".join(traceback.format_exception(error)).strip()
        finally:
            if not self._stopping.is_set():
                self._error(f"the watch ended while the test ran: {ended}")

    def _follow(self) -> None:
        expired = False
        while not self._stopping.is_set():
            try:
                if expired:
                    self._relist()
                    self.interruptions.append("relisted: the watch's resourceVersion expired")
                    self._recovered()
                expired = not self._watch()
            except FAILURES as error:
                if self._stopping.is_set():
                    return
                self._troubled("relisting pods" if expired else "watching pods", error)
                time.sleep(0.5)

    def _troubled(self, what: str, error: BaseException) -> None:
        """One more failure in a row; a run of them as long as the patience is an error."""
        now = time.monotonic()
        self.interruptions.append(f"{what}: {error}")
        if self._troubled_since is None:
            self._troubled_since = now
        elif now - self._troubled_since >= self.patience:
            self._error(f"{what} failed for {self.patience:g}s: {error}")
            self._troubled_since = now

    def _recovered(self) -> None:
        self._troubled_since = None

    def _watch(self) -> bool:
        """Follow the watch until it ends; False when its version expired (relist)."""
        connection = self.api.connect(timeout=WATCH_SILENCE)
        self._connection = connection
        try:
            query = {
                "watch": "1",
                "resourceVersion": self.resume_from,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": str(WATCH_SECONDS),
            }
            connection.request("GET", self._pods_path(**query), headers=self.api.headers)
            response = connection.getresponse()
            if response.status != 200:
                body = response.read()
                if response.status == 410:
                    return False
                raise ApiError(refusal(response.status, json.loads(body) if body else None))
            self._recovered()
            while not self._stopping.is_set():
                line = response.readline()
                if not line:
                    return True
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    if obj.get("code") == 410:
                        return False  # too old a version to resume from
                    raise ApiError(f"watch error event: {obj.get('message')}")
                self.resume_from = obj.get("metadata", {}).get("resourceVersion", self.resume_from)
                if event.get("type") == "BOOKMARK":
                    continue
                with self._lock:
                    self._apply(event["type"], obj, time.monotonic())
            return True
        finally:
            self._connection = None
            connection.close()


@contextmanager
def observing(
    kubeconfig: Path,
    namespace: str,
    grace: float = GRACE_SECONDS,
    patience: float = PATIENCE_SECONDS,
    user: str | None = None,
) -> Iterator[GangObserver]:
    """An observer, in sync with the namespace, whose violations fail `wait_until` polls;
    `finish()` it to judge what is left when the watched work is done."""
    observer = GangObserver(kubeconfig, namespace, grace, patience, user)
    observer.start()
    POLL_CHECKS.append(observer.check)
    try:
        yield observer
    finally:
        POLL_CHECKS.remove(observer.check)
        observer.stop()
