"""The pictures are SVG with words: a label for the whole, a title and text per bar."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.operator.dashboard.board import Bar
from muster.operator.dashboard.domains import Domain, Fill
from muster.operator.dashboard.pictures import SHOWN_BARS, domain_bars, timeline

NOW = 1_798_761_600.0
ZONE = "topology.kubernetes.io/zone"
DOMAINS = (
    Domain(ZONE, "a", 2, (Fill("nvidia.com/gpu", 4, 2, 8),)),
    Domain(ZONE, "b<&>", 2, (Fill("nvidia.com/gpu", 0, 0, 8),)),
)


def test_domain_bars_say_in_words_what_they_draw_and_escape_names() -> None:
    svg = domain_bars(DOMAINS, "nvidia.com/gpu", ZONE)
    assert svg.startswith('<svg class="domains" role="img" aria-label="nvidia.com/gpu per ')
    assert "4 occupied, 2 reserved, 2 free of 8 nvidia.com/gpu" in svg
    assert "b&lt;&amp;&gt; (2 nodes)" in svg and "b<&>" not in svg
    assert svg.count("<title>") == 2
    assert 'fill="url(#hatch)"' in svg  # reserved is hatched, not only another colour


def test_no_domain_of_the_level_draws_nothing() -> None:
    assert domain_bars(DOMAINS, "nvidia.com/gpu", "rack") == ""
    assert domain_bars(DOMAINS, "cpu", ZONE) == ""


def test_the_timeline_draws_running_and_starting_gangs_up_to_its_limit() -> None:
    bars = [
        Bar(GroupKey("ml", "run"), NOW, NOW + 3600, running=True),
        Bar(GroupKey("ml", "next"), NOW + 3600, None, running=False),
    ]
    svg = timeline(bars, NOW, 86400)
    assert "1 running gangs ending, 1 waiting gangs starting" in svg
    assert "ml/run: running until 01:00 UTC" in svg
    assert "ml/next: starts 01:00 UTC, ends an unknown time" in svg
    many = [Bar(GroupKey("ml", f"g{i}"), NOW, NOW + 60, running=True) for i in range(99)]
    assert timeline(many, NOW, 86400).count("<title>") == SHOWN_BARS
    assert timeline([], NOW, 86400) == ""


def test_long_names_are_cut_in_the_label_and_whole_in_the_title() -> None:
    name = GroupKey("a-namespace-with-a-long-name", "and-a-long-gang")
    svg = timeline([Bar(name, NOW, NOW + 600, running=True)], NOW, 86400)
    assert f"<title>{name}: running until" in svg
    assert ">…-with-a-long-name/and-a-long-gang</text>" in svg
    assert ">00:05:00</text>" in svg  # a forecast shorter than an hour, to the second
