from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.levels_report import NAME, write
from bench.sections import begin_marker, end_marker


def mode(in_rack: int, free_racks: int) -> dict[str, Any]:
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
        "time_to_all_bound_s": {"p50": 2.1, "p99": 2.5},
        "ended_because": "all Jobs running",
    }


def test_the_section_has_a_column_per_system_measured(tmp_path: Path) -> None:
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
        "modes": {"muster": mode(12, 5), "kueue": mode(9, 2), "other": {"not_measured": "boom"}},
    }
    write(results, docs)
    text = docs.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert "| | Muster | Kueue alone (TAS) |" in text
    assert "| gangs in one rack, of those that fit one | 12 of 12 (100%) | 9 of 12 (75%) |" in text
    assert "| wholly free racks | 5 of 16 | 2 of 16 |" in text
    assert "- other: not measured (boom)" in text
