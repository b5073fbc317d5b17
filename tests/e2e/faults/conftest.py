"""The fault suite's control plane: its own, since its tests break it on purpose.

Fault tests restart kube-apiserver and compact etcd, which no other run sharing a
cluster should have to live through, so this package starts a control plane of its
own (in `.cluster-faults/`, or MUSTER_E2E_FAULTS_CLUSTER_DIR) and stops it when the
package is done, before any other cluster's tests go on. Two things differ from the
main e2e cluster:

- `--audit`: every request is in `logs/audit.log` with its user agent, so a test can
  count what one operator replica wrote, and when;
- `--no-watch-cache`: watches read etcd directly, so an etcd compaction reaches them
  as it reaches watches that fell behind the API server's cache.

The fixtures below replace the main suite's `cluster`, `kubeconfig`, `kubectl` and
`operator` for this package only; `namespace`, `pool` and the gang observer work on
top of them unchanged. An operator that dies during a test fails that test, with the
tail of its log, and is started again for the next one. The operator runs with
`--watch-timeout=5`, so its watches end (and resume) every 5 to 10 s: a compaction is
then met within seconds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from devtools.builds import ROOT
from devtools.cluster.local import LocalCluster
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

from tests.e2e.faults.faults import death_of
from tests.e2e.support.harness import installed_operator

STATE = Path(os.environ.get("MUSTER_E2E_FAULTS_CLUSTER_DIR", ROOT / ".cluster-faults"))
OPERATOR_FLAGS = ("--watch-timeout=5",)


@pytest.fixture(scope="package")
def cluster() -> Iterator[LocalCluster]:
    acquired = LocalCluster.at(STATE, "--audit", "--no-watch-cache")
    yield acquired
    acquired.release()


@pytest.fixture(scope="package")
def kubeconfig(cluster: LocalCluster) -> Path:
    return cluster.kubeconfig


@pytest.fixture(scope="package")
def kubectl(kubeconfig: Path) -> Kubectl:
    return Kubectl(kubeconfig)


@pytest.fixture(scope="package")
def operator(
    kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    log_path = tmp_path_factory.mktemp("faults") / "operator.log"
    yield from installed_operator(kubeconfig, log_path, *OPERATOR_FLAGS)


@pytest.fixture(autouse=True)
def operator_running(operator: OperatorProcess) -> None:
    """Each fault test starts with a running operator, whatever the one before did to it
    (a test that stops or kills it on purpose leaves it so; one that died is reported)."""
    if operator.process is None or operator.process.poll() is not None:
        operator.process = None
        operator.start()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """The test during which the operator died fails, naming the operator's last words;
    the next test gets a fresh one (`operator_running`)."""
    operator = getattr(item, "funcargs", {}).get("operator")
    try:
        result = yield
    except BaseException as error:
        died = death_of(operator)
        if died:
            raise AssertionError(died) from error
        raise
    died = death_of(operator)
    if died:
        raise AssertionError(died)
    return result
