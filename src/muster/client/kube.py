"""A thin JSON client over kubernetes_asyncio's connection handling.

The engine takes objects as plain mappings, exactly as the API server sends them, so
the operator never deserialises into kubernetes_asyncio's generated models: that
would cost CPU and memory per pod and then have to be undone. This module keeps
kubernetes_asyncio for what it is good at (kubeconfig, TLS, tokens) and speaks JSON.
"""

from __future__ import annotations

import asyncio
import logging
import math
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import Any, TypeVar

import aiohttp
import orjson
from kubernetes_asyncio import client

from muster.api.keys import resource_version
from muster.api.wire import JsonObject
from muster.client.retry import ExponentialBackoff
from muster.client.throttle import RateLimiter

logger = logging.getLogger(__name__)

T = TypeVar("T")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
BEARER_TOKEN = "BearerToken"  # kubernetes_asyncio's name for the token it refreshes

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
REQUEST_TIMEOUT = 30.0
CONNECT_TIMEOUT = 5.0
# The longest wait between two attempts of one request, whatever Retry-After says:
# beyond it the caller's own retry (next cycle, next watch) is the better judge.
MAX_RETRY_DELAY = 10.0
# The cause the Eviction API gives when a PodDisruptionBudget refuses (policy/v1).
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"


class KubeError(Exception):
    """A failed request: the API server's non-2xx answer, or no answer at all (status 0).

    Every way a request can fail comes out of this client as a KubeError, so a caller
    that handles KubeError has handled them all.
    """

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        retry_after: float | None = None,
        causes: tuple[str, ...] = (),
    ) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.causes = causes  # the Status's details.causes[].reason (a StatusCause's type)

    @property
    def budget_refused(self) -> bool:
        """A PodDisruptionBudget refused an eviction (429 or 403 with its cause): not
        throttling, so repeating at once changes nothing."""
        return DISRUPTION_BUDGET_CAUSE in self.causes

    @property
    def throttled(self) -> bool:
        """The server asked to be asked again later (429, not a budget's refusal)."""
        return self.status == 429 and not self.budget_refused

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def transient(self) -> bool:
        """Worth retrying as is: throttling, timeouts, or the server's own trouble."""
        return self.status in (429, 504) or self.status >= 500


class UnreachableError(KubeError):
    """No answer: the connection failed, broke, or timed out.

    `unsent` when the connection could not even be made, so the request certainly
    had no effect and may be repeated whatever it was.
    """

    def __init__(self, message: str, *, unsent: bool) -> None:
        super().__init__(0, "Unreachable", message)
        self.unsent = unsent

    @property
    def transient(self) -> bool:
        return True


class NotLeadingError(KubeError):
    """A write refused before it was sent: this replica cannot prove that it still leads."""

    def __init__(self, method: str, path: str) -> None:
        super().__init__(0, "NotLeading", f"{method} {path} not sent")


class Kube:
    """JSON requests and watch streams against one API server.

    A `Kube` may be narrowed with `view`: the same connections, with a rate limit of
    their own and a `fence`: the seconds left in which this replica may still write
    (the leader's Lease, `LeaderElector.lease_left`). A write is sent only while some
    are left, and must be answered within them: they bound the wait for a connection
    and for the answer, and go to the API server as the request's `timeout`, after
    which the server gives the write up (its `WithRequestDeadline` filter, as client-go
    sends a request's timeout), so a fenced write cannot land long after the Lease
    that allowed it.

    Its connections belong to the event loop it was made on (`loop`; aiohttp's
    session and its timeouts work only inside that loop's tasks). A request made from
    another thread's loop (the webhook server's, :mod:`muster.webhooks.serving`) is
    sent from that home loop and awaited where it was made, so every caller may use
    the one client.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        limiter: RateLimiter | None = None,
        fence: Callable[[], float] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.api_client = api_client
        self.limiter = limiter
        self.fence = fence
        self.loop = loop or _running_loop()

    def view(
        self, *, limiter: RateLimiter | None = None, fence: Callable[[], float] | None = None
    ) -> Kube:
        return Kube(self.api_client, limiter=limiter, fence=fence, loop=self.loop)

    async def close(self) -> None:
        await self.api_client.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int] | None = None,
        body: object = None,
        content_type: str = JSON,
        timeout: float = REQUEST_TIMEOUT,
    ) -> JsonObject:
        """One request, retried within `timeout` where that is safe; the decoded answer.

        Retried, with exponential backoff and jitter, and never sooner than the
        server's Retry-After: any request the server throttled (429) or that never
        reached it, and reads on any transient failure. Writes that may have reached
        the server are not repeated here; their callers decide.
        """
        home = self.loop
        if home is not None and home is not asyncio.get_running_loop():
            again = self.request(
                method, path, query=query, body=body, content_type=content_type, timeout=timeout
            )
            return await _on_loop(home, again, f"{method} {path}")
        clock = asyncio.get_running_loop().time  # the clock its sleeps and timeouts run on
        deadline = clock() + timeout
        backoff = ExponentialBackoff(initial=0.2, maximum=MAX_RETRY_DELAY)
        while True:
            try:
                left = deadline - clock()
                if left <= 0:
                    raise UnreachableError(f"{method} {path}: out of time", unsent=True)
                response = await self._call(
                    method, path, query=query, body=body, content_type=content_type, timeout=left
                )
                return await _decoded(response)
            except NotLeadingError:
                raise
            except KubeError as error:
                if not _repeatable(method, error):
                    raise
                delay = max(backoff.next(), min(error.retry_after or 0.0, MAX_RETRY_DELAY))
                if clock() + delay >= deadline:
                    raise
                await asyncio.sleep(delay)

    async def list_pages(
        self, path: str, *, query: Mapping[str, str] | None = None, page_size: int = 500
    ) -> AsyncIterator[tuple[list[JsonObject], str]]:
        """A collection page by page, each with the list's resourceVersion so far.

        Pages let a caller digest 50,000 pods without ever holding them all as
        decoded objects at once.
        """
        params: dict[str, str | int] = dict(query or {})
        params["limit"] = page_size
        while True:
            page = await self.request("GET", path, query=params, timeout=120.0)
            kind = str(page.get("kind", "")).removesuffix("List")
            items: list[JsonObject] = page.get("items") or []
            for item in items:
                # List items come without kind and apiVersion; events need both.
                item.setdefault("kind", kind)
                item.setdefault("apiVersion", page.get("apiVersion", ""))
            metadata = page.get("metadata") or {}
            yield items, resource_version(page)
            token = metadata.get("continue")
            if not token:
                return
            params["continue"] = token

    async def list_all(
        self, path: str, *, query: Mapping[str, str] | None = None
    ) -> tuple[list[JsonObject], str]:
        """Every item of a collection (paginated), and the list's resourceVersion."""
        everything: list[JsonObject] = []
        resource_version = ""
        async for items, version in self.list_pages(path, query=query):
            resource_version = version
            everything.extend(items)
        return everything, resource_version

    async def watch(
        self,
        path: str,
        *,
        resource_version: str,
        timeout_seconds: int,
        read_timeout: float,
        query: Mapping[str, str],
    ) -> AsyncIterator[JsonObject]:
        """Watch events (`{"type", "object"}`) from a resourceVersion, bookmarks included.

        The server ends the watch after `timeout_seconds`; a stream silent for
        `read_timeout` seconds is taken for dead (a half-open connection never ends
        by itself) and fails with UnreachableError.
        """
        params: dict[str, str | int] = dict(query)
        params.update(
            watch="true",
            resourceVersion=resource_version,
            allowWatchBookmarks="true",
            timeoutSeconds=timeout_seconds,
        )
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=CONNECT_TIMEOUT, sock_read=read_timeout
        )
        response = await self._call(
            "GET", path, query=params, body=None, content_type=JSON, timeout=timeout
        )
        try:
            if not 200 <= response.status <= 299:
                raise _error(response, await _read(response))
            while True:
                try:
                    line = await response.content.readline()
                except (aiohttp.ClientError, TimeoutError, OSError) as error:
                    raise UnreachableError(f"watch of {path}: {error!r}", unsent=False) from error
                if not line:
                    return
                if line.strip():
                    event: JsonObject = orjson.loads(line)
                    yield event
        finally:
            response.release()

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int] | None,
        body: object,
        content_type: str,
        timeout: float | aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """The request, sent on kubernetes_asyncio's session with its credentials, but
        encoded here: its generic path walked every body to sanitise it and encoded it
        with the standard library, a twentieth of the operator's CPU in a burst."""
        if self.limiter is not None:
            await self.limiter.acquire()
        fence = self.fence if method in WRITES else None
        if fence is not None:
            timeout, query = _within_lease(fence, method, path, timeout, query)
        api_client = self.api_client
        headers = {**api_client.default_headers, "Accept": JSON, "Content-Type": content_type}
        await api_client.update_params_for_auth(headers, [], [BEARER_TOKEN])
        url = f"{api_client.configuration.host}{path}"
        if query:
            url = f"{url}?{urllib.parse.urlencode(list(query.items()))}"
        rest = api_client.rest_client
        extra: dict[str, Any] = {}
        if rest.proxy:
            extra.update(proxy=rest.proxy, proxy_headers=rest.proxy_headers)
        if rest.server_hostname:
            extra["server_hostname"] = rest.server_hostname
        if not isinstance(timeout, aiohttp.ClientTimeout):
            timeout = aiohttp.ClientTimeout(total=timeout)
        try:
            response: aiohttp.ClientResponse = await rest.pool_manager.request(
                method,
                url,
                headers=headers,
                data=None if body is None else orjson.dumps(body),
                timeout=timeout,
                **extra,
            )
        except aiohttp.ClientConnectorError as error:
            raise UnreachableError(f"{method} {path}: {error}", unsent=True) from error
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            raise UnreachableError(
                f"{method} {path}: {_failure(error, timeout)}", unsent=False
            ) from error
        return response


def _failure(error: BaseException, timeout: aiohttp.ClientTimeout) -> str:
    """What went wrong, in words: the bound when the request's whole time ran out
    (for a fenced write, what was left of the Lease)."""
    if type(error) is TimeoutError and timeout.total is not None:
        return f"not answered within {timeout.total:.3g}s"
    return repr(error)


def _within_lease(
    fence: Callable[[], float],
    method: str,
    path: str,
    timeout: float | aiohttp.ClientTimeout,
    query: Mapping[str, str | int] | None,
) -> tuple[float | aiohttp.ClientTimeout, Mapping[str, str | int] | None]:
    """A write's timeout and query, bounded by the fence's time left (told to the API
    server as `timeout`); NotLeadingError when none is left."""
    left = fence()
    if left <= 0:
        raise NotLeadingError(method, path)
    if math.isinf(left) or isinstance(timeout, aiohttp.ClientTimeout):
        return timeout, query
    bounded = min(timeout, left)
    return bounded, {**(query or {}), "timeout": go_duration(bounded)}


def go_duration(seconds: float) -> str:
    """Seconds as a Go duration in whole milliseconds, rounded up (never "0ms", which
    the API server would read as no timeout at all)."""
    return f"{max(1, math.ceil(seconds * 1000))}ms"


async def _on_loop(
    loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T], what: str
) -> T:
    """The coroutine run on another thread's `loop`, awaited from this one.

    Cancelling the wait here (the webhook's time bound) cancels it there too.
    """
    try:
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    except RuntimeError as error:  # that loop is closed: the operator is stopping
        coroutine.close()
        raise UnreachableError(f"{what}: {error}", unsent=True) from error
    return await asyncio.wrap_future(future)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _repeatable(method: str, error: KubeError) -> bool:
    """Whether repeating the request can do no harm that the first attempt did not."""
    if error.throttled or (isinstance(error, UnreachableError) and error.unsent):
        return True
    return method == "GET" and error.transient


async def _decoded(response: Any) -> JsonObject:
    """The answer's JSON ({} for none), or its KubeError; the response released either way."""
    try:
        payload = await _read(response)
        if not 200 <= response.status <= 299:
            raise _error(response, payload)
        decoded: JsonObject = orjson.loads(payload) if payload else {}
        return decoded
    finally:
        response.release()


async def _read(response: Any) -> bytes:
    try:
        payload: bytes = await response.read()
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        raise UnreachableError(f"reading the answer: {error!r}", unsent=False) from error
    return payload


def _retry_after(response: Any) -> float | None:
    """Retry-After in seconds (the API server never sends the HTTP-date form)."""
    value = (getattr(response, "headers", None) or {}).get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _error(response: Any, payload: bytes) -> KubeError:
    status, retry_after = int(response.status), _retry_after(response)
    try:
        decoded = orjson.loads(payload)
    except ValueError:
        return KubeError(status, "", payload.decode(errors="replace"), retry_after=retry_after)
    if isinstance(decoded, dict):
        details = decoded.get("details")
        causes = details.get("causes") if isinstance(details, dict) else None
        return KubeError(
            status,
            str(decoded.get("reason", "")),
            str(decoded.get("message", "")),
            retry_after=retry_after,
            causes=tuple(
                str(cause.get("reason", "")) for cause in causes or () if isinstance(cause, dict)
            ),
        )
    return KubeError(status, "", str(decoded), retry_after=retry_after)
