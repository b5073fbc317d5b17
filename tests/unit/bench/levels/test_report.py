from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common.sections import begin_marker, end_marker
from bench.levels.report import NAME, write


def mode(in_rack: int, free_racks: int, p99: float = 2.5) -> dict[str, Any]:
    placement = {
        "gangs": 16,
        "one_rack": {"could": 12, "placed": in_rack, "share": in_rack / 12},
        "one_block": {"could": 16, "placed": 16, "share": 1.0},
        "at_narrowest_feasible": {"placed": in_rack + 4, "share": (in_rack + 4) / 16},
        "not_all_bound": 0,
        "free_gpus": 168,
        "free_gpus_in_free_racks": 32 * free_racks,
        "free_racks": free_racks,
        "racks": 16,
    }
    return {
        "placement": placement,
        "time_to_all_bound_s": {"p50": 2.1, "p99": p99},
        "ended_because": "all Jobs running",
    }


def test_the_section_sums_the_bursts_of_each_system(tmp_path: Path) -> None:
    docs = tmp_path / "performance.md"
    docs.write_text(f"before\n{begin_marker(NAME)}\nold\n{end_marker(NAME)}\nafter\n")
    results = {
        "date": "2026-12-03T00:00:00Z",
        "machine": {"cpus": 2, "cpu_model": "x"},
        "parameters": {
            "shape": {
                "zones": 2,
                "blocks_per_zone": 2,
                "racks_per_block": 4,
                "nodes_per_rack": 4,
                "gpus_per_node": 8,
            },
            "jobs": 16,
            "pods": 84,
            "demand_ratio": 0.672,
            "preferred": "example.com/rack",
        },
        "bursts": [
            {"seed": 1, "modes": {"muster": mode(12, 5), "kueue": mode(9, 2, p99=4.0)}},
            {"seed": 2, "modes": {"muster": mode(11, 4), "kueue": {"not_measured": "boom"}}},
        ],
    }
    write(results, docs)
    text = docs.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert "| | Muster | Kueue alone (TAS) |" in text
    assert "| gangs in one rack, of those that fit one | 23 of 24 (96%) | 9 of 12 (75%) |" in text
    assert "| wholly free racks, per burst | 5 · 4 (sum 9) | 2 (sum 2) |" in text
    assert "| creation → all bound, p99 (s, worst burst) | 2.5 | 4.0 |" in text
    assert "- seed 2, Kueue alone (TAS): boom" in text


def waves_mode(at_narrowest: int, free_racks: int, waiting: int) -> dict[str, Any]:
    figures = mode(at_narrowest - 4, free_racks)["placement"] | {"gangs": 32}
    figures |= {
        "waiting_at_end": waiting,
        "at_second_wave": {"free_racks": 9, "free_gpus_in_free_racks": 288},
        "second_wave_time_to_all_bound_s": {"p50": 1.9, "p99": 7.5},
        "second_wave_ended_because": "every gang of the second wave bound",
    }
    return {"waves": figures, "time_to_all_bound_s": {"p50": 2.0, "p99": 3.0}}


def test_the_waves_get_a_table_of_their_own_after_the_bursts(tmp_path: Path) -> None:
    docs = tmp_path / "performance.md"
    docs.write_text(f"{begin_marker(NAME)}\n{end_marker(NAME)}\n")
    shape = {
        "zones": 2,
        "blocks_per_zone": 2,
        "racks_per_block": 4,
        "nodes_per_rack": 4,
        "gpus_per_node": 8,
    }
    waves = {
        "date": "2026-12-03T00:00:00Z",
        "machine": {"cpus": 2, "cpu_model": "x"},
        "parameters": {
            "shape": shape,
            "first_wave": {"jobs": 16, "gpus": 344, "short": 8},
            "short_hold": "40s",
            "second_wave": {"jobs": 16, "gpus": 344},
            "second_wave_settle_s": 30.0,
        },
        "runs": [
            {
                "seed": 1,
                "demand_ratio_after_churn": 0.977,
                "modes": {"muster": waves_mode(30, 1, 0), "kueue": waves_mode(28, 0, 2)},
            }
        ],
    }
    write({"waves": waves}, docs)
    text = docs.read_text()
    assert "98% of the GPUs asked for at once, per run" in text
    assert (
        "| gangs at the narrowest level with room then | 30 of 32 (94%) | 28 of 32 (88%) |" in text
    )
    assert "| gangs not running at the end | 0 | 2 |" in text
    assert "| wholly free racks at the second wave, per run | 9 (sum 9) | 9 (sum 9) |" in text
    assert "| second wave: creation → all bound, p99 (s, worst) | 7.5 | 7.5 |" in text
