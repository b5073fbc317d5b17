"""The webhooks' endpoint: large reviews fit, bad ones get a clear error, none crashes it,
each has a time bound, and no admission leaves a memo behind."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import kopf
import pytest

from muster.webhooks import server, serving
from muster.webhooks.kopf_private import references
from muster.webhooks.memories import AdmissionMemories
from muster.webhooks.served_resources import ServedResources

Calls = list[dict[str, Any]]


def review(size: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-1", "object": {"data": "x" * size}},
    }


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[str, Calls]]:
    """A served endpoint whose handler answers, fails or stalls as the review asks."""
    calls: Calls = []

    async def fn(request: Any, **context: Any) -> Any:
        calls.append({"thread": threading.current_thread().name, **context})
        behaviour = request["request"].get("behaviour")
        if behaviour == "fail":
            raise RuntimeError("boom")
        if behaviour == "stall":
            await asyncio.sleep(60)
        return {"response": {"uid": request["request"]["uid"], "allowed": True}}

    resources = ServedResources(kopf.get_default_registry(), references.Insights())
    webhooks = server.WebhookServer(resources=resources, addr="127.0.0.1", port=0, insecure=True)
    generator = webhooks(fn)
    client_config = await anext(generator)
    try:
        yield str(client_config["url"]), calls
    finally:
        await generator.aclose()


async def post(url: str, body: bytes) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.post(f"{url}/hook", data=body) as reply:
        return reply.status, await reply.text()


async def test_a_review_larger_than_aiohttps_default_limit_is_answered(
    endpoint: tuple[str, Calls],
) -> None:
    url, calls = endpoint
    status, _ = await post(url, json.dumps(review(2 * 1024 * 1024)).encode())
    assert status == 200
    # On the endpoint's own thread, not the caller's event loop.
    assert calls[0]["thread"] == "webhooks" != threading.current_thread().name


async def test_an_oversized_review_is_refused_with_the_limit_named(
    endpoint: tuple[str, Calls], caplog: pytest.LogCaptureFixture
) -> None:
    url, calls = endpoint
    body = b'{"kind": "AdmissionReview", "x": "' + b"x" * serving.MAX_REVIEW_BYTES + b'"}'
    status, text = await post(url, body)
    assert status == 413 and str(serving.MAX_REVIEW_BYTES) in text
    assert not calls
    assert "refused a call with 413" in caplog.text


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "not an AdmissionReview"),
        (b'{"kind": "AdmissionReview"}', "no request with a uid"),
    ],
)
async def test_a_malformed_review_gets_a_clear_error_and_the_server_goes_on(
    endpoint: tuple[str, Calls], body: bytes, says: str, caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = endpoint
    status, text = await post(url, body)
    assert status == 400 and says in text
    assert "refused a call with 400" in caplog.text
    assert (await post(url, b'{"kind": "AdmissionReview", "request": {"uid": "u"}}'))[0] == 200


async def test_a_failing_handler_is_a_500_not_a_crash(
    endpoint: tuple[str, Calls], caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = endpoint
    failing = b'{"kind": "AdmissionReview", "request": {"uid": "u", "behaviour": "fail"}}'
    status, text = await post(url, failing)
    assert status == 500 and "RuntimeError" in text
    assert "boom" in caplog.text  # the traceback is logged
    assert (await post(url, b'{"kind": "AdmissionReview", "request": {"uid": "u"}}'))[0] == 200


async def test_a_request_has_a_time_bound(
    endpoint: tuple[str, Calls], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serving, "REQUEST_TIMEOUT", 0.2)
    url, _ = endpoint
    stalling = b'{"kind": "AdmissionReview", "request": {"uid": "u", "behaviour": "stall"}}'
    status, text = await post(url, stalling)
    assert status == 504 and "0.2s" in text


async def test_an_update_admission_leaves_no_memo_behind() -> None:
    memories = AdmissionMemories()
    base: Any = kopf.Memo(shared="lister")
    body: Any = {"metadata": {"uid": "u-1", "name": "n", "namespace": "ns"}}
    first = await memories.recall_memo(body, memobase=base, ephemeral=False)
    second = await memories.recall_memo(body, memobase=base, ephemeral=False)
    assert first is not second and getattr(first, "shared", None) == "lister"
    assert not memories._items
