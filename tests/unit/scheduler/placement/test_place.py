"""One way in to placing a gang, and the choice of how made in one place."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from muster.scheduler.placement import place as place_module
from muster.scheduler.placement.fit import NodeOrder, Shape, place_gang
from muster.scheduler.placement.place import place
from muster.scheduler.placement.request import FitRequest
from muster.scheduler.state.predicates import PASSES, StaticFilter

# columns: pods, cpu (millicores)
FREE = np.array([[10, 4000], [10, 2000], [10, 8000]], dtype=np.int64)
EVERYWHERE = np.ones(3, dtype=np.bool_)
ORDER = NodeOrder(name_rank=np.arange(3, dtype=np.int32), scarce_columns=())
ANYWHERE = StaticFilter(EVERYWHERE, np.full(3, PASSES, dtype=np.int32), ())


def pods(count: int, cpu: int = 1000) -> list[Shape]:
    return [Shape(np.array([1, cpu]), ANYWHERE, tuple(f"p{i}" for i in range(count)))]


def test_without_rules_or_slices_it_is_best_fit() -> None:
    request = FitRequest(FREE, pods(5), EVERYWHERE, ORDER, FREE.max(axis=0), needed=5)
    expected = place_gang(
        FREE, pods(5), within=EVERYWHERE, order=ORDER, largest=FREE.max(axis=0), needed=5
    )
    assert place(request) == expected


def test_a_limit_places_no_more_than_it() -> None:
    request = FitRequest(FREE, pods(5), EVERYWHERE, ORDER, FREE.max(axis=0), needed=0, limit=2)
    assert len(place(request)) == 2
    assert request.cap == 2


def test_the_request_leaves_free_capacity_as_it_was() -> None:
    free = FREE.copy()
    place(FitRequest(free, pods(5), EVERYWHERE, ORDER, free.max(axis=0), needed=5))
    assert (free == FREE).all()


def test_the_choice_between_slices_pod_by_pod_and_best_fit_is_made_in_place_only() -> None:
    """Nothing in the engine calls the slice or pod-by-pod placements but `place`
    (and the slices' own retries inside their module)."""
    scheduler = Path(place_module.__file__).parents[1]
    for path in scheduler.rglob("*.py"):
        if path.name in ("place.py", "slices.py", "retries.py"):
            continue
        called = {
            node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call)
        }
        assert not called & {"place_slices", "pod_by_pod", "place_greedily"} - (
            {"place_greedily"} if path.name == "fit.py" else set()
        ), path
