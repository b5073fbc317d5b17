"""The resources the admission handlers serve: ready only once each is discovered, a
scan again until it is, and "call again" (not 404) for a call that comes before.

Against a real API server, an operator started right after kube-apiserver restarts
(tests/e2e/faults/test_webhooks_after_apiserver_restarts.py); here, a scripted
discovery pins the order of events: kopf's scan first, then the rescans.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import aiohttp.web
import kopf
import pytest

from muster.api.constants import GROUP, POD_GROUP_PLURAL, VERSION, WORKLOAD_PLURAL
from muster.webhooks import served_resources, server, serving
from muster.webhooks.kopf_private import admission, credentials, references
from muster.webhooks.served_resources import ServedResources

POD = references.Resource("", "v1", "pods", kind="Pod", singular="pod", preferred=True)
JOB = references.Resource("batch", "v1", "jobs", kind="Job", singular="job", preferred=True)
POD_GROUP = references.Resource(GROUP, VERSION, POD_GROUP_PLURAL, kind="PodGroup", preferred=True)
WORKLOAD = references.Resource(GROUP, VERSION, WORKLOAD_PLURAL, kind="Workload", preferred=True)


def served(*known: references.Resource) -> ServedResources:
    resources = ServedResources(kopf.get_default_registry(), references.Insights())
    resources.insights.webhook_resources.update(known)
    return resources


def review(resource: references.Resource) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "resource": {
                "group": resource.group,
                "version": resource.version,
                "resource": resource.plural,
            },
            "kind": {"group": resource.group, "version": resource.version, "kind": resource.kind},
            "operation": "CREATE",
            "userInfo": {"username": "someone"},
            "object": {"metadata": {"name": "x"}},
        },
    }


def test_every_handlers_resource_must_be_discovered_for_the_webhooks_to_be_ready() -> None:
    without_the_crds = served(POD, JOB)
    assert [selector.plural or selector.any_name for selector in without_the_crds.unresolved()]
    assert {str(s.group) for s in without_the_crds.unresolved()} == {GROUP}
    assert not without_the_crds.resolved()
    assert served(POD, JOB, POD_GROUP, WORKLOAD).resolved()


def test_a_resource_a_handler_serves_is_told_apart_from_one_nobody_here_serves() -> None:
    resources = served()  # nothing discovered: what a handler serves is known all the same
    assert resources.serves(review(POD_GROUP))
    assert resources.serves(review(JOB))
    deployment = references.Resource("apps", "v1", "deployments", kind="Deployment")
    assert not resources.serves(review(deployment))


async def post(url: str, body: dict[str, Any]) -> tuple[int, str | None, str]:
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as reply:
        return reply.status, reply.headers.get("Retry-After"), await reply.text()


async def test_a_call_before_its_resource_is_discovered_is_asked_again_not_refused() -> None:
    """kopf's own lookup of the resource, as its admission function makes it; 503 with
    Retry-After is what the API server's client waits for and calls again."""
    resources = served(POD, JOB)

    async def fn(request: Any, **_: Any) -> Any:
        admission.find_resource(request=request, insights=resources.insights)
        return {"response": {"uid": "u-1", "allowed": True}}

    webhooks = server.WebhookServer(resources=resources, addr="127.0.0.1", port=0, insecure=True)
    serving_webhooks = webhooks(fn)
    url = str((await anext(serving_webhooks))["url"])
    try:
        status, retry_after, text = await post(f"{url}/validate", review(POD_GROUP))
        assert (status, retry_after) == (503, str(serving.RETRY_AFTER_SECONDS))
        assert "not ready" in text
        deployment = references.Resource("apps", "v1", "deployments", kind="Deployment")
        status, retry_after, _ = await post(f"{url}/validate", review(deployment))
        assert (status, retry_after) == (404, None)
        resources.insights.webhook_resources.add(POD_GROUP)
        status, _, _ = await post(f"{url}/validate", review(POD_GROUP))
        assert status == 200
    finally:
        await serving_webhooks.aclose()


class Discovery:
    """The API's discovery as a restarted API server may serve it: the CRDs' group is
    listed, but its version is not found until `crds_served` is set."""

    def __init__(self) -> None:
        self.crds_served = False
        self.failing = False  # every group list fails, as a server that is going away
        self.version_reads: list[str] = []

    def app(self) -> aiohttp.web.Application:
        app = aiohttp.web.Application()
        app.router.add_get("/api", self.core)
        app.router.add_get("/api/v1", self.core_v1)
        app.router.add_get("/apis", self.groups)
        app.router.add_get("/apis/{group}/{version}", self.group_version)
        return app

    async def core(self, _: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.json_response({"versions": ["v1"]})

    async def core_v1(self, _: aiohttp.web.Request) -> aiohttp.web.Response:
        return aiohttp.web.json_response({"resources": [self.listed(POD)]})

    async def groups(self, _: aiohttp.web.Request) -> aiohttp.web.Response:
        if self.failing:
            return aiohttp.web.json_response({"kind": "Status", "code": 500}, status=500)
        groups = [
            {"name": name, "versions": [{"version": v}], "preferredVersion": {"version": v}}
            for name, v in (("batch", "v1"), (GROUP, VERSION))
        ]
        return aiohttp.web.json_response({"groups": groups})

    async def group_version(self, request: aiohttp.web.Request) -> aiohttp.web.Response:
        group = request.match_info["group"]
        self.version_reads.append(group)
        if group == "batch":
            return aiohttp.web.json_response({"resources": [self.listed(JOB)]})
        if group == GROUP and self.crds_served:
            return aiohttp.web.json_response(
                {"resources": [self.listed(POD_GROUP), self.listed(WORKLOAD)]}
            )
        return aiohttp.web.json_response({"kind": "Status", "code": 404}, status=404)

    @staticmethod
    def listed(resource: references.Resource) -> dict[str, Any]:
        return {
            "name": resource.plural,
            "kind": resource.kind,
            "singularName": resource.singular or "",
            "namespaced": True,
            "verbs": ["get", "list", "watch", "create", "patch"],
        }


@pytest.fixture
async def discovery() -> AsyncIterator[tuple[Discovery, credentials.Vault]]:
    fake = Discovery()
    runner = aiohttp.web.AppRunner(fake.app())
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    vault = credentials.Vault()
    await vault.populate({"fake": credentials.ConnectionInfo(server=f"http://127.0.0.1:{port}")})
    try:
        yield fake, vault
    finally:
        await vault.close()
        await runner.cleanup()


async def test_the_groups_missing_from_kopfs_scan_are_scanned_again_until_found(
    discovery: tuple[Discovery, credentials.Vault], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(served_resources, "RESCAN_INTERVAL", 0.01)
    fake, vault = discovery
    resources = served(POD, JOB)  # what kopf's scan found while the CRDs were not served
    rescans: list[int] = []
    keeper = asyncio.create_task(
        resources.keep_resolved(kopf.OperatorSettings(), vault, on_rescan=lambda: rescans.append(1))
    )
    try:
        await asyncio.sleep(0.1)
        assert not rescans, "a rescan before kopf's own scan is done"
        resources.insights.ready_resources.set()
        async with asyncio.timeout(10):  # a bound, should it never happen
            while len(rescans) < 2:
                await asyncio.sleep(0.05)
            assert not resources.resolved()
            fake.crds_served = True
            while not resources.resolved():
                await asyncio.sleep(0.05)
    finally:
        keeper.cancel()
        await asyncio.gather(keeper, return_exceptions=True)
    assert set(fake.version_reads) == {GROUP}, "scanned groups it had found already"


async def test_a_failed_rescan_is_logged_and_made_again(
    discovery: tuple[Discovery, credentials.Vault],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(served_resources, "RESCAN_INTERVAL", 0.01)
    fake, vault = discovery
    fake.failing = fake.crds_served = True
    settings = kopf.OperatorSettings()
    settings.networking.error_backoffs = []  # kopf's own retries, none: fail at once
    resources = served(POD, JOB)
    resources.insights.ready_resources.set()
    keeper = asyncio.create_task(resources.keep_resolved(settings, vault, on_rescan=lambda: None))
    try:
        async with asyncio.timeout(10):  # a bound, should it never happen
            while "scanning the API's resources failed" not in caplog.text:
                await asyncio.sleep(0.05)
            fake.failing = False
            while not resources.resolved():
                await asyncio.sleep(0.05)
    finally:
        keeper.cancel()
        await asyncio.gather(keeper, return_exceptions=True)
