"""Under CI a skip fails the run (`tests.ci_skips`), in a pytest run of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SKIPPING = """
import pytest

pytest.importorskip("no_such_module_anywhere") if {module_skip} else None


@pytest.fixture
def cluster_in_another_mode():
    pytest.skip("the cluster runs in another mode")


def test_passes():
    pass


def test_skips_itself():
    pytest.skip("not here")


def test_skips_in_a_fixture(cluster_in_another_mode):
    pass


@pytest.mark.xfail(reason="a known gap", strict=True)
def test_an_expected_failure():
    assert False
"""


def run(
    tmp_path: Path, ci: str | None, *, module_skip: bool = False
) -> subprocess.CompletedProcess[str]:
    test = tmp_path / "test_skipping.py"
    test.write_text(SKIPPING.format(module_skip=module_skip))
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    if ci is not None:
        env["CI"] = ci
    command = [sys.executable, "-m", "pytest", "-p", "tests.ci_skips", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "-q", "--rootdir", str(tmp_path), str(test)],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_every_skip_fails_the_run_with_its_reason(tmp_path: Path, ci: str) -> None:
    result = run(tmp_path, ci)
    assert result.returncode == 1, result.stdout
    assert "1 failed, 1 passed, 1 xfailed, 1 error" in result.stdout
    assert "2 skipped under CI" in result.stdout
    assert "test_skips_itself: Skipped: not here" in result.stdout
    assert "test_skips_in_a_fixture: Skipped: the cluster runs in another mode" in result.stdout


def test_under_ci_a_module_that_skips_whole_fails_the_run(tmp_path: Path) -> None:
    result = run(tmp_path, "true", module_skip=True)
    assert result.returncode != 0, result.stdout
    assert "could not import 'no_such_module_anywhere'" in result.stdout
    assert "1 skipped under CI" in result.stdout


@pytest.mark.parametrize("ci", [None, "", "0", "false"])
def test_elsewhere_a_skip_stays_a_skip(tmp_path: Path, ci: str | None) -> None:
    result = run(tmp_path, ci)
    assert result.returncode == 0, result.stdout
    assert "1 passed, 2 skipped, 1 xfailed" in result.stdout


def test_the_ci_entry_point_sets_ci() -> None:
    assert "export CI=1" in (ROOT / ".ci" / "run").read_text().splitlines()
