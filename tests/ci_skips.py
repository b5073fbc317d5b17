"""With `CI` set in the environment, a skipped test fails the run.

A test that skips proved nothing, and a run whose skips go unnoticed lands code that
no test ran: an e2e test that skips because the cluster was started in another mode
looks, in a green run, exactly like one that passed. So under CI every skip, of a
test or of a whole module, is reported as a failure that keeps the skip's reason,
and the run's closing lines list them. A test that cannot run in CI's setting is
deselected on purpose instead (a marker the command line names, `-m`), never
skipped. On a developer's machine (no `CI`) a skip stays a skip.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

FALSE_WORDS = ("", "0", "false", "no")
SKIPPED_UNDER_CI: list[str] = []


def under_ci() -> bool:
    """Whether `CI` is set (to anything but a false word), as CI services set it."""
    return os.environ.get("CI", "").strip().lower() not in FALSE_WORDS


def _failed_instead(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Turn a skip's report into a failure that keeps its reason."""
    if not (under_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    SKIPPED_UNDER_CI.append(f"{report.nodeid}: {reason}")
    report.outcome = "failed"
    report.longrepr = f"skipped under CI, where a skip fails the run: {reason}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _failed_instead(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    _failed_instead(report)
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if SKIPPED_UNDER_CI:
        terminalreporter.write_sep("=", f"{len(SKIPPED_UNDER_CI)} skipped under CI", red=True)
        for line in SKIPPED_UNDER_CI:
            terminalreporter.write_line(line)
