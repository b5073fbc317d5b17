from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common.sections import begin_marker, end_marker
from bench.memory.report import NAME, write


def variant(pods: float, pod_bytes: int) -> dict[str, Any]:
    parts = {"imports": 113.5, "nodes": 6.7, "workloads": 5.4, "pod_groups": 25.0, "pods": pods}
    return {"rss_mib": parts, "total_mib": round(sum(parts.values()), 1), "pod_bytes": pod_bytes}


def test_the_section_has_a_column_per_variant_and_their_ratio(tmp_path: Path) -> None:
    docs = tmp_path / "performance.md"
    docs.write_text(f"before\n{begin_marker(NAME)}\nold\n{end_marker(NAME)}\nafter\n")
    results = {
        "date": "2026-12-01T00:00:00Z",
        "machine": {"cpus": 2, "cpu_model": "x", "python": "3.11.7"},
        "parameters": {
            "nodes": 5000,
            "gangs": 6250,
            "gang_size": 8,
            "pods": 50000,
            "connections": 100,
        },
        "variants": {"c68bc11": variant(160.0, 3200), "5420597": variant(80.0, 1600)},
    }
    write(results, docs)
    text = docs.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert "| RSS (MiB) | c68bc11 | 5420597 | ratio |" in text
    assert "| + 50,000 gated member pods, through both pod views | 160.0 | 80.0 | 0.50x |" in text
    assert "| a pod (bytes) | 3,200 | 1,600 | 0.50x |" in text
