"""The image (`make image`) runs Muster as a cluster runs it: from the in-cluster
configuration alone (a mounted ServiceAccount token, CA and namespace, and
KUBERNETES_SERVICE_HOST/PORT), on a read-only root, as uid 65532, with the
Deployment's settings; it answers the chart's probes and runs a gang whole."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from devtools import installed
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import LEASE, gang_scheduled_by, wait_all_bound, wait_for_reason
from tests.e2e.support.image import image_replica, process_status

pytestmark = pytest.mark.e2e

IDENTITY = "muster-e2e-image"


def holder(kubectl: Kubectl) -> str:
    return kubectl("get", *LEASE, "-o", "jsonpath={.spec.holderIdentity}", check=False).stdout


def probe_paths(deployment: dict[str, object]) -> set[str]:
    """The paths of the Deployment's liveness, readiness and startup probes."""
    [container] = deployment["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    return {
        container[probe]["httpGet"]["path"]
        for probe in ("livenessProbe", "readinessProbe", "startupProbe")
    }


@pytest.fixture
def replica(operator: OperatorProcess, image: str, tmp_path: Path) -> OperatorProcess:
    """A replica from the image, not yet started, its token mounted from `tmp_path`."""
    return image_replica(operator, image, IDENTITY, tmp_path)


def test_the_image_leads_as_uid_65532_on_a_read_only_root_and_runs_a_gang_whole(
    operator: OperatorProcess,
    replica: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
) -> None:
    operator.stop()  # the Lease given up, so the image's replica leads at once
    try:
        replica.start()
        wait_until(f"{IDENTITY} to hold the Lease", lambda: holder(kubectl) == IDENTITY)
        assert process_status(replica, "Uid").split() == ["65532"] * 4
        assert process_status(replica, "Gid").split() == ["65532"] * 4
        assert process_status(replica, "CapEff") == "0000000000000000"
        assert process_status(replica, "NoNewPrivs") == "1"
        assert replica.image is not None
        for path in probe_paths(replica.image.deployment):
            with urllib.request.urlopen(replica.url(path), timeout=5) as response:
                assert response.status == 200, path

        pool.add(gpus=4)
        kubectl.apply(gang_job("train", pool, workers=4), namespace)
        wait_all_bound(kubectl, namespace, "train", 4)
        wait_for_reason(kubectl, namespace, "train", "Scheduled")
        assert gang_scheduled_by(kubectl, namespace, "train") == {IDENTITY}
    finally:
        replica.stop()
        operator.start()
    # Nothing refused for want of a right, and nothing written to the read-only root.
    log = replica.log_path.read_text()
    assert f"system:serviceaccount:{installed.NAMESPACE}" not in log, replica.log_tail()
    assert "Read-only file system" not in log, replica.log_tail()
    assert "Traceback" not in log, replica.log_tail()
