from __future__ import annotations

import pytest
from bench.e2e.arguments import KUEUE_RESULTS, RESULTS, parse_args


def test_the_default_is_the_issue_workload_in_every_mode() -> None:
    args = parse_args([])
    assert (args.nodes, args.gpus_per_node, args.jobs) == (500, 8, 200)
    assert args.modes == ["plain", "floor", "native", "kueue", "muster"]
    assert args.output == RESULTS


def test_a_preset_fills_only_what_the_command_line_leaves_unset() -> None:
    args = parse_args(["--scale", "--settle", "5"])
    assert (args.nodes, args.jobs) == (5000, 6250)
    assert args.modes == ["plain", "floor", "native", "kueue", "muster"]
    assert args.settle == 5.0
    assert args.output.name == "e2e-scale.json"


def test_unknown_modes_are_refused() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--modes", "plain,slurm"])


def test_the_kueue_modes_have_a_results_file_of_their_own() -> None:
    assert parse_args(["--modes", "kueue,kueue-muster"]).output == KUEUE_RESULTS
    assert parse_args(["--modes", "muster,kueue"]).output == RESULTS
