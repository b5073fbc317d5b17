"""A ValidatingAdmissionPolicy that refuses the release of one pod of a gang.

The policy denies the update that removes Muster's gate from the first pod (completion
index 0) of an Indexed Job; the other pods' releases go through, and kube-scheduler
binds them at once. The window is asserted: the API server refused the release of
that pod (its refusal is quoted in the gang's condition and event) while the others
were released. The operator must roll the gang back at once, not wait for its
release timeout with the rest running: the observer allows a gang that rises from 0
bound and falls back to 0 within its grace, and fails one that stays partial longer.
That the others were released and bound is asserted too: the observer saw the gang
rise and fall back to 0 (`undone`) before the policy went.
Once the policy is gone, the gang (admitted again after its backoff) runs whole.

The policy is in force before the Job exists: a dry run of the same update on a pod of
the test's own, outside any gang, is refused first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.constants import GANG_GATE
from tests.e2e.support.harness import events_for, pods_of, wait_all_bound, wait_for_reason
from tests.e2e.support.observer import GangObserver

WORKERS = 4
INDEX = "batch.kubernetes.io/job-completion-index"
MESSAGE = "e2e policy: the first pod of this gang may not be released"


def _policy(name: str, namespace: str) -> list[dict[str, object]]:
    keeps_gate = (
        f"!has(oldObject.spec.schedulingGates) || "
        f"!oldObject.spec.schedulingGates.exists(g, g.name == '{GANG_GATE}') || "
        f"(has(object.spec.schedulingGates) && "
        f"object.spec.schedulingGates.exists(g, g.name == '{GANG_GATE}'))"
    )
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["UPDATE"],
                            "resources": ["pods"],
                        }
                    ]
                },
                "matchConditions": [
                    {
                        "name": "first-pod",
                        "expression": f"'{INDEX}' in object.metadata.labels && "
                        f"object.metadata.labels['{INDEX}'] == '0'",
                    }
                ],
                "validations": [{"expression": keeps_gate, "message": MESSAGE}],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
                },
            },
        },
    ]


@contextmanager
def refusing_the_first_release(kubectl: Kubectl, namespace: str) -> Iterator[None]:
    name = f"e2e-refuse-release-{namespace}"[:63]
    objects = _policy(name, namespace)
    kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    )
    try:
        _wait_in_force(kubectl, namespace)
        yield
    finally:
        for kind in ("validatingadmissionpolicybinding", "validatingadmissionpolicy"):
            kubectl("delete", kind, name, "--ignore-not-found", check=False)


def _wait_in_force(kubectl: Kubectl, namespace: str) -> None:
    """A pod outside any gang, gated and labelled like the refused one: until a dry run
    of its release is refused, the API server has not loaded the policy yet."""
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "policy-probe", "labels": {INDEX: "0"}},
        "spec": {
            "schedulingGates": [{"name": GANG_GATE}],
            "containers": [{"name": "probe", "image": "probe"}],
        },
    }
    kubectl.apply(probe, namespace)

    def refused() -> bool:
        dry_run = kubectl(
            "patch",
            "pod",
            "policy-probe",
            "-n",
            namespace,
            "--dry-run=server",
            "--type=json",
            "-p",
            '[{"op": "remove", "path": "/spec/schedulingGates"}]',
            check=False,
        )
        return dry_run.returncode != 0 and MESSAGE in dry_run.stderr

    try:
        wait_until("the policy to be in force", refused, timeout=30)
    finally:
        kubectl("delete", "pod", "policy-probe", "-n", namespace, "--wait=false", check=False)


def test_a_release_refused_by_a_policy_rolls_the_gang_back_and_it_runs_once_the_policy_goes(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    gang_observer: GangObserver,
) -> None:
    pool.add(gpus=WORKERS)
    job = gang_job("train", pool, workers=WORKERS)
    job["spec"]["completionMode"] = "Indexed"
    with refusing_the_first_release(kubectl, namespace):
        kubectl.apply(job, namespace)
        condition = wait_for_reason(kubectl, namespace, "train", "RolledBack", timeout=60)
        first = [
            pod["metadata"]["name"]
            for pod in pods_of(kubectl, namespace, "train")
            if pod["metadata"]["labels"].get(INDEX) == "0"
        ]
        assert len(first) == 1
        assert f"the API server refused to release pod {first[0]}" in condition["message"]
        assert MESSAGE in condition["message"]
        told = [e for e in events_for(kubectl, namespace, "train") if e["reason"] == "RolledBack"]
        assert any(MESSAGE in event["message"] for event in told)
        wait_until(
            "the observer to see the pods released beside the refused one bound, then gone",
            lambda: bool(gang_observer.ledger.undone),
        )
    removed = time.monotonic()
    pods = wait_all_bound(kubectl, namespace, "train", WORKERS, timeout=90)
    assert len({pod["metadata"]["labels"][INDEX] for pod in pods}) == WORKERS
    undone = gang_observer.ledger.undone
    print(
        f"release refused by a policy: {len(undone)} release(s) rolled back, each from its "
        f"first bind back to 0 bound within {max(undone):.1f}s; the gang bound whole "
        f"{time.monotonic() - removed:.1f}s after the policy went; said: {condition['message']}"
    )
