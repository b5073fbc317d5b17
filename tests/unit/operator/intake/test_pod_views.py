"""Two watches of the same pods merged into one sink (the real merge is tested e2e in
test_operator_pod_views.py); these pin the orderings a live cluster rarely shows."""

from __future__ import annotations

from muster.api.wire import JsonObject
from muster.operator.intake.pod_views import PodViews


def pod(version: int, phase: str = "Running") -> JsonObject:
    return {
        "metadata": {"namespace": "ns", "name": "p", "resourceVersion": str(version)},
        "status": {"phase": phase},
    }


class RecordingSink:
    def __init__(self) -> None:
        self.held: dict[str, JsonObject] = {}

    def upsert(self, obj: JsonObject) -> bool:
        self.held[obj["metadata"]["name"]] = obj
        return True

    def remove(self, obj: JsonObject) -> bool:
        self.held.pop(obj["metadata"]["name"], None)
        return True


def test_a_pod_that_leaves_one_view_stays_while_the_other_has_it() -> None:
    sink = RecordingSink()
    views = PodViews(sink)
    capacity, members = views.view(), views.view()
    capacity.upsert(pod(5))
    members.upsert(pod(5))
    assert capacity.remove(pod(6, "Succeeded")) is False
    members.upsert(pod(6, "Succeeded"))
    assert sink.held["p"]["status"]["phase"] == "Succeeded"
    assert members.remove(pod(7)) is True
    assert sink.held == {}


def test_an_older_version_from_the_slower_watch_does_not_replace_a_newer_one() -> None:
    sink = RecordingSink()
    views = PodViews(sink)
    capacity, members = views.view(), views.view()
    members.upsert(pod(9, "Succeeded"))
    assert capacity.upsert(pod(8)) is False
    assert sink.held["p"]["metadata"]["resourceVersion"] == "9"
    members.remove(pod(9))  # the capacity view still has it (at its older version)
    assert "p" in sink.held


def test_a_pod_in_one_view_only_goes_when_that_view_drops_it() -> None:
    sink = RecordingSink()
    capacity = PodViews(sink).view()
    capacity.upsert(pod(3))
    assert capacity.remove(pod(4, "Succeeded")) is True
    assert sink.held == {}


def test_versions_that_are_not_numbers_are_taken_as_they_come() -> None:
    sink = RecordingSink()
    views = PodViews(sink)
    capacity, members = views.view(), views.view()
    members.upsert({"metadata": {"namespace": "ns", "name": "p", "resourceVersion": "x"}})
    assert capacity.upsert(pod(1)) is True


def test_the_answer_to_a_release_is_taken_in_and_an_older_watch_copy_does_not_undo_it() -> None:
    sink = RecordingSink()
    views = PodViews(sink)
    capacity, members = views.view(), views.view()
    capacity.upsert(pod(3))
    members.upsert(pod(3))
    assert views.answer(pod(5)) is True
    assert members.upsert(pod(4)) is False  # the watch, still catching up
    assert sink.held["p"]["metadata"]["resourceVersion"] == "5"


def test_the_answer_for_a_pod_deleted_meanwhile_does_not_bring_it_back() -> None:
    sink = RecordingSink()
    views = PodViews(sink)
    capacity = views.view()
    capacity.upsert(pod(3))
    capacity.remove(pod(4))
    assert views.answer(pod(4)) is False
    assert sink.held == {}


class CountingSink(RecordingSink):
    def __init__(self) -> None:
        super().__init__()
        self.taken = 0

    def upsert(self, obj: JsonObject) -> bool:
        self.taken += 1
        return super().upsert(obj)


def test_a_version_already_taken_in_is_not_handed_on_again() -> None:
    sink = CountingSink()
    views = PodViews(sink)
    capacity, members = views.view(), views.view()
    assert capacity.upsert(pod(5)) is True
    assert members.upsert(pod(5)) is False  # the same pod, through the other watch
    assert views.answer(pod(6)) is True
    assert capacity.upsert(pod(6)) is False
    assert members.upsert(pod(6)) is False
    assert sink.taken == 2
    assert capacity.remove(pod(7, "Succeeded")) is False  # the members' view still has it
