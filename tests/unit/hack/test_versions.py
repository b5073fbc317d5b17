"""`make test-versions`: its smoke set names tests that exist, its table keeps the rows of
versions not run, and the README states the tested range from versions.env."""

from __future__ import annotations

import ast
from pathlib import Path

from devtools.builds import ROOT, supported_versions, versions
from hack.versions import BEGIN, END, PAGE, SMOKE, Outcome, outcome_of, with_rows


def test_every_smoke_test_exists() -> None:
    for entry in SMOKE:
        path, _, name = entry.partition("::")
        tree = ast.parse((ROOT / path).read_text())
        names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert not name or name in names, entry


def test_the_default_version_is_supported_and_versions_run_oldest_first() -> None:
    supported = supported_versions()
    assert versions()["KUBE_VERSION"] in supported
    minors = [int(version.split(".")[1]) for version in supported]
    assert minors == sorted(minors)


def test_a_run_replaces_its_rows_and_keeps_the_others_in_version_order() -> None:
    page = f"intro\n{BEGIN}\n| Kubernetes |\n|---|\n| v1.38.0 | old |\n{END}\nafter\n"
    outcome = Outcome("v1.32.13", 9, 0, 2, 301.4, "2026-12-07", ("x (skipped: why)",))
    updated = with_rows(page, [outcome], ["v1.32.13", "v1.38.0"])
    table = updated[updated.index(BEGIN) : updated.index(END)].splitlines()
    assert table[-2:] == [
        "| v1.32.13 | 9 | 0 | 2 | 301 s | 2026-12-07 | x (skipped: why) |",
        "| v1.38.0 | old |",
    ]
    assert updated.startswith("intro\n") and updated.endswith(f"{END}\nafter\n")


def test_a_junit_report_is_counted_and_a_missing_one_fails_the_version(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(
        '<testsuites><testsuite><testcase name="a"/><testcase name="b"><skipped'
        ' message="Skipped: not served"/></testcase><testcase name="c"><failure/></testcase>'
        "</testsuite></testsuites>"
    )
    counted = outcome_of("v1.34.4", report, 10)
    assert (counted.passed, counted.failed, counted.skipped) == (1, 1, 1)
    assert counted.not_passed == ("b (skipped: not served)", "c (failed)")
    assert outcome_of("v1.34.4", tmp_path / "none.xml", 1).failed == len(SMOKE)


def test_the_readme_states_the_tested_range_and_the_page_only_supported_rows() -> None:
    supported = supported_versions()
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"tested on Kubernetes {supported[0]} to {supported[-1]}" in readme
    table = PAGE.read_text().split(BEGIN)[1].split(END)[0]
    rows = [line.split("|")[1].strip() for line in table.splitlines()[3:]]
    assert rows == [version for version in supported if version in rows]
