"""Reviews asked once per token and kept 30 s; failures not kept; a bounded cache."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from muster.client import paths
from muster.client.kube import KubeError, UnreachableError
from muster.client.throttle import RateLimiter
from muster.operator.dashboard.access import ALLOWED, FORBIDDEN, UNAUTHENTICATED
from muster.operator.dashboard.reviewer import REVIEW_TTL_SECONDS, Reviewer

USERS = {"granted": "alice", "tenant": "bob"}


class ReviewingKube:
    """Answers TokenReviews for the tokens in USERS and allows only alice; counts."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []
        self.failing = False
        self.gate: asyncio.Event | None = None

    def view(self, *, limiter: RateLimiter | None = None) -> ReviewingKube:
        return self

    async def request(self, method: str, path: str, *, body: Any, timeout: float) -> Any:
        self.asked.append((path, body))
        if self.gate is not None:
            await self.gate.wait()
        if self.failing:
            raise UnreachableError("no answer", unsent=False)
        if path == paths.TOKEN_REVIEWS:
            user = USERS.get(body["spec"]["token"])
            if user is None:
                return {"status": {"authenticated": False}}
            return {"status": {"authenticated": True, "user": {"username": user}}}
        assert path == paths.ACCESS_REVIEWS
        return {"status": {"allowed": body["spec"]["user"] == "alice"}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def reviewer(kube: ReviewingKube, clock: Clock, capacity: int = 1024) -> Reviewer:
    return Reviewer(kube, clock=clock, capacity=capacity)  # type: ignore[arg-type]


async def test_a_granted_token_is_allowed_a_tenants_forbidden_and_a_made_up_one_not_known() -> None:
    kube, clock = ReviewingKube(), Clock()
    review = reviewer(kube, clock)
    assert (await review.verdict("Bearer granted")).status == ALLOWED
    assert (await review.verdict("Bearer tenant")).status == FORBIDDEN
    assert (await review.verdict("Bearer made-up")).status == UNAUTHENTICATED
    assert (await review.verdict(None)).status == UNAUTHENTICATED
    paths_asked = [path for path, _ in kube.asked]
    # A token the API server does not know is never asked about access.
    assert paths_asked == [
        paths.TOKEN_REVIEWS,
        paths.ACCESS_REVIEWS,
        paths.TOKEN_REVIEWS,
        paths.ACCESS_REVIEWS,
        paths.TOKEN_REVIEWS,
    ]


async def test_a_reload_within_the_ttl_asks_nothing_and_after_it_asks_again() -> None:
    kube, clock = ReviewingKube(), Clock()
    review = reviewer(kube, clock)
    for token in ("granted", "tenant", "made-up"):
        await review.verdict(f"Bearer {token}")
    asked = len(kube.asked)
    clock.now += REVIEW_TTL_SECONDS - 1
    for token in ("granted", "tenant", "made-up"):
        await review.verdict(f"Bearer {token}")
    assert len(kube.asked) == asked
    clock.now += 1
    assert (await review.verdict("Bearer granted")).status == ALLOWED
    assert len(kube.asked) == asked + 2


async def test_requests_that_arrive_during_a_review_wait_for_that_one_review() -> None:
    kube, clock = ReviewingKube(), Clock()
    kube.gate = asyncio.Event()
    review = reviewer(kube, clock)
    waiting = [asyncio.create_task(review.verdict("Bearer granted")) for _ in range(5)]
    await asyncio.sleep(0)
    kube.gate.set()
    assert {verdict.status for verdict in await asyncio.gather(*waiting)} == {ALLOWED}
    assert len(kube.asked) == 2


async def test_a_failed_review_is_raised_and_not_kept() -> None:
    kube, clock = ReviewingKube(), Clock()
    kube.failing = True
    review = reviewer(kube, clock)
    with pytest.raises(KubeError):
        await review.verdict("Bearer granted")
    kube.failing = False
    assert (await review.verdict("Bearer granted")).status == ALLOWED


async def test_the_cache_holds_at_most_its_capacity_the_oldest_going_first() -> None:
    kube, clock = ReviewingKube(), Clock()
    review = reviewer(kube, clock, capacity=2)
    for token in ("granted", "tenant", "made-up"):
        await review.verdict(f"Bearer {token}")
    asked = len(kube.asked)
    await review.verdict("Bearer made-up")
    await review.verdict("Bearer tenant")
    assert len(kube.asked) == asked
    await review.verdict("Bearer granted")  # evicted by the third
    assert len(kube.asked) == asked + 2


async def test_the_cache_keys_are_not_the_tokens() -> None:
    review = reviewer(ReviewingKube(), Clock())
    await review.verdict("Bearer granted")
    assert all(b"granted" not in key for key in review._kept)
