"""`muster dashboard` in a real browser, against the real control plane and the
operator as installed: a waiting gang shows its reason and predicted start, then, with
no reload, runs in its domain; the keyboard reaches it and keeps its place while the
board changes; its page shows its events; the console stays clean.

The dashboard reads as a ServiceAccount bound to the installed ClusterRole
`muster-dashboard` and nothing else, so these rights are shown to be enough.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hack import installed
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from muster.api.constants import EXPECTED_RUNTIME_ANNOTATION
from tests.e2e.browser import browser, screenshot  # noqa: F401  (the browser fixture)
from tests.e2e.cluster import ROOT, Kubectl, wait_until
from tests.e2e.harness import (
    TEST_FLAGS,
    NodePool,
    OperatorProcess,
    free_port,
    gang_job,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)

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
                sys.executable,
                "-c",
                "import sys; from muster.cli import main; sys.exit(main())",
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
    screenshot(browser, kubectl.kubeconfig, "dashboard-gang")


def _tab(driver: webdriver.Chrome) -> str:
    """Press Tab once; the href of what has the focus then ("" for no link)."""
    ActionChains(driver).send_keys(Keys.TAB).perform()
    return _focused(driver)


def _focused(driver: webdriver.Chrome) -> str:
    try:
        return str(driver.switch_to.active_element.get_attribute("href") or "")
    except StaleElementReferenceException:
        return ""


def test_the_operator_serves_the_page_on_its_dashboard_port(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """A replica started with --dashboard-port serves the same board (a standby here:
    every replica serving the page watches for itself, leading or not)."""
    pool.add(gpus=2)
    kubectl.apply(gang_job("big", pool, workers=4), namespace)
    port = free_port()
    replica = operator.replica("muster-e2e-dashboard", f"--dashboard-port={port}")
    replica.start()
    try:
        wait_until(
            "the replica's page to show the waiting gang",
            lambda: f'data-gang="{namespace}/big"' in _page(f"http://127.0.0.1:{port}/board"),
            timeout=45,
        )
    finally:
        replica.stop()


def _page(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return str(response.read().decode())
    except (urllib.error.URLError, OSError):
        return ""
