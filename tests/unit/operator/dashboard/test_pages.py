"""The pages, served from a board and a watched cache, over real HTTP (aiohttp's own)."""

from __future__ import annotations

import re

from aiohttp.test_utils import TestClient, TestServer

from muster.operator.dashboard.pages import build_app
from muster.operator.dashboard.rendering import shown
from tests.unit.operator.dashboard.scene import StillFeed


async def test_the_overview_shows_the_queue_the_running_gangs_and_the_pictures() -> None:
    async with TestClient(TestServer(build_app(StillFeed()))) as client:
        response = await client.get("/")
        assert response.status == 200
        assert "default-src 'self'" in response.headers["Content-Security-Policy"]
        page = await response.text()
    assert '<div id="board" data-version="3">' in page
    assert (
        'id="freshness" class="visually-hidden" role="status"' in page
    )  # announced, not the board
    assert re.search(r'<tr data-gang="default/wait" data-namespace="default">\s*<td>1</td>', page)
    assert '<a href="/gangs/default/wait">default/wait</a>' in page
    assert "topology.kubernetes.io/zone=a" in page  # where the running gang runs
    assert page.count('<svg class="domains"') == 2  # GPUs and CPU per zone
    assert '<svg class="timeline"' in page
    assert '<script src="/static/dashboard.js">' in page and "<script>" not in page


async def test_each_gang_row_shows_its_requests_priority_and_wait_and_its_namespace_links() -> None:
    async with TestClient(TestServer(build_app(StillFeed()))) as client:
        page = await (await client.get("/?namespace=default")).text()
    assert '<td class="requests">16 nvidia.com/gpu</td>' in page  # the big gang's 4 x 4
    assert '<td class="priority">0</td>' in page
    assert '<td class="waited">8759h58m</td>' in page  # a year in the queue, less 2 minutes
    # The filter's links: every namespace with gangs, with how many, and all of them.
    assert '<a href="/" data-namespace="">all</a>' in page
    assert '<a href="/?namespace=default" data-namespace="default">default (3)</a>' in page
    assert "No gang has finished since the page began watching." in page


async def test_a_gang_that_never_fits_gives_its_reason_once() -> None:
    async with TestClient(TestServer(build_app(StillFeed()))) as client:
        overview = await (await client.get("/")).text()
        page = await (await client.get("/gangs/default/big")).text()
    [row] = re.findall(r'<tr data-gang="default/big".*?</tr>', overview, re.DOTALL)
    assert row.count("even on an empty cluster") == 1 and "see its reason" in row
    assert page.count("even on an empty cluster") == 1 and "Waits for" not in page
    assert '<dd class="requests">16 nvidia.com/gpu</dd>' in page
    assert '<a href="/?namespace=default">The gangs of default</a>' in page


async def test_the_live_part_answers_only_when_the_board_is_new() -> None:
    async with TestClient(TestServer(build_app(StillFeed()))) as client:
        assert (await client.get("/board?version=3")).status == 204
        fresh = await client.get("/board?version=2")
        assert fresh.status == 200
        assert '<div class="board" data-version="3">' in await fresh.text()
        assert (await client.get("/static/dashboard.js")).status == 200


async def test_a_gang_page_shows_its_pods_explain_tables_and_events() -> None:
    async with TestClient(TestServer(build_app(StillFeed()))) as client:
        page = await (await client.get("/gangs/default/wait")).text()
        missing = await client.get("/gangs/default/nothing")
    assert "<h1>PodGroup default/wait</h1>" in page
    assert '<th scope="row">wait-0</th><td>none yet</td>' in page
    assert "How many of its pods fit in each domain" in page
    assert '<th scope="row">Waiting</th><td>needs 8 GPUs</td><td>2</td>' in page
    assert missing.status == 404


async def test_no_board_yet_says_so() -> None:
    feed = StillFeed()
    feed.shown = shown(None, 0, feed.environment)
    async with TestClient(TestServer(build_app(feed))) as client:
        page = await (await client.get("/")).text()
    assert "Reading the cluster" in page


class NoRendering:
    """A template environment that fails the test if a page is rendered."""

    def get_template(self, name: str) -> None:
        raise AssertionError(f"{name} rendered for a request")


async def test_the_overview_and_live_part_are_sent_as_rendered_once_per_board() -> None:
    feed = StillFeed()
    feed.environment = NoRendering()  # type: ignore[assignment]
    async with TestClient(TestServer(build_app(feed))) as client:
        pages = [await (await client.get(path)).read() for path in ("/", "/", "/board?version=2")]
    assert pages[0] == pages[1] == feed.shown.overview
    assert pages[2] == feed.shown.live
