"""Fixtures for tests against the real local control plane (see hack/README.md).

The cluster comes up once per test run (or is taken from MUSTER_KUBECONFIG) and each
test gets a namespace of its own.

While developing, keep one cluster up and point the tests at it, so each run skips
the start-up and runs side by side with others:

    make cluster-up && export MUSTER_KUBECONFIG=$PWD/.cluster/kubeconfig

Every test that uses the `namespace` fixture runs under the gang observer
(tests/e2e/support/observer.py): a gang of that namespace that is ever partial, rising or
falling, fails the test, and so does anything that keeps the observer from seeing
(its watch failing for longer than its patience, an unreadable PodGroup, its thread
ending). A test that makes partial gangs on purpose says so with
`@pytest.mark.allow_partial_gangs("why")`; a test that makes gangs in a namespace of
its own observes it itself (test_demo.py, the native-gang cluster of
test_operator_native_field.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from devtools.cluster.local import LocalCluster
from devtools.kubectl import Kubectl

from tests.e2e.support.adoption import adopting, crds  # noqa: F401  (fixtures of the adoption tests)
from tests.e2e.support.harness import operator, pool, priorities, volumes  # noqa: F401  (fixtures of the operator tests)
from tests.e2e.support.image import image, replicas  # noqa: F401  (replicas from the image)
from tests.e2e.support.kueue import kueue, kueue_queue  # noqa: F401  (fixtures of the Kueue tests)
from tests.e2e.support.ledger import GRACE_SECONDS
from tests.e2e.support.namespaces import fresh_namespace
from tests.e2e.support.observer import GangObserver, observing


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "allow_partial_gangs(reason): the test makes partially bound gangs on purpose, "
        "so the gang observer does not watch its namespace",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e talks to the cluster, so it carries the e2e marker;
    everything under tests/e2e/faults breaks a cluster, so it carries the faults marker
    too, and never runs on the cluster the other tests share, marked or not."""
    for item in items:
        if "tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)
        if "tests/e2e/faults/" in str(item.path):
            item.add_marker(pytest.mark.faults)


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    acquired = LocalCluster.acquire()
    yield acquired
    acquired.release()


@pytest.fixture(scope="session")
def kubeconfig(cluster: LocalCluster) -> Path:
    return cluster.kubeconfig


@pytest.fixture(scope="session")
def kubectl(kubeconfig: Path) -> Kubectl:
    return Kubectl(kubeconfig)


@pytest.fixture
def namespace(kubectl: Kubectl, request: pytest.FixtureRequest) -> Iterator[str]:
    yield from fresh_namespace(kubectl, request.node.name)


# Every rise the observers saw reach minCount in time: first to minCount-th bind, seconds.
RISE_SPREADS: list[float] = []
# Every fall of a whole gang the observers saw end in time: seconds until it ended.
FALLS: list[float] = []
# Every failure of an observer's watch or reads that it recovered from.
INTERRUPTIONS: list[str] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if RISE_SPREADS:
        terminalreporter.write_line(
            f"gang observer: {len(RISE_SPREADS)} gangs rose whole; first to minCount-th bind "
            f"took at most {max(RISE_SPREADS):.2f}s (grace {GRACE_SECONDS:g}s)"
        )
    if FALLS:
        terminalreporter.write_line(
            f"gang observer: {len(FALLS)} whole gangs fell; each was taken down whole or "
            f"whole again within {max(FALLS):.2f}s"
        )
    if INTERRUPTIONS:
        terminalreporter.write_line(
            f"gang observer: recovered from {len(INTERRUPTIONS)} failed requests, the last: "
            f"{INTERRUPTIONS[-1]}"
        )


# The observer of each running test, so that it judges when the test body ends.
OBSERVED: dict[str, GangObserver] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Judge the test's own lifetime: the observer settles, stops and fails the test for
    what it has not reported yet when the test body returns, before fixtures stop the
    operator or delete nodes (which may leave a gang mid-release, and must not count
    against the test)."""
    observer = OBSERVED.get(item.nodeid)
    try:
        result = yield
    except BaseException:
        if observer is not None:
            observer.stop()
        raise
    if observer is not None:
        observer.finish()
    return result


@pytest.fixture(autouse=True)
def gang_observer(request: pytest.FixtureRequest) -> Iterator[GangObserver | None]:
    """Watches the test's namespace, if it has one, for partial gangs."""
    if "namespace" not in request.fixturenames or request.node.get_closest_marker(
        "allow_partial_gangs"
    ):
        yield None
        return
    kubeconfig: Path = request.getfixturevalue("kubeconfig")
    namespace: str = request.getfixturevalue("namespace")
    with observing(kubeconfig, namespace) as observer:
        OBSERVED[request.node.nodeid] = observer
        try:
            yield observer
        finally:
            OBSERVED.pop(request.node.nodeid, None)
            RISE_SPREADS.extend(r.spread for r in observer.ledger.risen if r.spread is not None)
            FALLS.extend(f.lasted(f.ended) for f in observer.ledger.falls if f.ended is not None)
            INTERRUPTIONS.extend(observer.interruptions)
