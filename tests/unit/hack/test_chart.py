"""charts/muster: it lints, its values are the operator's flags, and a change of values
(replicas, namespace, release name, cert-manager) renders an installation wired to
itself. The chart's objects on a real API server: tests/e2e/test_helm.py."""

from __future__ import annotations

import json
import tarfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from celpy.adapter import json_to_cel
from devtools import helm

from muster.api.constants import UNEVICTABLE_NAMESPACE
from muster.operator.config import OperatorConfig
from muster.operator.dashboard.access import BOARD_RIGHT
from muster.scheduler.rules.pod_terms import label_selector

VALUES = helm.CHART / "values.yaml"
SCHEMA = json.loads((helm.CHART / "values.schema.json").read_text())
# Settings whose installed value differs from the operator's default, and why.
INSTALLED = {"log_format": "json"}  # one object a line, for log collectors
JSON_TYPES = {float: "number", int: "integer", str: "string"}


def objects(
    *values: str, release: str = helm.RELEASE, namespace: str = helm.NAMESPACE
) -> list[dict[str, Any]]:
    text = helm.template(*values, release=release, namespace=namespace)
    return [document for document in yaml.safe_load_all(text) if document]


def of_kind(documents: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [document for document in documents if document["kind"] == kind]


ADOPTING = ("adoption.apis={volcano}", "adoption.namespaceSelector.matchLabels.team=ml")


@pytest.mark.parametrize("values", [(), helm.CERT_MANAGER, ADOPTING])
def test_the_chart_lints(values: tuple[str, ...]) -> None:
    helm.helm("lint", "--strict", str(helm.CHART), *helm.sets(values))


def test_every_setting_is_a_flag_of_muster_run_with_its_default() -> None:
    settings = yaml.safe_load(VALUES.read_text())["settings"]
    schema = SCHEMA["properties"]["settings"]["properties"]
    assert set(settings) == set(schema)
    config = {field.name: field for field in fields(OperatorConfig)}
    for key, value in settings.items():
        name = "".join(f"_{c.lower()}" if c.isupper() else c for c in key)
        assert name in config, key
        default = config[name].default
        assert value == INSTALLED.get(name, default), key
        expected = JSON_TYPES[type(default)]
        assert schema[key].get("type", expected) == expected, key


def test_every_value_is_commented() -> None:
    """values.yaml is the chart's documentation: each value says what it changes."""
    lines = VALUES.read_text().splitlines()
    documented = (
        "",
        "image",
        "networkPolicy",
        "certManager",
        "dashboard",
        "adoption",
        "settings",
    )
    parent = ""
    for number, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#") or ":" not in line:
            continue
        indent = len(line) - len(line.lstrip())
        key = line.split(":", 1)[0].strip()
        if indent == 0:
            parent = key
        if indent in (0, 2) and (indent == 0 or parent in documented):
            assert lines[number - 1].lstrip().startswith("#"), f"values.yaml: {key} has no comment"


def test_adoption_brings_its_webhook_rights_and_settings_only_when_on() -> None:
    def adopt_webhooks(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
        [mutating] = of_kind(documents, "MutatingWebhookConfiguration")
        return [hook for hook in mutating["webhooks"] if hook["name"].startswith("adopt-pods.")]

    def rules(documents: list[dict[str, Any]]) -> list[Any]:
        roles = of_kind(documents, "ClusterRole")
        [role] = [role for role in roles if role["metadata"]["name"] == "muster-operator"]
        return [rule for rule in role["rules"] if "scheduling.volcano.sh" in rule["apiGroups"]]

    def env(documents: list[dict[str, Any]]) -> dict[str, str]:
        [deployment] = of_kind(documents, "Deployment")
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        return {item["name"]: item.get("value", "") for item in container["env"]}

    off = objects()
    assert adopt_webhooks(off) == [] and rules(off) == []
    assert "MUSTER_ADOPT" not in env(off)
    on = objects(*ADOPTING)
    [webhook] = adopt_webhooks(on)
    assert webhook["namespaceSelector"] == {
        "matchLabels": {"scheduling.muster.dev/adopt": "true", "team": "ml"}
    }
    assert webhook["reinvocationPolicy"] == "IfNeeded"
    assert rules(on)
    assert env(on)["MUSTER_ADOPT"] == "volcano"
    assert json.loads(env(on)["MUSTER_ADOPT_NAMESPACE_SELECTOR"]) == webhook["namespaceSelector"]
    with pytest.raises(RuntimeError, match="adoption"):
        objects("adoption.apis={yunikorn}")
    assert adoption_rights(off) == []
    [policy] = adoption_rights(on)
    [condition] = policy["spec"]["matchConditions"]
    assert "'system:serviceaccount:muster-system:muster-operator'" in condition["expression"]


def adoption_rights(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        policy
        for policy in of_kind(documents, "ValidatingAdmissionPolicy")
        if policy["metadata"]["name"].endswith("-adoption-rights")
    ]


SELECTOR: dict[str, Any] = {
    "matchLabels": {"scheduling.muster.dev/adopt": "true"},
    "matchExpressions": [
        {"key": "team", "operator": "In", "values": ["ml", "vision"]},
        {"key": "tier", "operator": "NotIn", "values": ["prod"]},
        {"key": "gpu", "operator": "Exists"},
        {"key": "frozen", "operator": "DoesNotExist"},
    ],
}
ADOPTED = {"scheduling.muster.dev/adopt": "true", "team": "ml", "gpu": "a100"}


@pytest.mark.parametrize(
    "labels",
    [
        ADOPTED,
        ADOPTED | {"tier": "dev"},
        ADOPTED | {"tier": "prod"},
        ADOPTED | {"team": "web"},
        ADOPTED | {"frozen": ""},
        {k: v for k, v in ADOPTED.items() if k != "gpu"},
        ADOPTED | {"scheduling.muster.dev/adopt": "false"},
        {},
    ],
)
def test_the_adoption_rights_policy_selects_the_namespaces_the_selector_does(
    labels: dict[str, str],
) -> None:
    """The policy's CEL, rendered from adoption.namespaceSelector, agrees with the
    selector as a label selector reads it (`label_selector`, the engine's reading)."""
    expressions = [
        f"adoption.namespaceSelector.matchExpressions[{index}].{field}={value}"
        for index, requirement in enumerate(SELECTOR["matchExpressions"])
        for field, value in requirement.items()
        if field != "values"
    ] + ["adoption.namespaceSelector.matchExpressions[0].values={ml,vision}"]
    expressions.append("adoption.namespaceSelector.matchExpressions[1].values={prod}")
    [policy] = adoption_rights(objects("adoption.apis={volcano}", *expressions))
    [validation] = policy["spec"]["validations"]
    program = celpy.Environment().program(celpy.Environment().compile(validation["expression"]))
    judged = program.evaluate({"variables": json_to_cel({"labels": labels})})
    expected = label_selector(SELECTOR, "adoption.namespaceSelector")
    assert expected is not None
    assert bool(judged) == expected.matches(labels)


def test_an_unknown_value_is_refused() -> None:
    with pytest.raises(RuntimeError, match="additional properties"):
        objects("settings.releaseTimeot=5")


def test_another_release_in_another_namespace_is_wired_to_itself() -> None:
    documents = objects("replicas=3", release="batch", namespace="scheduling")
    names = {(document["kind"], document["metadata"]["name"]) for document in documents}
    assert ("Deployment", "batch-muster-operator") in names
    assert ("ClusterRole", "batch-muster-operator") in names
    assert ("PriorityClass", "batch-muster-operator") in names
    [deployment] = of_kind(documents, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    assert deployment["metadata"]["namespace"] == "scheduling"
    policies = of_kind(documents, "ValidatingAdmissionPolicy")
    assert {policy["metadata"]["name"] for policy in policies} == {
        "batch-muster-operator-pod-rights",
        "batch-muster-operator-webhook-rights",
    }
    for policy in policies:
        [condition] = policy["spec"]["matchConditions"]
        assert "'system:serviceaccount:scheduling:batch-muster-operator'" in condition["expression"]
    [secret] = of_kind(documents, "Secret")
    assert (secret["metadata"]["namespace"], secret["metadata"]["name"]) == (
        "scheduling",
        "batch-muster-webhook-tls",
    )
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        [binding] = of_kind(documents, kind)
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "batch-muster-operator", "namespace": "scheduling"}
        ]
    for configuration in of_kind(documents, "MutatingWebhookConfiguration"):
        assert configuration["metadata"]["name"] == "batch-muster.scheduling.muster.dev"
        for webhook in configuration["webhooks"]:
            service = webhook["clientConfig"]["service"]
            assert (service["namespace"], service["name"]) == (
                "scheduling",
                "batch-muster-webhooks",
            )
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["MUSTER_LEASE_NAME"] == "batch-muster-operator"
    assert env["MUSTER_WEBHOOK_CONFIGURATION"] == "batch-muster.scheduling.muster.dev"
    assert env["MUSTER_WEBHOOK_SECRET"] == "batch-muster-webhook-tls"


def test_a_single_replica_gets_no_disruption_budget() -> None:
    """A budget of one replica would block every drain of its node."""
    assert of_kind(objects("replicas=1"), "PodDisruptionBudget") == []
    assert len(of_kind(objects(), "PodDisruptionBudget")) == 1


def test_cert_manager_takes_the_issuer_it_is_given() -> None:
    documents = objects(*helm.CERT_MANAGER, "certManager.issuerRef.kind=ClusterIssuer",
                        "certManager.issuerRef.name=corporate-ca")  # fmt: skip
    assert of_kind(documents, "Issuer") == []
    [certificate] = of_kind(documents, "Certificate")
    assert certificate["spec"]["issuerRef"] == {"kind": "ClusterIssuer", "name": "corporate-ca"}


def test_the_chart_packages_for_publishing(tmp_path: Path) -> None:
    """`helm package`, as the README publishes it (then `helm push oci://...`)."""
    helm.helm("package", str(helm.CHART), f"--destination={tmp_path}")
    version = yaml.safe_load((helm.CHART / "Chart.yaml").read_text())["version"]
    with tarfile.open(tmp_path / f"muster-{version}.tgz") as package:
        names = set(package.getnames())
    for part in ("Chart.yaml", "values.yaml", "values.schema.json", "templates/NOTES.txt"):
        assert f"muster/{part}" in names
    assert {f"muster/crds/{crd.name}" for crd in (helm.CHART / "crds").iterdir()} <= names


def test_the_dashboard_is_served_only_when_enabled_with_read_only_rights() -> None:
    quiet = objects()
    (role,) = [
        r for r in of_kind(quiet, "ClusterRole") if r["metadata"]["name"] == "muster-dashboard"
    ]
    verbs = {verb for rule in role["rules"] for verb in rule["verbs"]}
    assert verbs == {"list", "watch"}
    assert not any("secrets" in rule["resources"] for rule in role["rules"])
    assert not [
        b for b in of_kind(quiet, "ClusterRoleBinding") if "dashboard" in b["metadata"]["name"]
    ]
    served = objects("dashboard.enabled=true", "dashboard.port=9000")
    (binding,) = [
        b for b in of_kind(served, "ClusterRoleBinding") if "dashboard" in b["metadata"]["name"]
    ]
    assert binding["subjects"][0]["name"] == "muster-operator"
    (service,) = [
        s for s in of_kind(served, "Service") if s["metadata"]["name"] == "muster-dashboard"
    ]
    assert service["spec"]["ports"][0]["port"] == 9000
    (deployment,) = of_kind(served, "Deployment")
    env = {
        e["name"]: e.get("value")
        for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert (env["MUSTER_DASHBOARD_HOST"], env["MUSTER_DASHBOARD_PORT"]) == ("0.0.0.0", "9000")


def test_no_pod_reaches_the_page_but_the_sources_named() -> None:
    """Empty sources (the default) leave the page's port out of the NetworkPolicy, so no
    pod reaches it; `kubectl port-forward` arrives on the pod's loopback, which no
    policy filters."""

    def page_rules(*values: str) -> list[dict[str, Any]]:
        (policy,) = of_kind(objects("dashboard.enabled=true", *values), "NetworkPolicy")
        page = {"port": "dashboard", "protocol": "TCP"}
        return [rule for rule in policy["spec"]["ingress"] if page in rule["ports"]]

    assert page_rules() == []
    proxy = "dashboard.sources[0].namespaceSelector.matchLabels.team=proxy"
    assert page_rules(proxy) == [
        {
            "ports": [{"port": "dashboard", "protocol": "TCP"}],
            "from": [{"namespaceSelector": {"matchLabels": {"team": "proxy"}}}],
        }
    ]


REVIEWS = [
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["subjectaccessreviews"],
        "verbs": ["create"],
    },
]


def test_the_page_brings_its_review_rights_and_the_viewers_role_only_when_enabled() -> None:
    def roles(documents: list[dict[str, Any]]) -> dict[str, list[Any]]:
        return {r["metadata"]["name"]: r["rules"] for r in of_kind(documents, "ClusterRole")}

    quiet = roles(objects())
    assert "muster-dashboard-viewer" not in quiet
    assert not [rule for rule in quiet["muster-operator"] if rule in REVIEWS]
    served = roles(objects("dashboard.enabled=true"))
    assert [rule for rule in served["muster-operator"] if rule in REVIEWS] == REVIEWS
    # Exactly the right the page asks the API server about (get podgroups), no more.
    assert served["muster-dashboard-viewer"] == [
        {
            "apiGroups": [BOARD_RIGHT["group"]],
            "resources": [BOARD_RIGHT["resource"]],
            "verbs": [BOARD_RIGHT["verb"]],
        }
    ]


def test_the_namespace_the_policy_keeps_from_evictions_is_the_one_the_engine_spares() -> None:
    [policy] = [
        document
        for document in of_kind(objects(), "ValidatingAdmissionPolicy")
        if document["metadata"]["name"] == "muster-operator-pod-rights"
    ]
    expressions = [validation["expression"] for validation in policy["spec"]["validations"]]
    assert any(f"request.namespace != '{UNEVICTABLE_NAMESPACE}'" in e for e in expressions)
