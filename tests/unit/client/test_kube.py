"""The client's error handling: one error type out, safe retries, Retry-After, the fence."""

from __future__ import annotations

import asyncio
import json
import math
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest

from muster.api.wire import JsonObject
from muster.client.kube import Kube, KubeError, NotLeadingError, UnreachableError, go_duration
from muster.client.retry import ExponentialBackoff
from muster.client.throttle import RateLimiter
from tests.unit.operator.virtual_time import on_virtual_time


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
    """Answers the requests sent on its session from a script of responses and
    exceptions, and counts them (with the time of their loop's clock, and the loops
    they were made on). It stands for kubernetes_asyncio's ApiClient: the client reads
    its configuration and credentials and sends on its session."""

    def __init__(self, *script: Response | Exception) -> None:
        self.script = list(script)
        self.calls: list[tuple[str, float]] = []
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.configuration = SimpleNamespace(host="https://127.0.0.1:6443")
        self.default_headers: dict[str, str] = {"User-Agent": "muster"}
        self.rest_client = SimpleNamespace(
            pool_manager=self, proxy=None, proxy_headers=None, server_hostname=None
        )
        self.sent: list[tuple[str, str, dict[str, str], bytes | None]] = []
        self.options: list[dict[str, Any]] = []

    async def update_params_for_auth(
        self, headers: dict[str, str], queries: list[Any], settings: list[str]
    ) -> None:
        headers["Authorization"] = "Bearer token"

    async def request(self, method: str, url: str, **options: Any) -> Response:
        loop = asyncio.get_running_loop()
        self.calls.append((method, loop.time()))
        self.loops.append(loop)
        self.sent.append((method, url, options["headers"], options["data"]))
        self.options.append(options)
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


async def test_a_request_carries_its_query_body_and_credentials() -> None:
    api = ScriptedApiClient(OK)
    body = {"metadata": {"labels": {"a": "b"}}, "spec": [1, 2.5, None, True]}
    await client(api).request(
        "PATCH", "/api/v1/namespaces/a/pods/x", query={"fieldManager": "muster"}, body=body
    )
    ((method, url, headers, data),) = api.sent
    assert (method, url) == (
        "PATCH",
        "https://127.0.0.1:6443/api/v1/namespaces/a/pods/x?fieldManager=muster",
    )
    assert headers["Authorization"] == "Bearer token" and headers["User-Agent"] == "muster"
    assert data is not None and json.loads(data) == body


@on_virtual_time
async def test_throttling_is_retried_no_sooner_than_retry_after() -> None:
    api = ScriptedApiClient(Response(429, {"reason": "TooManyRequests"}, {"Retry-After": "1"}), OK)
    assert await client(api).request("POST", "/api/v1/namespaces/a/events", body={}) == {
        "kind": "Pod"
    }
    (_, first), (_, second) = api.calls
    assert second - first >= 1.0


@on_virtual_time
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


@on_virtual_time
async def test_a_write_that_never_left_is_repeated() -> None:
    api = ScriptedApiClient(connector_error(), OK)
    await client(api).request("PATCH", "/api/v1/namespaces/a/pods/x", body={})
    assert len(api.calls) == 2


@on_virtual_time
async def test_retries_stop_at_the_request_timeout() -> None:
    api = ScriptedApiClient(*[TimeoutError() for _ in range(50)])
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(UnreachableError):
        await client(api).request("GET", "/api/v1/pods/x", timeout=0.5)
    assert loop.time() - started < 0.5  # no retry is begun that the timeout would cut
    assert 2 <= len(api.calls) < 50


async def test_the_fence_stops_writes_but_not_reads() -> None:
    api = ScriptedApiClient(OK)
    kube = client(api).view(fence=lambda: 0.0)
    with pytest.raises(NotLeadingError):
        await kube.request("PATCH", "/api/v1/namespaces/a/pods/x", body={})
    assert api.calls == []
    assert await kube.request("GET", "/api/v1/pods/x") == {"kind": "Pod"}


async def test_a_fenced_write_must_be_answered_within_the_lease_s_time_left() -> None:
    """The time left bounds the whole request (the wait for a connection included),
    and the API server is told it as the request's timeout, so that it gives the
    write up too; reads keep their own timeout."""
    api = ScriptedApiClient(OK, OK)
    kube = client(api).view(fence=lambda: 2.5)
    await kube.request("PATCH", "/api/v1/namespaces/a/pods/x", body={})
    await kube.request("GET", "/api/v1/namespaces/a/pods/x")
    (_, write, _, _), (_, read, _, _) = api.sent
    assert write.endswith("/pods/x?timeout=2500ms")
    assert api.options[0]["timeout"].total == 2.5
    assert read.endswith("/pods/x")
    assert api.options[1]["timeout"].total == pytest.approx(30.0, abs=0.1)


async def test_a_fenced_write_cut_off_by_the_lease_says_so() -> None:
    api = ScriptedApiClient(TimeoutError())
    kube = client(api).view(fence=lambda: 1.25)
    with pytest.raises(UnreachableError, match=r"not answered within 1\.25s") as raised:
        await kube.request("POST", "/api/v1/namespaces/a/events", body={})
    assert not raised.value.unsent  # it may have reached the server: not repeated


async def test_without_a_lease_a_write_keeps_its_own_timeout() -> None:
    api = ScriptedApiClient(OK)
    kube = client(api).view(fence=lambda: math.inf)  # leader election off
    await kube.request("DELETE", "/api/v1/namespaces/a/pods/x", timeout=7.0)
    assert "timeout=" not in api.sent[0][1]
    assert api.options[0]["timeout"].total == pytest.approx(7.0, abs=0.1)


def test_a_timeout_goes_to_the_api_server_in_whole_milliseconds_never_zero() -> None:
    assert go_duration(2.5) == "2500ms"
    assert go_duration(0.0101) == "11ms"
    assert go_duration(1e-6) == "1ms"  # "0ms" would mean no timeout at all


@on_virtual_time
async def test_the_rate_limit_allows_a_burst_then_the_rate() -> None:
    loop = asyncio.get_running_loop()
    limiter = RateLimiter(qps=20, burst=5, clock=loop.time)
    started = loop.time()
    granted: list[float] = []
    for _ in range(10):
        await limiter.acquire()
        granted.append(loop.time() - started)
    # 5 at once, then 5 at 20 per second
    assert granted == pytest.approx([0, 0, 0, 0, 0, 0.05, 0.1, 0.15, 0.2, 0.25])


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

    class StalledApiClient(ScriptedApiClient):
        async def request(self, method: str, url: str, **_: Any) -> Response:
            try:
                await asyncio.sleep(60)
            finally:
                cancelled.set()
            raise AssertionError("not reached")

    kube = client(StalledApiClient())

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
