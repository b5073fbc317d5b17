"""The generated parts of the chart and the manifests rendered from it are current, and
the installation is wired as intended."""

from __future__ import annotations

from typing import Any

import yaml
from devtools.builds import ROOT
from hack.manifests import RENDERED, generated_files, rendered_files

from muster.operator.config import OperatorConfig

BASE, CERT_MANAGER = RENDERED


def documents(path: Any = BASE) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all((ROOT / path).read_text()) if document]


def of_kind(kind: str, path: Any = BASE) -> list[dict[str, Any]]:
    return [document for document in documents(path) if document["kind"] == kind]


def test_the_generated_parts_of_the_chart_are_current() -> None:
    """Fails after a change to the CRDs or the webhook handlers: run `make manifests`."""
    for path, text in generated_files().items():
        assert (ROOT / path).read_text() == text, f"{path} is stale: run `make manifests`"


def test_the_manifests_are_the_chart_rendered() -> None:
    """Fails after a change to the chart that manifests/ does not show (or an edit of
    manifests/ by hand): run `make manifests`."""
    for path, text in rendered_files().items():
        assert (ROOT / path).read_text() == text, f"{path} is stale: run `make manifests`"


def webhooks() -> list[dict[str, Any]]:
    configurations = [
        document for document in documents() if document["kind"].endswith("WebhookConfiguration")
    ]
    assert {c["metadata"]["name"] for c in configurations} == {
        OperatorConfig().webhook_configuration
    }
    return [webhook for c in configurations for webhook in c["webhooks"]]


def test_every_webhook_is_called_through_the_service() -> None:
    [service] = of_kind("Service")
    assert webhooks()
    for webhook in webhooks():
        assert webhook["clientConfig"]["service"]["name"] == service["metadata"]["name"]
        assert webhook["clientConfig"]["service"]["namespace"] == "muster-system"
        assert webhook["clientConfig"]["service"]["port"] == service["spec"]["ports"][0]["port"]
        assert "*" not in webhook["rules"][0]["resources"]


def test_jobs_and_pods_reach_muster_only_when_they_opt_in_and_gating_fails_closed() -> None:
    """A cluster's other Jobs and pods never wait on Muster's webhooks."""
    core = [w for w in webhooks() if w["rules"][0]["resources"] in (["jobs"], ["pods"])]
    assert {w["rules"][0]["resources"][0] for w in core} == {"jobs", "pods"}
    for webhook in core:
        expressions = (webhook.get("objectSelector") or {}).get("matchExpressions") or []
        narrowed_by_label = [
            e for e in expressions if e["key"].startswith("scheduling.muster.dev/")
        ]
        assert narrowed_by_label or webhook.get("matchConditions"), webhook["name"]
        if webhook["name"].startswith("gate-"):
            assert webhook["failurePolicy"] == "Fail", webhook["name"]


def environment(path: Any = BASE) -> dict[str, str | None]:
    [deployment] = of_kind("Deployment", path)
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return {item["name"]: item.get("value") for item in container["env"]}


def resource_names(path: Any = BASE) -> set[str]:
    return {
        name
        for kind in ("Role", "ClusterRole")
        for rule in of_kind(kind, path)[0]["rules"]
        for name in rule.get("resourceNames", [])
    }


def test_no_webhook_has_a_side_effect() -> None:
    """A webhook answers only; a review anyone posts to its port writes nothing."""
    assert {webhook["sideEffects"] for webhook in webhooks()} == {"None"}


def test_the_operator_is_pointed_at_the_names_its_roles_allow() -> None:
    env = environment()
    [service] = of_kind("Service")
    assert {
        env["MUSTER_WEBHOOK_SECRET"],
        env["MUSTER_LEASE_NAME"],
        env["MUSTER_WEBHOOK_CONFIGURATION"],
    } == resource_names()
    # The release `muster` gives the names the operator expects by default.
    assert env["MUSTER_LEASE_NAME"] == OperatorConfig().lease_name
    assert env["MUSTER_WEBHOOK_CONFIGURATION"] == OperatorConfig().webhook_configuration
    assert env["MUSTER_WEBHOOK_SERVICE"] == f"$(POD_NAMESPACE)/{service['metadata']['name']}"
    assert env["MUSTER_MANAGE_WEBHOOKS"] == "false"


def test_with_cert_manager_the_operator_has_no_right_on_secrets_or_webhooks() -> None:
    env = environment(CERT_MANAGER)
    assert "MUSTER_WEBHOOK_SECRET" not in env
    assert (env["MUSTER_WEBHOOK_CERT"], env["MUSTER_WEBHOOK_KEY"]) == (
        "/certs/tls.crt",
        "/certs/tls.key",
    )
    assert resource_names(CERT_MANAGER) == {env["MUSTER_LEASE_NAME"]}
    rules = [
        rule for kind in ("Role", "ClusterRole") for rule in of_kind(kind, CERT_MANAGER)[0]["rules"]
    ]
    resources = {resource for rule in rules for resource in rule["resources"]}
    assert not resources & {"secrets", "mutatingwebhookconfigurations"}
    # cert-manager makes the Secret, and no policy is needed on rights not granted.
    assert of_kind("Secret", CERT_MANAGER) == []
    assert [policy["metadata"]["name"] for policy in of_kind(
        "ValidatingAdmissionPolicy", CERT_MANAGER
    )] == ["muster-operator-pod-rights"]  # fmt: skip
    [certificate] = of_kind("Certificate", CERT_MANAGER)
    for configuration in of_kind("MutatingWebhookConfiguration", CERT_MANAGER) + of_kind(
        "ValidatingWebhookConfiguration", CERT_MANAGER
    ):
        assert configuration["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": f"muster-system/{certificate['metadata']['name']}"
        }


def test_the_operator_fills_a_secret_it_may_not_create() -> None:
    """The chart makes the certificate's Secret, empty; the operator may read and
    replace that one Secret by name and create none."""
    [secret] = of_kind("Secret")
    assert "data" not in secret and "stringData" not in secret
    assert secret["metadata"]["name"] == environment()["MUSTER_WEBHOOK_SECRET"]
    [role] = of_kind("Role")
    for rule in role["rules"]:
        if "secrets" in rule["resources"]:
            assert rule["resourceNames"] == [secret["metadata"]["name"]]
            assert set(rule["verbs"]) <= {"get", "update"}


def test_the_replicas_run_on_different_nodes_with_a_priority_of_their_own() -> None:
    [deployment] = of_kind("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    [term] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    # No surge: a third replica could find no node free of the other two.
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}
    [priority_class] = of_kind("PriorityClass")
    assert pod["priorityClassName"] == priority_class["metadata"]["name"]
    assert priority_class["value"] == 1_000_000_000  # the highest a user-defined class may have


def test_only_the_webhook_and_health_ports_admit_traffic() -> None:
    [deployment] = of_kind("Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    [policy] = of_kind("NetworkPolicy")
    assert policy["spec"]["podSelector"] == deployment["spec"]["selector"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    ports = [port for rule in policy["spec"]["ingress"] for port in rule["ports"]]
    assert {port["port"] for port in ports} == {port["name"] for port in container["ports"]}
