"""The simulated cluster of `examples/cluster` says what its README shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from muster.cli import main

EXAMPLE = Path(__file__).parents[2] / "examples" / "cluster"
SHOWN_OUTPUT = re.compile(r"<!-- simulate-output:.*?-->\n```text\n(.*?)```", re.DOTALL)
SHOWN_TIMELINE = re.compile(r"<!-- timeline-output:.*?-->\n```text\n(.*?)```", re.DOTALL)
AT = ["--at", "2026-03-01T09:08:00Z"]  # as the README runs it: when the newest Job was made


def test_the_readme_shows_what_simulate_prints(capsys: pytest.CaptureFixture[str]) -> None:
    shown = SHOWN_OUTPUT.search((EXAMPLE / "README.md").read_text())
    assert shown is not None, "the README lost its simulate-output block"
    code = main(["simulate", *(str(path) for path in sorted(EXAMPLE.glob("*.yaml"))), *AT])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    assert captured.out == shown.group(1)


def test_the_readme_shows_the_timeline(capsys: pytest.CaptureFixture[str]) -> None:
    shown = SHOWN_TIMELINE.search((EXAMPLE / "README.md").read_text())
    assert shown is not None, "the README lost its timeline-output block"
    files = [str(path) for path in sorted(EXAMPLE.glob("*.yaml"))]
    code = main(["simulate", *files, "--timeline", *AT])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    assert captured.out == shown.group(1)
