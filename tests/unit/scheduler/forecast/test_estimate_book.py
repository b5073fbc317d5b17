"""Which estimates are written: once, again only when they move or the wait shrinks."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.api.times import rfc3339
from muster.scheduler import ClusterState, EngineConfig
from muster.scheduler.forecast.estimate_book import EstimateBook, describe, topology_keys
from muster.scheduler.forecast.forecast import Outcome, forecast
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod
from tests.unit.scheduler.forecast.test_forecast import T0, in_backoff, running

B = GroupKey("default", "b")


def _state(runtime: str, *extra: Obj) -> ClusterState:
    return cluster(
        *extra,
        node("gpu", gpu="4"),
        *running("a", 4, ["gpu"], runtime=runtime, gpu="1"),
        *gang("b", 4, gpu="1"),
    )


def _book_of(state: ClusterState, now: float, book: EstimateBook | None = None) -> EstimateBook:
    book = book or EstimateBook()
    ahead = forecast(state, now=now, config=EngineConfig())
    book.take(ahead, describe(ahead, topology_keys(state)))
    return book


def test_a_waiting_gang_gets_its_start_once_and_again_only_when_it_moves() -> None:
    book = _book_of(_state("1h"), T0)
    first = book.updates(T0)
    assert first[B].fields == {
        "estimatedStartTime": "2026-01-01T01:00:00Z",
        "estimate": {
            "start": "~60m",
            "basis": "declared",
            "waitingFor": "needs 4 nvidia.com/gpu; node gpu frees them at ~01:00 UTC "
            "when default/a ends (expected runtime 60m, declared)",
        },
    }
    assert first[B].moved is None
    assert book.updates(T0 + 60) == {}  # nothing changed, nothing written
    later = book.updates(T0 + 20 * 60)  # the wait shown shrank by a third
    assert later[B].fields["estimate"]["start"] == "~40m"
    assert later[B].moved is None
    _book_of(_state("3h", node("cpu"), pod("web", node_name="cpu")), T0 + 21 * 60, book)
    moved = book.updates(T0 + 21 * 60)
    assert moved[B].fields["estimatedStartTime"] == "2026-01-01T03:00:00Z"
    message = moved[B].moved
    assert message is not None
    assert message.startswith("expected start moved from 01:00 UTC to 03:00 UTC")


def test_a_gang_no_longer_waiting_is_forgotten() -> None:
    book = _book_of(_state("1h"), T0)
    book.updates(T0)
    book.take(forecast(cluster(node("gpu", gpu="4")), now=T0, config=EngineConfig()), {})
    assert book.updates(T0) == {}
    assert book.told == {}


def test_a_gang_that_waits_out_its_backoff_says_so() -> None:
    state = cluster(
        node("gpu", gpu="4"), *in_backoff(gang("b", 4, gpu="1"), "2026-01-01T00:10:00Z")
    )
    fields = _book_of(state, T0).updates(T0)[B].fields
    assert fields["estimatedStartTime"] == "2026-01-01T00:10:00Z"
    assert fields["estimate"]["basis"] == "backoff"
    assert fields["estimate"]["waitingFor"] == "in backoff until ~00:10 UTC; it fits then"


def test_a_gang_that_never_fits_is_written_never_once_however_long_it_waits() -> None:
    state = cluster(
        node("gpu", gpu="4"), pod("web", gpu="1", node_name="gpu"), *gang("b", 8, gpu="1")
    )
    starving = EngineConfig(starvation_seconds=60)
    book = EstimateBook()
    ahead = forecast(state, now=T0, config=starving)
    book.take(ahead, describe(ahead, topology_keys(state)))
    first = book.updates(T0)
    assert first[B].fields == {
        "estimate": {
            "start": "never",
            "basis": "unknown",
            "waitingFor": "it does not fit even on an empty cluster: 1/1 nodes can host a pod "
            "of the gang; the gang needs 8 pods, at most 4 fit at once; short in total: "
            "nvidia.com/gpu (needs 8, 4 allocatable)",
        },
    }
    later = forecast(state, now=T0 + 3600, config=starving)
    book.take(later, describe(later, topology_keys(state)))
    assert book.updates(T0 + 3600) == {}


def test_a_forecast_is_due_only_on_a_change_and_never_within_the_interval() -> None:
    book, state = EstimateBook(), _state("1h")
    assert book.forecast_due(state, now=T0, interval=30.0)
    assert not book.forecast_due(state, now=T0 + 60, interval=30.0)  # nothing changed
    state.apply("Pod", pod("web", cpu="1"))
    assert not book.forecast_due(state, now=T0 + 10, interval=30.0)  # too soon
    assert book.forecast_due(state, now=T0 + 30, interval=30.0)


def test_a_forecast_is_due_again_when_a_gangs_pods_have_stopped_arriving() -> None:
    """Nothing in the cluster changes when a gang's arrival grace ends, yet its verdict
    does (it never fits): the forecast that said so little is due again then."""
    config = EngineConfig(arrival_grace=10.0)
    members = gang("huge", 2, gpu="8")
    for member in members[1:]:
        member["metadata"]["creationTimestamp"] = rfc3339(T0)
    state = cluster(node("gpu", gpu="4"), *members)
    book = EstimateBook()
    assert book.forecast_due(state, now=T0, interval=5.0)
    early = forecast(state, now=T0, config=config)
    book.take(early, describe(early, topology_keys(state)))
    huge = GroupKey("default", "huge")
    assert early.estimates[huge].outcome != Outcome.NEVER
    assert early.revisit_at == T0 + 10.0
    assert not book.forecast_due(state, now=T0 + 9, interval=5.0)  # nothing changed yet
    assert book.forecast_due(state, now=T0 + 10, interval=5.0)
    assert forecast(state, now=T0 + 10, config=config).estimates[huge].outcome == Outcome.NEVER


def test_a_gang_that_fits_now_or_waits_for_its_pods_is_not_written() -> None:
    """Its admission at the next cycle, or its condition, says it."""
    fits = cluster(node("gpu", gpu="4"), *gang("b", 4, gpu="1"))
    assert _book_of(fits, T0).updates(T0) == {}
    short = gang("b", 2, min_count=4, gpu="1")
    assert _book_of(cluster(node("gpu", gpu="4"), *short), T0).updates(T0) == {}
