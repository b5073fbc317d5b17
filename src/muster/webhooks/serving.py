"""The webhooks' HTTPS endpoint: bounded requests, clear refusals, its own thread.

kopf's own server keeps aiohttp's 1 MiB body limit, so the API server's calls about
legal objects between 1 and 1.5 MiB fail with a bare 413; it lets a malformed body
surface as whatever exception it raises; and it serves on the operator's event loop,
where a burst of admission requests delays everything else, the Lease's renewal
included. This endpoint:

- accepts AdmissionReviews as large as the API server sends: an UPDATE carries the
  object and its old version, each at most the 3 MiB the API server accepts in a
  request, so 2 x 3 MiB plus 1 MiB for the rest of the review;
- answers an oversized, malformed or unanswerable review with an HTTP error that
  says what was wrong (the API server shows it and applies the webhook's
  failurePolicy), logs it, and keeps serving;
- answers a call it cannot serve *yet* (`NotReadyError`) with 503 and `Retry-After`:
  the API server's client waits that long and calls again, within the webhook's
  timeoutSeconds, so the object is admitted once the endpoint is ready instead of
  refused at once under failurePolicy Fail (a 404 or a bare 5xx is not retried);
- gives each request REQUEST_TIMEOUT, below the webhooks' timeoutSeconds, so the
  API server hears a clear answer instead of timing out itself;
- runs on a thread of its own with its own event loop, so the operator's loop never
  waits for admission, nor admission for the operator's loop, but for the rare
  handler that asks the API server.

kopf's admission function (what `fn` is) is computation over the review plus the
handlers, which read thread-safe state (the PriorityClass and Workload stores'
dicts). The few that ask the API server (a Workload reference the cache cannot
confirm, the event for a pod created bound) go through the operator's client,
which sends such a request from its own loop (:class:`muster.client.kube.Kube`).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp.web
import orjson

from muster.webhooks.kopf_private import admission

logger = logging.getLogger(__name__)

MiB = 1024 * 1024
MAX_OBJECT_BYTES = 3 * MiB
"""The largest request body the API server accepts (its default --max-request-bytes)."""
MAX_REVIEW_BYTES = 2 * MAX_OBJECT_BYTES + MiB
REQUEST_TIMEOUT = 8.0
"""Seconds; the webhook configurations give the API server's call 10 (timeoutSeconds)."""

RETRY_AFTER_SECONDS = 1
"""What a NotReadyError answer asks the API server to wait before it calls again."""

ReviewFn = Callable[..., Awaitable[Mapping[str, Any]]]
"""kopf's admission function: (review, webhook=, headers=, sslpeer=) -> review."""


class MalformedReviewError(ValueError):
    """The body is not an AdmissionReview this endpoint can answer."""


class NotReadyError(Exception):
    """The endpoint will serve this call, but cannot yet: the caller should call again."""


def parse_review(body: bytes) -> dict[str, Any]:
    """The AdmissionReview in a request body, or MalformedReviewError saying what is wrong."""
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise MalformedReviewError(f"the body is not JSON: {error}") from None
    if not isinstance(review, dict) or review.get("kind") != "AdmissionReview":
        raise MalformedReviewError("the body is not an AdmissionReview")
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise MalformedReviewError("the AdmissionReview has no request with a uid")
    return review


def _error(
    status: int, message: str, webhook: str, headers: Mapping[str, str] | None = None
) -> aiohttp.web.Response:
    logger.warning("webhook %s: refused a call with %d: %s", webhook, status, message)
    return aiohttp.web.json_response(
        {"error": message}, status=status, reason=message[:200], headers=headers
    )


async def answer(fn: ReviewFn, request: aiohttp.web.Request) -> aiohttp.web.Response:
    """One admission call, every failure an HTTP error that names it."""
    webhook = request.match_info.get("id", "")
    try:
        async with asyncio.timeout(REQUEST_TIMEOUT):
            body = await request.read()
            review = parse_review(body)
            sslpeer = request.transport.get_extra_info("peercert") if request.transport else None
            response = await fn(
                review, webhook=webhook, headers=dict(request.headers), sslpeer=sslpeer
            )
    except aiohttp.web.HTTPRequestEntityTooLarge:
        return _error(413, f"the AdmissionReview exceeds {MAX_REVIEW_BYTES} bytes", webhook)
    except MalformedReviewError as error:
        return _error(400, str(error), webhook)
    except TimeoutError:
        return _error(504, f"no answer within {REQUEST_TIMEOUT:g}s", webhook)
    except NotReadyError as error:
        retry = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return _error(503, f"not ready: {error}", webhook, retry)
    except admission.UnknownResourceError as error:
        return _error(404, str(error) or "no webhook serves this resource", webhook)
    except admission.WebhookError as error:
        return _error(400, str(error) or type(error).__name__, webhook)
    except Exception as error:
        logger.exception("webhook %s: failed to answer", webhook)
        return _error(500, f"internal error: {type(error).__name__}", webhook)
    return aiohttp.web.json_response(response)


def application(fn: ReviewFn) -> aiohttp.web.Application:
    """The routes: every handler at /<id>, as kopf lays them out."""
    app = aiohttp.web.Application(client_max_size=MAX_REVIEW_BYTES)

    async def serve(request: aiohttp.web.Request) -> aiohttp.web.Response:
        return await answer(fn, request)

    app.add_routes([aiohttp.web.post("/{id:.*}", serve)])
    return app


class ThreadedSite:
    """An aiohttp application served (over TLS, given a context) from a thread with its
    own event loop."""

    def __init__(
        self,
        app: aiohttp.web.Application,
        *,
        host: str | None,
        port: int,
        ssl: ssl.SSLContext | None,
    ) -> None:
        self.app, self.host, self.port, self.ssl = app, host, port, ssl
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="webhooks", daemon=True)
        self.runner: aiohttp.web.AppRunner | None = None

    async def start(self) -> None:
        """Listening once this returns; a failure to listen is raised here."""
        self.thread.start()
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._start(), self.loop))

    async def stop(self) -> None:
        if self.thread.is_alive():
            stopping = asyncio.run_coroutine_threadsafe(self._stop(), self.loop)
            await asyncio.wrap_future(stopping)
            self.loop.call_soon_threadsafe(self.loop.stop)
            await asyncio.to_thread(self.thread.join)
        self.loop.close()

    async def _start(self) -> None:
        self.runner = aiohttp.web.AppRunner(self.app, handle_signals=False)
        await self.runner.setup()
        site = aiohttp.web.TCPSite(
            self.runner, self.host, self.port, ssl_context=self.ssl, reuse_address=True
        )
        await site.start()

    async def _stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
