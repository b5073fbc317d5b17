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

The rules themselves are a pure ledger (tests/e2e/support/ledger.py); this module feeds
it from watches of the API server.
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
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import yaml
from devtools.waiting import POLL_CHECKS

from tests.e2e.support.ledger import (
    GRACE_SECONDS,
    GangLedger,
    GangPolicy,
    Verdict,
    clock,
)

GROUP_LABEL = "scheduling.muster.dev/pod-group"
BYPASSED = "scheduling.muster.dev/bypassed-gang-admission"
# A gang of the cluster's own (Kubernetes 1.37 native gang scheduling) is named after
# its PodGroup in this API group: `spec.schedulingGroup.podGroupName` on the pod.
NATIVE = "scheduling.k8s.io/"
PODGROUPS_PATH = "/apis/{api}/v1beta1/namespaces/{namespace}/podgroups/{name}"
PATIENCE_SECONDS = float(os.environ.get("MUSTER_E2E_OBSERVER_PATIENCE", "60"))
# The server ends each watch after WATCH_SECONDS; a connection silent for longer than
# WATCH_SILENCE is taken for dead and resumed, so a watch never hangs unseen.
WATCH_SECONDS = 60
WATCH_SILENCE = 90.0


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
