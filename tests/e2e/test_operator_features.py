"""What the API server serves decides what Muster offers, said once and refused with
the reason (muster.api.features): on every supported version (make test-versions).

On a cluster without `resource.k8s.io/v1` (Kubernetes before 1.34), a gang Job that
claims devices is refused at creation with the reason, naming the field; the API
server would otherwise drop the claims and run its pods without the devices.
"""

from __future__ import annotations

import json

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

pytestmark = pytest.mark.e2e

DEVICES_API = "resource.k8s.io/v1"


def test_the_operator_says_in_one_line_what_is_off_and_why(
    operator: OperatorProcess, kubectl: Kubectl
) -> None:
    version = json.loads(kubectl("get", "--raw", "/version").stdout)["gitVersion"]
    this_run = operator.log_path.read_text().split("\n=== start")[-1]
    lines = [line for line in this_run.splitlines() if f"Kubernetes {version}: " in line]
    assert len(lines) == 1, lines
    assert ("DRA off: resource.k8s.io/v1 not served" in lines[0]) != kubectl.serves(DEVICES_API)


@pytest.mark.older_kubernetes
def test_where_dra_is_not_served_a_gang_job_claiming_devices_is_refused_with_the_reason(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    if kubectl.serves(DEVICES_API):
        pytest.skip(f"{DEVICES_API} is served here: claims are allocated (test_operator_devices)")
    job = gang_job("train", pool, workers=2, gpus=0)
    spec = job["spec"]["template"]["spec"]
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    spec["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    answer = kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(job), check=False)
    assert answer.returncode != 0
    assert "spec.template.spec.resourceClaims: DRA off: resource.k8s.io/v1 not served" in (
        answer.stderr
    )
    assert kubectl.json("get", "jobs", "-n", namespace)["items"] == []
