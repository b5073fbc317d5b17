"""Problems name the field in Kubernetes notation, and sort by it."""

from __future__ import annotations

import pytest

from muster.api.problems import Problem, join_path


@pytest.mark.parametrize(
    ("parent", "child", "path"),
    [
        ("spec", "minCount", "spec.minCount"),
        ("spec.podGroupTemplates", "[1]", "spec.podGroupTemplates[1]"),
        (
            "metadata.annotations",
            "[scheduling.muster.dev/min-count]",
            "metadata.annotations[scheduling.muster.dev/min-count]",
        ),
        ("", "spec", "spec"),
        ("spec", "", "spec"),
    ],
)
def test_paths_join_with_a_dot_except_for_indexes(parent: str, child: str, path: str) -> None:
    assert join_path(parent, child) == path


def test_a_problem_reads_path_colon_message_or_just_the_message() -> None:
    assert str(Problem("spec.gang.minCount", "must be at least 1")) == (
        "spec.gang.minCount: must be at least 1"
    )
    assert str(Problem("", "not a mapping")) == "not a mapping"


def test_problems_sort_by_path_then_message() -> None:
    problems = [Problem("spec.b", "x"), Problem("spec.a", "z"), Problem("spec.a", "y")]
    assert sorted(problems) == [
        Problem("spec.a", "y"),
        Problem("spec.a", "z"),
        Problem("spec.b", "x"),
    ]
