"""`muster dashboard` in a real browser, against the real control plane and the
operator as installed: a waiting gang shows its reason and predicted start, then, with
no reload, runs in its domain; the keyboard reaches it and keeps its place while the
board changes; each gang shows its GPUs requested, priority and wait, and a gang that
ended is listed finished with its wait; its page shows its events; its namespace's
link shows that team's gangs only; the console stays clean. The browser reaches
the page as a user does, by `muster dashboard` on the workstation; a request for
another host name is refused.

The dashboard reads as a ServiceAccount bound to the installed ClusterRole
`muster-dashboard` and nothing else, so these rights are shown to be enough.

Then the page the operator serves, installed from the chart with
`dashboard.enabled=true`: it asks every request who it is. No token, or a made-up one,
gets 401; a tenant's token (the built-in `edit` role and even `muster-dashboard-viewer`
bound in its own namespace only) gets 403; neither sees anything of the board; a
ServiceAccount bound cluster-wide to `muster-dashboard-viewer`, its token from the
TokenRequest API as `kubectl create token` gets it, is shown the board.
"""

from __future__ import annotations

import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from devtools import installed
from devtools.builds import ROOT
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import MUSTER, OperatorProcess
from devtools.ports import free_port
from devtools.waiting import wait_until
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from muster.api.constants import EXPECTED_RUNTIME_ANNOTATION
from tests.e2e.support.browser import browser, screenshot  # noqa: F401  (the browser fixture)
from tests.e2e.support.harness import TEST_FLAGS, pods_of, wait_all_bound, wait_for_reason
from tests.e2e.support.namespaces import fresh_namespace

pytestmark = pytest.mark.e2e
ZONE = "topology.kubernetes.io/zone"


@pytest.fixture
def dashboard(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, tmp_path: Path
) -> Iterator[str]:
    """`muster dashboard` with the installed read-only rights, deciding with the
    operator's settings; its address."""
    kubectl("create", "serviceaccount", "dashboard", "-n", namespace)
    binding = f"{namespace}-dashboard"
    kubectl(
        "create",
        "clusterrolebinding",
        binding,
        "--clusterrole=muster-dashboard",
        f"--serviceaccount={namespace}:dashboard",
    )
    token = kubectl("create", "token", "dashboard", "-n", namespace, "--duration=1h").stdout
    credentials = installed.token_kubeconfig(
        operator.kubeconfig, token.strip(), tmp_path / "dashboard.kubeconfig"
    )
    port = free_port()
    log = tmp_path / "dashboard.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                *MUSTER,
                "dashboard",
                f"--kubeconfig={credentials}",
                f"--port={port}",
                *TEST_FLAGS,
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, **operator.service.settings},
        )
    address = f"http://127.0.0.1:{port}"
    try:
        wait_until("the dashboard's first board", lambda: _has_board(address, process, log))
        yield address
    finally:
        process.terminate()
        process.wait(timeout=15)
        kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found", check=False)


def _refused_for_another_host(address: str) -> bool:
    """A request for the dashboard by another name (as after DNS rebinding) is refused."""
    request = urllib.request.Request(f"{address}/", headers={"Host": "rebound.example:8090"})
    try:
        urllib.request.urlopen(request, timeout=5)
    except urllib.error.HTTPError as error:
        return error.code == 403 and b"rebound.example" in error.read()
    return False


def _has_board(address: str, process: subprocess.Popen[bytes], log: Path) -> bool:
    assert process.poll() is None, log.read_text(errors="replace")
    try:
        with urllib.request.urlopen(f"{address}/board", timeout=2) as response:
            return 'class="board"' in response.read().decode()
    except (urllib.error.URLError, OSError):
        return False


def _text(driver: webdriver.Chrome, selector: str) -> str:
    """The text of the first element matching, or "" (absent, or swapped meanwhile)."""
    try:
        found = driver.find_elements(By.CSS_SELECTOR, selector)
        return found[0].text if found else ""
    except StaleElementReferenceException:
        return ""


@pytest.fixture
def other_namespace(kubectl: Kubectl, request: pytest.FixtureRequest) -> Iterator[str]:
    """Another team's namespace, for the namespace filter."""
    yield from fresh_namespace(kubectl, f"other-{request.node.name}")


def test_a_gang_waits_with_its_reason_and_start_then_runs_in_its_domain_live(
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    dashboard: str,
    browser: webdriver.Chrome,  # noqa: F811
) -> None:
    zone = f"{pool.name}-zone"
    pool.add(gpus=4, zone=zone)
    declared = {EXPECTED_RUNTIME_ANNOTATION: "40s"}
    kubectl.apply(gang_job("a", pool, workers=4, annotations=declared, run_for="40s"), namespace)
    wait_all_bound(kubectl, namespace, "a", 4)
    wait_until(
        "a's pods to run",
        lambda: all(
            (pod.get("status") or {}).get("startTime") for pod in pods_of(kubectl, namespace, "a")
        ),
    )
    kubectl.apply(gang_job("b", pool, workers=4, annotations=declared), namespace)

    assert _refused_for_another_host(dashboard)
    browser.get(dashboard + "/")
    _tab(browser)
    assert browser.switch_to.active_element.text == "Skip to the content"
    waiting = f'#queue tr[data-gang="{namespace}/b"]'
    wait_until(
        "b in the queue with a predicted start",
        lambda: _text(browser, f"{waiting} td.start").startswith("~"),
        timeout=45,
    )
    row = _text(browser, waiting)
    assert "Unschedulable" in row and "nvidia.com/gpu" in row, row
    assert _text(browser, f"{waiting} td.requests") == "4 nvidia.com/gpu"
    assert _text(browser, f"{waiting} td.priority") == "0"
    assert _text(browser, f"{waiting} td.waited")[:1].isdigit(), row  # `12s`, `2m`...
    assert "UTC" in _text(browser, f"{waiting} td.start")
    assert f"when {namespace}/a ends (expected runtime 40s, declared)" in row, row
    screenshot(browser, kubectl.kubeconfig, "dashboard-waiting")
    link = f"/gangs/{namespace}/b"
    wait_until("the keyboard on b's link", lambda: _tab(browser).endswith(link), timeout=30)

    wait_for_reason(kubectl, namespace, "b", "Scheduled", timeout=120)
    running = f'#running tr[data-gang="{namespace}/b"] td.domain'
    wait_until(
        "the page, not reloaded, to show b running in its zone",
        lambda: _text(browser, running) == f"{ZONE}={zone}",
        timeout=20,
    )
    assert not _text(browser, waiting)
    # a ended for b to start: it is among the finished gangs, with what it waited.
    finished = f'#finished tr[data-gang="{namespace}/a"]'
    wait_until("a among the finished", lambda: bool(_text(browser, finished)), timeout=20)
    assert _text(browser, f"{finished} td.requests") == "4 nvidia.com/gpu"
    assert _text(browser, f"{finished} td.waited")[:1].isdigit()
    screenshot(browser, kubectl.kubeconfig, "dashboard-running")

    # The board was swapped under the keyboard: b's link (now in the running table)
    # still has the focus, and Enter follows it.
    assert _focused(browser).endswith(link)
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_until("b's page", lambda: browser.current_url.endswith(link))
    assert browser.find_element(By.TAG_NAME, "h1").text == f"PodGroup {namespace}/b"
    reasons = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "table.events th")]
    assert reasons[5:], reasons  # the header's five, then one per event
    assert _text(browser, "dd.domain") == f"{ZONE}={zone}"
    assert _text(browser, "dd.requests") == "4 nvidia.com/gpu"
    screenshot(browser, kubectl.kubeconfig, "dashboard-gang")


def test_a_team_s_link_shows_its_namespace_s_gangs_only_and_keeps_to_it_live(
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    *,
    other_namespace: str,
    dashboard: str,
    browser: webdriver.Chrome,  # noqa: F811
) -> None:
    pool.add(gpus=4)
    kubectl.apply(gang_job("a", pool, workers=2), namespace)
    wait_all_bound(kubectl, namespace, "a", 2)
    kubectl.apply(gang_job("c", pool, workers=4), other_namespace)  # waits for a's GPUs
    ours, theirs = f"{namespace}/a", f"{other_namespace}/c"

    browser.get(f"{dashboard}/?namespace={namespace}")
    wait_until("the filter to say what it shows", lambda: bool(_text(browser, "#filtered")))
    wait_until("the other team's gang on the board", lambda: theirs in _gangs(browser))
    assert _gangs(browser, shown=True) == {ours}
    current = browser.find_element(By.CSS_SELECTOR, "#namespaces a[aria-current]")
    assert current.get_attribute("data-namespace") == namespace
    # The board changes (another gang of theirs): the page keeps to our namespace.
    kubectl.apply(gang_job("d", pool, workers=4), other_namespace)
    wait_until("the new board", lambda: f"{other_namespace}/d" in _gangs(browser), timeout=20)
    assert _gangs(browser, shown=True) == {ours}

    theirs_link = f'#namespaces a[data-namespace="{other_namespace}"]'
    browser.find_element(By.CSS_SELECTOR, theirs_link).click()
    wait_until(
        "the other team's gangs only",
        lambda: _gangs(browser, shown=True) == {theirs, f"{other_namespace}/d"},
    )
    browser.find_element(By.CSS_SELECTOR, '#namespaces a[data-namespace=""]').click()
    wait_until("every gang again", lambda: {ours, theirs} <= _gangs(browser, shown=True))
    screenshot(browser, kubectl.kubeconfig, "dashboard-namespace")


def _gangs(driver: webdriver.Chrome, *, shown: bool = False) -> set[str]:
    """The gangs in the page's tables; with `shown`, only those it shows."""
    try:
        rows = driver.find_elements(By.CSS_SELECTOR, "tr[data-namespace]")
        return {
            str(row.get_attribute("data-gang")) for row in rows if not shown or row.is_displayed()
        }
    except StaleElementReferenceException:
        return set()


def _tab(driver: webdriver.Chrome) -> str:
    """Press Tab once; the href of what has the focus then ("" for no link)."""
    ActionChains(driver).send_keys(Keys.TAB).perform()
    return _focused(driver)


def _focused(driver: webdriver.Chrome) -> str:
    try:
        return str(driver.switch_to.active_element.get_attribute("href") or "")
    except StaleElementReferenceException:
        return ""


DASHBOARD_VALUES = ("dashboard.enabled=true",)


def _key(document: dict[str, Any]) -> tuple[str, str, str]:
    metadata = document["metadata"]
    return document["kind"], metadata["name"], metadata.get("namespace", "")


@pytest.fixture(scope="module")
def operator_page(operator: OperatorProcess, kubeconfig: Path) -> Iterator[str]:
    """Muster installed from the chart with `dashboard.enabled=true`, and a replica
    serving the page (a standby: every replica serves it) on a port of its own; the
    page's address. The installation as it was comes back after, less what the value
    added."""
    service = operator.service
    defaults = service.settings
    default_objects = {_key(d) for d in installed.chart_documents(())}
    added = [
        key
        for key in map(_key, installed.chart_documents(DASHBOARD_VALUES))
        if key not in default_objects
    ]
    service.settings = installed.install(kubeconfig, service.url, DASHBOARD_VALUES)
    assert service.settings["MUSTER_DASHBOARD_PORT"] == "8090"  # the chart turned it on
    port = free_port()  # where a local process serves the chart's port
    replica = operator.replica(
        "muster-e2e-dashboard", "--dashboard-host=127.0.0.1", f"--dashboard-port={port}"
    )
    replica.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        replica.stop()
        service.settings = defaults
        installed.install(kubeconfig, service.url)
        for kind, name, namespace in added:
            where = ("-n", namespace) if namespace else ()
            Kubectl(kubeconfig)("delete", kind, name, *where, "--ignore-not-found")


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    """The page's status and text, with `Authorization: Bearer token` when given."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return int(r.status), str(r.read().decode())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def _token(kubectl: Kubectl, namespace: str, account: str) -> str:
    """A token of a new ServiceAccount, from the TokenRequest API."""
    kubectl("create", "serviceaccount", account, "-n", namespace)
    token = kubectl("create", "token", account, "-n", namespace, "--duration=1h").stdout
    return str(token).strip()


def test_the_operators_page_shows_the_board_only_to_a_token_granted_it(
    operator_page: str, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=2)
    kubectl.apply(gang_job("big", pool, workers=4), namespace)
    gang = f'data-gang="{namespace}/big"'

    # A tenant: the built-in edit role in its own namespace, and the viewer's right
    # there too (a RoleBinding): the board is the whole cluster's, so that opens nothing.
    tenant = _token(kubectl, namespace, "tenant")
    for role in ("edit", "muster-dashboard-viewer"):
        kubectl(
            "create", "rolebinding", f"tenant-{role}", f"--clusterrole={role}",
            f"--serviceaccount={namespace}:tenant", "-n", namespace,
        )  # fmt: skip
    # A viewer: the documented role, bound cluster-wide.
    viewer = _token(kubectl, namespace, "viewer")
    binding = f"{namespace}-viewer"
    kubectl(
        "create", "clusterrolebinding", binding, "--clusterrole=muster-dashboard-viewer",
        f"--serviceaccount={namespace}:viewer",
    )  # fmt: skip
    try:
        wait_until(
            "the page to show the waiting gang to the viewer",
            lambda: gang in _get(f"{operator_page}/board", viewer)[1],
            timeout=45,
        )
        for path in ("/", "/board", f"/gangs/{namespace}/big", "/static/dashboard.js"):
            url = f"{operator_page}{path}"
            for anonymous in (None, "made-up"):
                status, text = _get(url, anonymous)
                assert status == 401, (path, status, text)
                assert namespace not in text and "big" not in text, text
            status, text = _get(url, tenant)
            assert status == 403, (path, status, text)
            assert text == (
                f"system:serviceaccount:{namespace}:tenant may not get "
                "podgroups.scheduling.muster.dev in all namespaces, which this page requires\n"
            )
            assert _get(url, viewer)[0] == 200, path
        status, page = _get(f"{operator_page}/", viewer)
        assert status == 200 and gang in page
    finally:
        kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found", check=False)
