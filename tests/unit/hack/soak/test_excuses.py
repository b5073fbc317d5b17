from hack.soak.excuses import Excuse, Span, counted, judge_partials, replacement_waits

GRACE = 10.0


def span(start: float, end: float, gang: str = "g") -> Span:
    return Span(gang, start, end, "partial gang g")


def test_a_span_counts_only_the_time_no_excuse_for_its_gang_covers() -> None:
    excuses = [
        Excuse(10.0, 20.0, "proxy-cut"),
        Excuse(15.0, 25.0, "etcd-restart"),  # overlaps the first: counted once
        Excuse(30.0, 32.0, "replacement", gang="g"),
        Excuse(0.0, 100.0, "replacement", gang="other"),  # another gang's
    ]
    assert counted(span(5.0, 40.0), excuses) == 5.0 + 5.0 + 8.0
    assert counted(span(12.0, 18.0), excuses) == 0.0
    assert counted(span(5.0, 40.0, gang="h"), excuses) == 35.0 - 15.0


def test_a_partial_gang_longer_than_the_grace_outside_its_excuses_is_a_violation() -> None:
    cut = Excuse(100.0, 118.0, "proxy-cut: no replica could write until one led again")
    spans = [span(99.0, 121.0, "mended"), span(99.0, 131.0, "left")]
    violations, excused = judge_partials(spans, [cut], GRACE)
    assert [(v.invariant, v.subject, v.at) for v in violations] == [("partial-gang", "left", 99.0)]
    assert "counted 14.0s of 32.0s" in violations[0].detail
    assert "proxy-cut" in violations[0].detail
    assert [(e.span.gang, e.counted) for e in excused] == [("mended", 4.0)]
    assert excused[0].reasons == (
        "proxy-cut: no replica could write until one led again (+100.0s to +118.0s)",
    )


def test_with_no_excuse_the_grace_is_the_observers_own() -> None:
    violations, excused = judge_partials([span(0.0, 10.5), span(20.0, 29.0)], [], GRACE)
    assert [v.at for v in violations] == [0.0]
    assert [e.span.start for e in excused] == [20.0]
    assert violations[0].detail == "partial gang g"


def test_a_deleted_member_excuses_its_gang_until_the_next_member_appears() -> None:
    arrivals = {"g": [1.0, 2.0, 30.5, 31.0], "h": [3.0]}
    waits = replacement_waits([(20.0, "g"), (40.0, "g"), (50.0, "h")], arrivals, 600.0)
    assert waits == [
        Excuse(20.0, 30.5, "its Job had not replaced a deleted member", "g"),
        Excuse(40.0, 600.0, "its Job had not replaced a deleted member", "g"),
        Excuse(50.0, 600.0, "its Job had not replaced a deleted member", "h"),
    ]
