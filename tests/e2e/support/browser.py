"""Headless Chromium driven by Selenium, for the dashboard's tests.

Debian's `chromium` and `chromedriver` (`make e2e` installs them: hack/browser.sh),
named by path so that Selenium never looks for a browser to download. The browser's
console is read at the end of each test: an error there (a failed request, a script
error, a refused policy) fails it. Screenshots go beside the cluster's state
(`screenshots/`), kept for a look after the run.
"""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def _found(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: run hack/browser.sh (or `make e2e`)")
    return path


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = _found("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1100"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(_found("chromedriver")))
    try:
        yield driver
        errors = [entry for entry in console(driver) if entry["level"] == "SEVERE"]
        assert not errors, errors
    finally:
        driver.quit()


def console(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = driver.get_log("browser")  # type: ignore[no-untyped-call]
    return entries


def screenshot(driver: webdriver.Chrome, kubeconfig: Path, name: str) -> Path:
    """The whole page as it looks now, beyond the window too, as screenshots/NAME.png."""
    directory = kubeconfig.parent / "screenshots"
    directory.mkdir(exist_ok=True)
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
    )
    path = directory / f"{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    return path
