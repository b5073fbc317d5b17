"""`muster run`: a configuration that makes no sense stops it before anything starts;
otherwise the operator runs with what the flags and MUSTER_* variables say, and its
exit code is the command's."""

from __future__ import annotations

import pytest

from muster.cli import main
from muster.cli import run as command
from muster.operator.config import OperatorConfig


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--max-rollbacks", "-1"], "--max-rollbacks must not be negative"),
        (["--kube-qps", "0"], "--kube-qps must be positive and --kube-burst at least 1"),
        (["--debounce", "soon"], "--debounce: could not convert string to float: 'soon'"),
    ],
)
def test_a_bad_configuration_is_told_and_exits_2(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *argv]) == command.EXIT_BAD_CONFIGURATION
    assert capsys.readouterr().err == f"muster run: {problem}\n"


def test_the_operator_runs_with_flags_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[OperatorConfig] = []

    class Operator:
        def __init__(self, config: OperatorConfig) -> None:
            started.append(config)

        async def run(self) -> int:
            return 7

    monkeypatch.setattr(command, "Operator", Operator)
    monkeypatch.setenv("MUSTER_MAX_ROLLBACKS", "5")
    monkeypatch.setenv("MUSTER_DEBOUNCE", "2.5")
    assert main(["run", "--max-rollbacks", "1", "--identity", "me"]) == 7
    (config,) = started
    assert (config.max_rollbacks, config.debounce, config.identity) == (1, 2.5, "me")
