"""The API server's reviews of a page's bearer token, asked once and kept briefly.

A TokenReview, then (for a user it knows) a SubjectAccessReview: `access` builds them
and decides. The verdict is kept `REVIEW_TTL_SECONDS` under an HMAC of the token (the
token itself is never a key; the HMAC's key is this process's own, so the cache's keys
are of no use elsewhere), and requests that arrive with the same token while its
review is under way wait for that one review. The page asks for its live part every
two seconds; without the cache each poll of each viewer would be two requests to the
API server.

The TTL is 30 s for both outcomes. controller-runtime's metrics filter keeps a token
review 1 min, an allowed access review 5 min and a denied one 30 s; this page shows
other teams' work, so a right taken away (a binding deleted, a ServiceAccount or its
token gone) stops opening it within the shortest of those, 30 s, for one pair of
reviews per viewer per 30 s. Whoever sends made-up tokens cannot flood the cache: it
holds at most `CAPACITY` verdicts, the oldest evicted first, and the reviews go
through a rate limit of their own (`REVIEW_QPS`, `REVIEW_BURST`), so a stream of
invented tokens costs the API server no more than that. A review that fails (no
answer, or the API server's error) is not kept: the next request asks again.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from muster.client import paths
from muster.client.kube import Kube
from muster.client.throttle import RateLimiter
from muster.operator.dashboard.access import (
    NO_TOKEN,
    Verdict,
    access_review,
    bearer_token,
    reviewed_user,
    token_review,
    verdict,
)

REVIEW_TTL_SECONDS: Final = 30.0
CAPACITY: Final = 1024
REVIEW_QPS: Final = 10.0
REVIEW_BURST: Final = 20
REVIEW_TIMEOUT_SECONDS: Final = 10.0  # controller-runtime's TokenAccessReviewTimeout


class Reviewer:
    """Verdicts on `Authorization` headers, from the API server's reviews, cached."""

    def __init__(
        self,
        kube: Kube,
        *,
        ttl: float = REVIEW_TTL_SECONDS,
        capacity: int = CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube.view(limiter=RateLimiter(qps=REVIEW_QPS, burst=REVIEW_BURST))
        self.ttl = ttl
        self.capacity = capacity
        self.clock = clock
        self._key = secrets.token_bytes(32)
        self._kept: OrderedDict[bytes, tuple[float, Verdict]] = OrderedDict()
        self._asked: dict[bytes, asyncio.Future[Verdict]] = {}

    async def verdict(self, authorization: str | None) -> Verdict:
        """The verdict on a request with this `Authorization` header (None: none).

        Raises KubeError when the API server could not review it."""
        token = bearer_token(authorization)
        if token is None:
            return NO_TOKEN
        key = hmac.digest(self._key, token.encode(), hashlib.sha256)
        kept = self._kept.get(key)
        if kept is not None and kept[0] > self.clock():
            return kept[1]
        asked = self._asked.get(key)
        if asked is None:
            asked = asyncio.ensure_future(self._review(token))
            self._asked[key] = asked
            asked.add_done_callback(lambda done: self._settle(key, done))
        # Shielded: a client that goes away does not cancel the review others wait for.
        return await asyncio.shield(asked)

    async def _review(self, token: str) -> Verdict:
        answer = await self.kube.request(
            "POST", paths.TOKEN_REVIEWS, body=token_review(token), timeout=REVIEW_TIMEOUT_SECONDS
        )
        user = reviewed_user(answer)
        if user is None:
            return verdict(None, None)
        access = await self.kube.request(
            "POST", paths.ACCESS_REVIEWS, body=access_review(user), timeout=REVIEW_TIMEOUT_SECONDS
        )
        return verdict(user, access)

    def _settle(self, key: bytes, done: asyncio.Future[Verdict]) -> None:
        """Keep a review's verdict for `ttl`, unless it failed."""
        self._asked.pop(key, None)
        if done.cancelled() or done.exception() is not None:
            return
        now = self.clock()
        self._kept.pop(key, None)
        # One TTL for all: the oldest entry is the first to expire.
        while self._kept and (
            len(self._kept) >= self.capacity or next(iter(self._kept.values()))[0] <= now
        ):
            self._kept.popitem(last=False)
        self._kept[key] = (now + self.ttl, done.result())
