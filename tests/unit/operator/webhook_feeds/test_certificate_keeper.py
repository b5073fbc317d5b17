"""Replicas sharing one certificate Secret, renewing it once, and trusting it before serving it."""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime
import ssl
from pathlib import Path
from typing import Any

import kopf
from cryptography import x509
from devtools.ports import free_port

from muster.api.wire import JsonObject
from muster.client.kube import STRATEGIC_MERGE_PATCH, KubeError
from muster.operator.webhook_feeds.certificate_keeper import (
    CertificateKeeper,
    ca_bundle_patch,
    certificate_hosts,
)
from muster.webhooks import server
from muster.webhooks.certificates import from_secret, issue, secret_data
from muster.webhooks.kopf_private import references
from muster.webhooks.served_resources import ServedResources
from tests.unit.operator.virtual_time import on_virtual_time

SECRETS = "/api/v1/namespaces/muster-system/secrets"
SECRET = f"{SECRETS}/muster-webhook-tls"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
MUTATING = f"{ADMISSION}/mutatingwebhookconfigurations/muster"
VALIDATING = f"{ADMISSION}/validatingwebhookconfigurations/muster"
HOSTS = certificate_hosts("muster-system", "muster-webhooks", "0.0.0.0")


class FakeApi:
    """Objects by path with resourceVersions; yields between requests so callers interleave."""

    def __init__(self) -> None:
        self.objects: dict[str, JsonObject] = {}
        self.version = 0
        self.requests: list[tuple[str, str]] = []  # requests that succeeded

    def put_object(self, path: str, obj: JsonObject) -> None:
        self.version += 1
        stored = copy.deepcopy(obj)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        self.objects[path] = stored

    async def request(
        self, method: str, path: str, *, body: Any = None, content_type: str = "", **_: Any
    ) -> JsonObject:
        await asyncio.sleep(0)
        if method == "POST":
            path = f"{path}/{body['metadata']['name']}"
            if path in self.objects:
                raise KubeError(409, "AlreadyExists", path)
        elif path not in self.objects:
            raise KubeError(404, "NotFound", path)
        current = self.objects.get(path)
        if method == "GET":
            assert current is not None
            self.requests.append((method, path))
            return copy.deepcopy(current)
        if method == "PUT":
            assert current is not None
            if body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
                raise KubeError(409, "Conflict", path)
        if method == "PATCH":
            assert current is not None and content_type == STRATEGIC_MERGE_PATCH
            body = merge_webhooks(current, body)
        self.requests.append((method, path))
        self.put_object(path, body)
        return copy.deepcopy(self.objects[path])


def merge_webhooks(current: JsonObject, patch: JsonObject) -> JsonObject:
    merged = copy.deepcopy(current)
    by_name = {webhook["name"]: webhook for webhook in merged["webhooks"]}
    for change in patch["webhooks"]:
        by_name[change["name"]]["clientConfig"].update(change["clientConfig"])
    return merged


def configuration(names: list[str]) -> JsonObject:
    return {
        "metadata": {"name": "muster"},
        "webhooks": [{"name": name, "clientConfig": {"service": {}}} for name in names],
    }


def keeper(api: FakeApi, directory: Path) -> CertificateKeeper:
    directory.mkdir()
    return CertificateKeeper(
        api,  # type: ignore[arg-type]
        namespace="muster-system",
        secret="muster-webhook-tls",
        hosts=HOSTS,
        configuration="muster",
        directory=directory,
    )


def trusted_bundle(api: FakeApi, path: str) -> set[bytes]:
    return {
        base64.b64decode(webhook["clientConfig"]["caBundle"])
        for webhook in api.objects[path]["webhooks"]
    }


async def test_replicas_racing_for_a_missing_secret_serve_the_one_that_was_created(
    tmp_path: Path,
) -> None:
    api = FakeApi()
    api.put_object(MUTATING, configuration(["gate-pods.g", "gate-jobs.g"]))
    first, second = keeper(api, tmp_path / "a"), keeper(api, tmp_path / "b")

    await asyncio.gather(first.refresh(), second.refresh())

    stored = from_secret(api.objects[SECRET])
    assert stored is not None and stored == first.serving == second.serving
    assert [write for write in api.requests if write[0] == "POST"] == [("POST", SECRET)]
    assert first.cert_path.read_bytes() == stored.certificate
    assert second.key_path.read_bytes() == stored.key
    assert trusted_bundle(api, MUTATING) == {stored.ca_bundle}


async def test_replicas_fill_the_empty_secret_the_chart_made_without_creating_one(
    tmp_path: Path,
) -> None:
    """The chart creates the Secret empty (the operator may not create Secrets): it is
    written once, keeping its type and the installer's labels and annotations."""
    api = FakeApi()
    made: dict[str, Any] = {
        "metadata": {
            "name": "muster-webhook-tls",
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": "muster"},
        },
        "type": "Opaque",
    }
    api.put_object(SECRET, made)
    api.put_object(MUTATING, configuration(["gate-pods.g"]))
    first, second = keeper(api, tmp_path / "a"), keeper(api, tmp_path / "b")

    await asyncio.gather(first.refresh(), second.refresh())

    stored = api.objects[SECRET]
    certificate = from_secret(stored)
    assert certificate is not None and certificate == first.serving == second.serving
    assert [write for write in api.requests if write[0] in ("POST", "PUT")] == [("PUT", SECRET)]
    assert stored["type"] == "Opaque"
    assert stored["metadata"]["labels"] == made["metadata"]["labels"]
    assert stored["metadata"]["annotations"] == made["metadata"]["annotations"]
    assert trusted_bundle(api, MUTATING) == {certificate.ca_bundle}


class ApiJustStarted(FakeApi):
    """A kube-apiserver that has just started: its authorizer refuses what RBAC allows
    for its first answers."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals

    async def request(self, method: str, path: str, **kwargs: Any) -> JsonObject:
        if self.refusals:
            self.refusals -= 1
            raise KubeError(403, "Forbidden", f"{path} is forbidden")
        return await super().request(method, path, **kwargs)


@on_virtual_time
async def test_the_first_refresh_outlasts_refusals_of_an_api_server_just_started(
    tmp_path: Path,
) -> None:
    """A replica started as kube-apiserver restarts gets its certificate once RBAC
    answers, instead of exiting (against the real API server: the fault suite's
    test_webhooks_after_apiserver_restarts)."""
    api = ApiJustStarted(refusals=3)
    api.put_object(MUTATING, configuration(["gate-pods.g"]))
    replica = keeper(api, tmp_path / "replica")
    await replica.until_refreshed()
    assert api.refusals == 0 and replica.serving is not None
    assert replica.cert_path.read_bytes() == replica.serving.certificate


async def test_a_certificate_due_for_renewal_is_renewed_once_and_both_cas_trusted(
    tmp_path: Path,
) -> None:
    api = FakeApi()
    now = datetime.datetime.now(datetime.UTC)
    old = issue(HOSTS, now=now - datetime.timedelta(days=340))
    api.put_object(SECRET, {"metadata": {"name": "muster-webhook-tls"}, "data": secret_data(old)})
    api.put_object(MUTATING, configuration(["gate-pods.g"]))
    api.put_object(VALIDATING, configuration(["validate-podgroups.g"]))
    first, second = keeper(api, tmp_path / "a"), keeper(api, tmp_path / "b")

    await asyncio.gather(first.refresh(), second.refresh())

    renewed = from_secret(api.objects[SECRET])
    assert renewed is not None and renewed != old
    assert first.serving == second.serving == renewed
    assert [write for write in api.requests if write[0] == "PUT"] == [("PUT", SECRET)]
    assert old.ca_bundle in renewed.ca_bundle
    assert trusted_bundle(api, MUTATING) == trusted_bundle(api, VALIDATING) == {renewed.ca_bundle}
    assert first.cert_path.read_bytes() == renewed.certificate


async def test_an_unchanged_certificate_writes_nothing(tmp_path: Path) -> None:
    api = FakeApi()
    api.put_object(MUTATING, configuration(["gate-pods.g"]))
    replica = keeper(api, tmp_path / "a")
    await replica.refresh()
    api.requests.clear()

    await replica.refresh()

    assert {method for method, _ in api.requests} == {"GET"}
    assert len(list((tmp_path / "a").glob("generation-*"))) == 1


async def test_configurations_applied_again_without_a_bundle_are_mended(tmp_path: Path) -> None:
    api = FakeApi()
    replica = keeper(api, tmp_path / "a")
    await replica.refresh()
    api.put_object(MUTATING, configuration(["gate-pods.g"]))

    await replica.refresh()

    assert trusted_bundle(api, MUTATING) == {replica.ca_bundle}


async def test_configurations_that_do_not_exist_yet_are_skipped(tmp_path: Path) -> None:
    api = FakeApi()
    replica = keeper(api, tmp_path / "a")
    await replica.refresh()
    assert replica.serving is not None
    assert replica.ca_bundle == replica.serving.ca_bundle


def test_the_patch_names_only_webhooks_whose_bundle_differs() -> None:
    current = {
        "webhooks": [
            {"name": "a", "clientConfig": {"caBundle": "new"}},
            {"name": "b", "clientConfig": {"caBundle": "old"}},
            {"name": "c", "clientConfig": {}},
        ]
    }
    assert ca_bundle_patch(current, "new") == {
        "webhooks": [
            {"name": "b", "clientConfig": {"caBundle": "new"}},
            {"name": "c", "clientConfig": {"caBundle": "new"}},
        ]
    }
    assert ca_bundle_patch(current, "new") is not None
    assert ca_bundle_patch({"webhooks": current["webhooks"][:1]}, "new") is None


def test_the_advertised_address_is_a_host_only_when_it_can_be_dialled() -> None:
    assert "muster-webhooks.muster-system.svc" in HOSTS
    assert "0.0.0.0" not in HOSTS
    assert certificate_hosts("ns", "svc", "127.0.0.1")[-1] == "127.0.0.1"
    assert certificate_hosts("ns", "svc", "::")[-1] == "svc.ns.svc.cluster.local"


async def test_kopf_serves_the_renewed_certificate_once_its_files_are_swapped(
    tmp_path: Path,
) -> None:
    api = FakeApi()
    replica = keeper(api, tmp_path / "a")
    await replica.refresh()
    port = free_port()
    webhooks = server.WebhookServer(
        resources=ServedResources(kopf.get_default_registry(), references.Insights()),
        addr="127.0.0.1",
        port=port,
        certfile=str(replica.cert_path),
        pkeyfile=str(replica.key_path),
        file_check_interval=0.05,
    )

    async def allow(request: Any, **_: Any) -> Any:
        return {"response": {"allowed": True}}

    serving = webhooks(allow)
    assert not webhooks.listening  # the replica is not ready before its port is bound
    await anext(serving)
    try:
        assert webhooks.listening
        first = await served_certificate(port)
        assert replica.serving is not None and first == loaded(replica.serving.certificate)
        # kopf takes the files' digest as it goes on serving, as its admission loop does:
        # in the first step of that task, which runs before this one resumes.
        restarted = asyncio.create_task(anext(serving))
        await asyncio.sleep(0)
        stored = api.objects[SECRET]
        old = issue(HOSTS, now=datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=340))
        api.put_object(SECRET, {**stored, "data": secret_data(old)})
        await replica.refresh()  # renews: the stored certificate was due

        await asyncio.wait_for(restarted, timeout=10)  # kopf restarts on the new files
        renewed = await served_certificate(port)
        assert renewed != first and renewed == loaded(replica.serving.certificate)
    finally:
        await serving.aclose()


def loaded(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


async def served_certificate(port: int) -> x509.Certificate:
    pem = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", port))
    return loaded(pem.encode())
