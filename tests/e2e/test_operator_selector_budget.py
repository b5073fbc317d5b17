"""A tenant's costly DRA selector, as installed: its gang waits with the claim and the
limit named, the leader keeps its Lease, and another team's gang starts meanwhile.

The tenant is a user bound to the built-in `edit` ClusterRole in its own namespace,
which covers ResourceClaimTemplates and Jobs (kube-apiserver's bootstrap policy grants
`edit` the writes of `resource.k8s.io` claims and templates with DynamicResourceAllocation
on); everything it creates goes through `kubectl --as` it, so the API server admits
the selector exactly as it would the tenant's own.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from devtools.factories import NodePool
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.scheduler.devices.selector_cost import COST_LIMIT
from tests.e2e.support.harness import LEASE, is_gated, pods_of, scheduled_condition, wait_all_bound
from tests.e2e.support.namespaces import fresh_namespace
from tests.e2e.test_operator_devices import (
    DRIVER,
    RESOURCE,
    claiming_job,
    gpu_nodes,
    h100,  # noqa: F401  (a fixture)
    one_gpu,
)
from tests.unit.scheduler.device_builders import nested_all

pytestmark = pytest.mark.e2e

TENANT = "tenant-a@example.com"
# Three nested `.all()` over 30 numbers: 27,000 steps on every device, under the API
# server's estimated-cost limit; true wherever it ends, so kube-scheduler would place it.
COSTLY = nested_all(f'device.attributes["{DRIVER}"].product.size() >= a-b-c')
OTHER_TEAM_STARTS = 60.0  # seconds the other team's gang may take to bind


@pytest.fixture
def tenant(kubectl: Kubectl, namespace: str) -> Kubectl:
    """`edit` in the namespace, bound to a user, as a cluster admin grants a team."""
    kubectl(
        "create", "rolebinding", "team-edit", "--clusterrole=edit", f"--user={TENANT}",
        "-n", namespace,
    )  # fmt: skip
    return kubectl


@pytest.fixture
def other_team(kubectl: Kubectl, request: pytest.FixtureRequest) -> Iterator[str]:
    yield from fresh_namespace(kubectl, f"{request.node.name}-other")


def as_tenant(kubectl: Kubectl, namespace: str, obj: dict[str, Any]) -> None:
    kubectl("apply", "-n", namespace, f"--as={TENANT}", "-f", "-", input=json.dumps(obj))


def lease_spec(kubectl: Kubectl) -> dict[str, Any]:
    spec: dict[str, Any] = kubectl.json("get", *LEASE)["spec"]
    return spec


def renewed(spec: dict[str, Any]) -> datetime.datetime:
    return datetime.datetime.fromisoformat(spec["renewTime"])


def test_a_tenants_costly_selector_waits_while_the_leader_leads_and_others_start(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    *,
    tenant: Kubectl,
    other_team: str,
    pool: NodePool,
    request: pytest.FixtureRequest,
) -> None:
    device_class: str = request.getfixturevalue("h100")  # the devices tests' H100s
    assert len(COSTLY) == 336
    can = kubectl("auth", "can-i", "create", "resourceclaimtemplates.resource.k8s.io",
                  "-n", namespace, f"--as={TENANT}", check=False)  # fmt: skip
    assert can.stdout.strip() == "yes"
    gpu_nodes(kubectl, pool, [(4, "H100"), (4, "H100")])
    before = lease_spec(kubectl)
    costly = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "costly"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": device_class,
                                "selectors": [{"cel": {"expression": COSTLY}}],
                            },
                        }
                    ]
                }
            }
        },
    }
    as_tenant(tenant, namespace, costly)  # the API server admits it
    as_tenant(tenant, namespace, claiming_job("train", pool, 2, "costly"))
    template = one_gpu(kubectl, other_team, device_class)
    kubectl.apply(claiming_job("other", pool, 2, template), other_team)

    wait_all_bound(kubectl, other_team, "other", 2, timeout=OTHER_TEAM_STARTS)
    # The claim made from the template for a pod, or the template before it is made;
    # at first the gang waits for the selector to be judged.
    named = rf"resourceclaim(template)? {namespace}/(train-\S+|costly): selector #0: "
    over = re.compile(named + re.escape(f"CEL cost limit of {COST_LIMIT} exceeded"))
    wait_until(
        "the tenant's gang to wait with the claim and the limit named",
        lambda: bool(
            over.search(scheduled_condition(kubectl, namespace, "train").get("message", ""))
        ),
        timeout=60,
    )
    assert scheduled_condition(kubectl, namespace, "train")["reason"] == "Unschedulable"
    pods = pods_of(kubectl, namespace, "train")
    assert len(pods) == 2 and all(is_gated(pod) for pod in pods)

    after = lease_spec(kubectl)
    assert after["holderIdentity"] == before["holderIdentity"] == operator.identity
    assert after["acquireTime"] == before["acquireTime"]  # the same term, never lost
    assert renewed(after) > renewed(before)
    assert operator.running()
    assert "lost the lease" not in operator.log_path.read_text()
