"""The generated parts of manifests/ are current, and the installation is wired as intended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hack.manifests import SERVICE, generated_files

from muster.operator.config import OperatorConfig

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests"
BASE = MANIFESTS / "base"


def documents(path: Path) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def test_the_generated_files_are_current() -> None:
    """Fails after a change to the CRDs or the webhook handlers: run `make manifests`."""
    for path, text in generated_files().items():
        assert (MANIFESTS / path).read_text() == text, f"manifests/{path} is stale"


def webhooks() -> list[dict[str, Any]]:
    configurations = documents(BASE / "webhooks" / "webhook-configurations.yaml")
    assert {c["metadata"]["name"] for c in configurations} == {
        OperatorConfig().webhook_configuration
    }
    return [webhook for c in configurations for webhook in c["webhooks"]]


def test_every_webhook_is_called_through_the_service() -> None:
    assert webhooks()
    for webhook in webhooks():
        assert webhook["clientConfig"]["service"]["name"] == SERVICE.name
        assert "*" not in webhook["rules"][0]["resources"]
    service = documents(BASE / "service.yaml")[0]
    assert service["metadata"]["name"] == SERVICE.name
    assert service["spec"]["ports"][0]["port"] == SERVICE.port


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


def test_the_operator_is_pointed_at_the_names_its_roles_allow() -> None:
    [deployment] = documents(BASE / "deployment.yaml")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    role_names = {
        name
        for path in ("role.yaml", "cluster-role.yaml")
        for rule in documents(BASE / "rbac" / path)[0]["rules"]
        for name in rule.get("resourceNames", [])
    }
    assert {
        env["MUSTER_WEBHOOK_SECRET"],
        OperatorConfig().lease_name,
        OperatorConfig().webhook_configuration,
    } == role_names
    assert env["MUSTER_WEBHOOK_SERVICE"] == f"$(POD_NAMESPACE)/{SERVICE.name}"
    assert env["MUSTER_MANAGE_WEBHOOKS"] == "false"


def test_the_replicas_run_on_different_nodes_with_a_priority_of_their_own() -> None:
    [deployment] = documents(BASE / "deployment.yaml")
    pod = deployment["spec"]["template"]["spec"]
    [term] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    # No surge: a third replica could find no node free of the other two.
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}
    [priority_class] = documents(BASE / "priority-class.yaml")
    assert pod["priorityClassName"] == priority_class["metadata"]["name"]
    assert priority_class["value"] == 1_000_000_000  # the highest a user-defined class may have


def test_only_the_webhook_and_health_ports_admit_traffic() -> None:
    [deployment] = documents(BASE / "deployment.yaml")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    [policy] = documents(BASE / "network-policy.yaml")
    assert policy["spec"]["podSelector"] == deployment["spec"]["selector"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    ports = [port for rule in policy["spec"]["ingress"] for port in rule["ports"]]
    assert {port["port"] for port in ports} == {port["name"] for port in container["ports"]}
