"""What the soak reads of the nodes while they are silent."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from hack.soak.faults import _readiness


def node(name: str, ready: str | None) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {"metadata": {"name": name}, "status": {"conditions": conditions}}


class Answers:
    """Stands for kubectl: answers `get nodes` with the nodes given, or fails."""

    def __init__(self, *nodes: dict[str, Any], returncode: int = 0) -> None:
        self.out = json.dumps({"items": list(nodes)})
        self.returncode = returncode

    def __call__(self, *args: str, **_: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, self.returncode, self.out, "")


def test_a_node_is_ready_only_when_its_ready_condition_is_true() -> None:
    kubectl = Answers(node("a", "True"), node("b", "Unknown"), node("c", "False"), node("d", None))
    assert _readiness(kubectl) == {"a": True, "b": False, "c": False, "d": False}  # type: ignore[arg-type]


def test_an_api_server_that_does_not_answer_says_nothing_of_the_nodes() -> None:
    assert _readiness(Answers(node("a", "False"), returncode=1)) == {}  # type: ignore[arg-type]
