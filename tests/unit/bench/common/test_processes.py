from __future__ import annotations

from bench.common.processes import Usage, spent


def test_cpu_is_what_the_run_spent_and_memory_the_peak_so_far() -> None:
    before = {"kueue": Usage(cpu_seconds=10.0, peak_rss_bytes=2**20, rss_bytes=2**20)}
    after = {"kueue": Usage(cpu_seconds=12.5, peak_rss_bytes=3 * 2**20, rss_bytes=2**20)}
    assert spent(before, after) == {"kueue": {"cpu_seconds": 2.5, "peak_rss_mib": 3.0}}
