"""The client's error handling: one error type out, safe retries, Retry-After, the fence."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import pytest

from muster.operator.kube import JsonObject, Kube, KubeError, NotLeadingError, UnreachableError
from muster.operator.retry import ExponentialBackoff
from muster.operator.throttle import RateLimiter


class Response:
    def __init__(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.body = json.dumps(body).encode()
        self.headers = headers or {}

    async def read(self) -> bytes:
        return self.body

    def release(self) -> None:
        pass


class ScriptedApiClient:
    """Answers `call_api` from a script of responses and exceptions, and counts the calls
    (and the loops they were made on)."""

    def __init__(self, *script: Response | Exception) -> None:
        self.script = list(script)
        self.calls: list[tuple[str, float]] = []
        self.loops: list[asyncio.AbstractEventLoop] = []

    async def call_api(self, path: str, method: str, **_: Any) -> Response:
        self.calls.append((method, time.monotonic()))
        self.loops.append(asyncio.get_running_loop())
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def connector_error() -> aiohttp.ClientConnectorError:
    key: Any = type("Key", (), {"ssl": None, "host": "127.0.0.1", "port": 6443})()
    return aiohttp.ClientConnectorError(key, OSError(111, "Connection refused"))


def client(api: ScriptedApiClient) -> Kube:
    return Kube(api)  # type: ignore[arg-type]


OK = Response(200, {"kind": "Pod"})


async def test_throttling_is_retried_no_sooner_than_retry_after() -> None:
    api = ScriptedApiClient(Response(429, {"reason": "TooManyRequests"}, {"Retry-After": "1"}), OK)
    assert await client(api).request("POST", "/api/v1/namespaces/a/events", body={}) == {
        "kind": "Pod"
    }
    (_, first), (_, second) = api.calls
    assert second - first >= 1.0


async def test_reads_are_retried_on_a_broken_connection_and_server_errors() -> None:
    api = ScriptedApiClient(
        aiohttp.ServerDisconnectedError(), Response(503, {"reason": "ServiceUnavailable"}), OK
    )
    assert await client(api).request("GET", "/api/v1/pods/x") == {"kind": "Pod"}
    assert len(api.calls) == 3


async def test_a_write_that_may_have_landed_is_not_repeated() -> None:
    api = ScriptedApiClient(aiohttp.ClientPayloadError("truncated"), OK)
    with pytest.raises(UnreachableError) as raised:
        await client(api).request("PATCH", "/api/v1/namespaces/a/pods/x", body={})
    assert isinstance(raised.value, KubeError) and raised.value.transient
    assert len(api.calls) == 1
    api = ScriptedApiClient(Response(500, {"reason": "InternalError"}), OK)
    with pytest.raises(KubeError):
        await client(api).request("POST", "/api/v1/namespaces/a/events", body={})
    assert len(api.calls) == 1


async def test_a_write_that_never_left_is_repeated() -> None:
    api = ScriptedApiClient(connector_error(), OK)
    await client(api).request("PATCH", "/api/v1/namespaces/a/pods/x", body={})
    assert len(api.calls) == 2


async def test_retries_stop_at_the_request_timeout() -> None:
    api = ScriptedApiClient(*[TimeoutError() for _ in range(50)])
    started = time.monotonic()
    with pytest.raises(UnreachableError):
        await client(api).request("GET", "/api/v1/pods/x", timeout=0.5)
    assert time.monotonic() - started < 1.0


async def test_the_fence_stops_writes_but_not_reads() -> None:
    api = ScriptedApiClient(OK)
    kube = client(api).view(fence=lambda: False)
    with pytest.raises(NotLeadingError):
        await kube.request("PATCH", "/api/v1/namespaces/a/pods/x", body={})
    assert api.calls == []
    assert await kube.request("GET", "/api/v1/pods/x") == {"kind": "Pod"}


async def test_the_rate_limit_allows_a_burst_then_the_rate() -> None:
    limiter = RateLimiter(qps=20, burst=5)
    started = time.monotonic()
    for _ in range(10):
        await limiter.acquire()
    assert 0.2 <= time.monotonic() - started < 0.6  # 5 at once, then 5 at 20 per second


async def test_a_request_from_another_threads_loop_is_sent_from_the_clients_own() -> None:
    api = ScriptedApiClient(Response(404, {"reason": "NotFound"}), OK)
    kube = client(api).view()  # a view keeps the loop of the client it narrows

    async def from_elsewhere() -> tuple[int, JsonObject]:
        with pytest.raises(KubeError) as raised:
            await kube.request("GET", "/api/v1/pods/x")
        return raised.value.status, await kube.request("POST", "/api/v1/pods", body={})

    assert await asyncio.to_thread(asyncio.run, from_elsewhere()) == (404, {"kind": "Pod"})
    assert api.loops == [asyncio.get_running_loop()] * 2


async def test_a_request_given_up_on_another_loop_is_cancelled_on_the_clients_own() -> None:
    cancelled = asyncio.Event()

    class StalledApiClient:
        async def call_api(self, path: str, method: str, **_: Any) -> Response:
            try:
                await asyncio.sleep(60)
            finally:
                cancelled.set()
            raise AssertionError("not reached")

    kube = client(StalledApiClient())  # type: ignore[arg-type]

    async def from_elsewhere() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await kube.request("GET", "/api/v1/pods/x")

    await asyncio.to_thread(asyncio.run, from_elsewhere())
    await asyncio.wait_for(cancelled.wait(), 5)


async def test_a_request_from_another_loop_fails_as_unsent_once_the_clients_loop_is_closed() -> (
    None
):
    api = ScriptedApiClient(OK)
    loop = asyncio.new_event_loop()
    loop.close()
    with pytest.raises(UnreachableError) as raised:
        await Kube(api, loop=loop).request("GET", "/api/v1/pods/x")  # type: ignore[arg-type]
    assert raised.value.unsent and api.calls == []


def test_backoff_doubles_with_jitter_up_to_its_cap() -> None:
    backoff = ExponentialBackoff(initial=1, maximum=8)
    delays = [backoff.next() for _ in range(6)]
    for delay, step in zip(delays, [1, 2, 4, 8, 8, 8], strict=True):
        assert step / 2 <= delay <= step
    backoff.reset()
    assert backoff.next() <= 1
