"""Webhook serving: the certificate made when none is given, the configurations built."""

from __future__ import annotations

import base64
import ipaddress
from pathlib import Path
from typing import Any

import aiohttp
import kopf
import pytest
from cryptography import x509

from muster.api.adoption import VOLCANO, Adoption
from muster.webhooks import server
from muster.webhooks.kopf_private import references
from muster.webhooks.served_resources import ServedResources


def test_without_a_certificate_the_server_serves_one_for_its_address_and_trusts_its_ca() -> None:
    served = server.webhook_server(
        host="127.0.0.1",
        port=0,
        certfile=None,
        keyfile=None,
        resources=ServedResources(kopf.get_default_registry(), references.Insights()),
    )
    assert served.certfile is not None and served.pkeyfile is not None
    chain = Path(served.certfile).read_bytes()
    leaf, ca = x509.load_pem_x509_certificates(chain)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert leaf.issuer == ca.subject
    assert served.cadata == chain
    assert b"PRIVATE KEY" in Path(served.pkeyfile).read_bytes()


def test_webhook_names_are_valid_lowercase_subdomains() -> None:
    name = server.webhook_name("validate-native-jobs/spec.scheduling.schedulingPolicy", "g.dev")
    assert name == "validate-native-jobs.spec.scheduling.schedulingpolicy.g.dev"


def configurations(
    adoption: Adoption | None = None, operator_user: str | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
    handlers = server.webhook_handlers(kopf.get_default_registry())
    built = server.webhook_configurations(
        handlers,
        name="muster",
        where="https://127.0.0.1:9443",
        ca_bundle=b"CA",
        group="g.dev",
        adoption=adoption,
        operator_user=operator_user,
    )
    return {
        configuration["kind"]: {webhook["name"]: webhook for webhook in configuration["webhooks"]}
        for configuration in built
    }


def test_the_gating_webhooks_select_only_opted_in_objects_and_fail_closed() -> None:
    mutating = configurations()[server.MUTATING]
    pods = mutating["gate-pods.g.dev"]
    assert pods["objectSelector"] == {
        "matchExpressions": [{"key": "scheduling.muster.dev/pod-group", "operator": "Exists"}]
    }
    assert pods["rules"] == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["pods"],
            "operations": ["CREATE"],
            "scope": "*",
        }
    ]
    assert pods["failurePolicy"] == "Fail"
    # The pods of a Job come gated by its template: the API server keeps them to itself.
    assert [condition["name"] for condition in pods["matchConditions"]] == ["not-left-to-its-job"]
    assert pods["clientConfig"] == {
        "url": "https://127.0.0.1:9443/gate-pods",
        "caBundle": base64.b64encode(b"CA").decode(),
    }
    jobs = mutating["gate-jobs.g.dev"]
    assert jobs["objectSelector"]["matchExpressions"][0]["key"] == "scheduling.muster.dev/policy"


def test_the_webhooks_of_muster_s_kinds_spare_the_operator_s_own_writes() -> None:
    built = configurations(operator_user="system:serviceaccount:ms:op")
    spared = {
        name
        for webhooks in built.values()
        for name, webhook in webhooks.items()
        if server.sparing("system:serviceaccount:ms:op") in webhook.get("matchConditions", [])
    }
    assert spared == {
        "resolve-podgroup-priority.g.dev",
        "validate-podgroups.g.dev",
        "validate-workloads.g.dev",
    }
    assert server.sparing("a")["expression"] == 'request.userInfo.username != "a"'
    unspared = configurations()
    assert not any(
        condition["name"] == server.SPARING
        for webhooks in unspared.values()
        for webhook in webhooks.values()
        for condition in webhook.get("matchConditions", [])
    )


@pytest.mark.parametrize(
    "user",
    [
        "kubernetes-admin",
        "alice@example.com",
        "system:serviceaccount:",
        "system:serviceaccount:ms",
        "system:serviceaccount::op",
        "system:node:worker-1",
    ],
)
def test_a_user_who_is_not_a_service_account_is_never_spared(
    user: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`muster run` with a person's kubeconfig: every request of that person would
    skip validation if the operator's user were spared."""
    built = configurations(operator_user=user)
    assert not any(
        condition["name"] == server.SPARING
        for webhooks in built.values()
        for webhook in webhooks.values()
        for condition in webhook.get("matchConditions", [])
    )
    assert f"it runs as {user}, not as a ServiceAccount" in caplog.text


def test_only_a_service_account_s_user_name_is_one() -> None:
    assert server.is_service_account("system:serviceaccount:muster-system:muster-operator")
    assert not server.is_service_account("system:serviceaccounts:muster-system")
    assert not server.is_service_account("muster-operator")


def test_a_labelled_job_is_validated_on_creation_by_its_gating_webhook_alone() -> None:
    built = configurations()
    assert built[server.MUTATING]["gate-jobs.g.dev"]["rules"][0]["operations"] == ["CREATE"]
    validating = built[server.VALIDATING]["validate-labelled-jobs.g.dev"]
    assert validating["rules"][0]["operations"] == ["UPDATE"]


def test_the_adopted_pods_webhook_is_there_only_while_adopting_and_for_its_namespaces() -> None:
    assert "adopt-pods.g.dev" not in configurations()[server.MUTATING]
    selector = {"matchLabels": {"team": "ml"}}
    adoption = Adoption(apis=(VOLCANO,), scheduler_names=("volcano",), namespace_selector=selector)
    pods = configurations(adoption)[server.MUTATING]["adopt-pods.g.dev"]
    assert pods["namespaceSelector"] == selector
    assert pods["reinvocationPolicy"] == "IfNeeded"
    assert "objectSelector" not in pods
    assert [condition["name"] for condition in pods["matchConditions"]] == [
        "names-an-adopted-pod-group"
    ]
    assert pods["rules"][0]["operations"] == ["CREATE"]


def test_a_field_filter_becomes_a_cel_match_condition() -> None:
    registry = kopf.OperatorRegistry()

    @kopf.on.validate(
        "batch",
        "v1",
        "jobs",
        id="native",
        field="spec.scheduling.schedulingPolicy",
        value=kopf.PRESENT,
        registry=registry,
    )
    def native(**_: object) -> None: ...

    [validating] = [
        configuration
        for configuration in server.webhook_configurations(
            server.webhook_handlers(registry), name="m", where="https://h", ca_bundle=b"", group="g"
        )
        if configuration["kind"] == server.VALIDATING
    ]
    [webhook] = validating["webhooks"]
    assert "objectSelector" not in webhook
    assert webhook["clientConfig"]["url"] == "https://h/native/spec.scheduling.schedulingPolicy"
    [condition] = webhook["matchConditions"]
    assert condition["expression"] == (
        "has(object.spec) && has(object.spec.scheduling)"
        " && has(object.spec.scheduling.schedulingPolicy)"
    )


def test_in_a_cluster_the_webhooks_are_called_through_their_service() -> None:
    handlers = server.webhook_handlers(kopf.get_default_registry())
    service = server.ServiceReference(namespace="muster-system", name="muster-webhooks")
    built = server.webhook_configurations(
        handlers, name="muster", where=service, ca_bundle=b"", group="g.dev"
    )
    clients = {
        webhook["name"]: webhook["clientConfig"]
        for configuration in built
        for webhook in configuration["webhooks"]
    }
    assert clients["gate-pods.g.dev"] == {
        "service": {
            "namespace": "muster-system",
            "name": "muster-webhooks",
            "port": 443,
            "path": "/gate-pods",
        }
    }
    assert all("caBundle" not in client and "url" not in client for client in clients.values())


async def test_a_lowercased_handler_id_reaches_the_handler() -> None:
    """Service paths are lowercase; kopf routes by the exact id, field filter's case and all."""
    native = next(
        str(h.id)
        for h in server.webhook_handlers(kopf.get_default_registry())
        if str(h.id) != str(h.id).lower()
    )
    called: list[str | None] = []

    async def fn(request: Any, *, webhook: str | None = None, **_: Any) -> Any:
        called.append(webhook)
        return {"response": {"allowed": True}}

    resources = ServedResources(kopf.get_default_registry(), references.Insights())
    webhooks = server.WebhookServer(resources=resources, addr="127.0.0.1", port=0, insecure=True)
    serving = webhooks(fn)
    client_config = await anext(serving)
    try:
        async with aiohttp.ClientSession() as session:
            url = f"{client_config['url']}/{native.lower()}"
            review = {"kind": "AdmissionReview", "request": {"uid": "u"}}
            async with session.post(url, json=review) as response:
                assert response.status == 200
    finally:
        await serving.aclose()
    assert called == [native]
