"""`muster replay TRACE`: 0 when every cycle decides the same, 1 and where when not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from muster.cli import main
from tests.unit.operator.execution.test_trace import record_a_preemption


async def test_a_faithful_trace_replays_to_the_same_decisions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trace.jsonl"
    await record_a_preemption(path)

    assert main(["replay", str(path)]) == 0
    assert "4 cycle(s) replayed: every decision the same" in capsys.readouterr().out


async def test_a_decision_the_engine_does_not_make_again_is_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trace.jsonl"
    await record_a_preemption(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    first_cycle = next(line for line in lines if line["line"] == "cycle")
    first_cycle["decisions"]["admissions"] = []
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    assert main(["replay", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("cycle 1 ")
    assert "admissions:" in out


def test_an_unreadable_trace_is_said_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().out
