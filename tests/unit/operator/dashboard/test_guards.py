"""Every route of the page behind its guard, over real HTTP (aiohttp's own): the
operator's by reviewed bearer tokens, `muster dashboard`'s by its Host header."""

from __future__ import annotations

from aiohttp.test_utils import TestClient, TestServer

from muster.operator.dashboard.guards import addressed, reviewed
from muster.operator.dashboard.pages import build_app
from muster.operator.dashboard.reviewer import Reviewer
from tests.unit.operator.dashboard.scene import StillFeed
from tests.unit.operator.dashboard.test_reviewer import Clock, ReviewingKube

ROUTES = ("/", "/board?version=1", "/gangs/default/wait", "/static/dashboard.js")


def reviewed_page(kube: ReviewingKube) -> TestServer:
    reviewer = Reviewer(kube, clock=Clock())  # type: ignore[arg-type]
    return TestServer(build_app(StillFeed(), [reviewed(reviewer)]))


async def test_no_token_or_an_unknown_one_is_401_with_a_challenge_and_no_board() -> None:
    async with TestClient(reviewed_page(ReviewingKube())) as client:
        for route in ROUTES:
            for headers in ({}, {"Authorization": "Bearer made-up"}, {"Authorization": "Basic x"}):
                response = await client.get(route, headers=headers)
                body = await response.text()
                assert response.status == 401, (route, headers)
                assert response.headers["WWW-Authenticate"] == 'Bearer realm="muster-dashboard"'
                assert "default/wait" not in body and "board" not in body


async def test_a_user_without_the_right_is_403_and_sees_no_board() -> None:
    async with TestClient(reviewed_page(ReviewingKube())) as client:
        for route in ROUTES:
            response = await client.get(route, headers={"Authorization": "Bearer tenant"})
            body = await response.text()
            assert response.status == 403
            assert body == (
                "bob may not get podgroups.scheduling.muster.dev in all namespaces, "
                "which this page requires\n"
            )


async def test_a_granted_user_gets_the_board() -> None:
    async with TestClient(reviewed_page(ReviewingKube())) as client:
        granted = {"Authorization": "Bearer granted"}
        for route in ROUTES:
            assert (await client.get(route, headers=granted)).status == 200
        page = await (await client.get("/", headers=granted)).text()
    assert 'data-gang="default/wait"' in page


async def test_a_review_that_failed_is_503_and_shows_nothing() -> None:
    kube = ReviewingKube()
    kube.failing = True
    async with TestClient(reviewed_page(kube)) as client:
        response = await client.get("/", headers={"Authorization": "Bearer granted"})
        assert response.status == 503 and response.headers["Retry-After"] == "5"
        assert "default/wait" not in await response.text()


async def test_muster_dashboard_refuses_a_host_other_than_its_address() -> None:
    server = TestServer(build_app(StillFeed(), [addressed("127.0.0.1")]), host="127.0.0.1")
    async with TestClient(server) as client:
        for route in ROUTES:
            refused = await client.get(route, headers={"Host": "attacker.example:8090"})
            text = await refused.text()
            assert refused.status == 403
            assert "default/wait" not in text
            assert "not to the host 'attacker.example:8090'" in text and "--allowed-host" in text
            assert (await client.get(route)).status == 200  # Host: 127.0.0.1:PORT
            assert (await client.get(route, headers={"Host": "localhost:1"})).status == 200
