"""Every document and every problem carries where it came from."""

from __future__ import annotations

from muster.simulation.documents import Document, InvalidInputError, Problem


def test_a_document_is_named_by_its_file_and_its_place_in_it() -> None:
    assert Document("cluster.yaml", 3, {}).origin == "cluster.yaml:3"


def test_invalid_input_carries_and_says_every_problem() -> None:
    problems = [Problem("a.yaml:1", "kind is missing"), Problem("b.yaml:2", "not a mapping")]
    error = InvalidInputError(problems)
    assert error.problems == tuple(problems)
    assert str(error) == "a.yaml:1: kind is missing\nb.yaml:2: not a mapping"
