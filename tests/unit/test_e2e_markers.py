"""The fault tests are marked by their path (tests/e2e/conftest.py), in a collection of
their own: none of their modules names the marker, and a run on the shared cluster
(`-m "e2e and not faults"`) collects none of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAULTS = ROOT / "tests" / "e2e" / "faults"


def collected(marker: str) -> list[str]:
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    result = subprocess.run(
        [*command, "-m", marker, str(FAULTS)],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, 5), result.stdout + result.stderr  # 5: none collected
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_no_fault_module_names_its_marker() -> None:
    assert all("mark.faults" not in test.read_text() for test in FAULTS.glob("test_*.py"))


def test_every_fault_test_is_marked_by_its_path_and_left_out_of_the_shared_run() -> None:
    assert len(collected("faults")) >= len(list(FAULTS.glob("test_*.py")))
    assert collected("e2e and not faults") == []
