"""Fixtures for tests against the real local control plane (see hack/README.md).

The cluster comes up once per test run (or is taken from MUSTER_KUBECONFIG) and each
test gets a namespace of its own.

While developing, keep one cluster up and point the tests at it, so each run skips
the start-up and runs side by side with others:

    make cluster-up && export MUSTER_KUBECONFIG=$PWD/.cluster/kubeconfig
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cluster import Kubectl, LocalCluster, fresh_namespace
from tests.e2e.harness import operator, pool  # noqa: F401  (fixtures of the operator tests)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e talks to the cluster, so it carries the e2e marker."""
    for item in items:
        if "tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)


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
