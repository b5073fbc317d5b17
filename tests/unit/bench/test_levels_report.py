from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.levels_report import NAME, write
from bench.sections import begin_marker, end_marker


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
