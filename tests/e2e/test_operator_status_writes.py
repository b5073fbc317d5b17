"""A gang's PodGroup status is written once per real transition: waiting for its
pods (when the operator sees the group before them), admitted with its plan, and
every member started. Its pods' binding and start one by one are progress, written
with the next transition, not each on its own; a pod joining a gang that still waits
is written a moment later (the counts follow the pods while a gang forms), so the
waiting may be written more than once, never anything else.

The writes are counted from a watch of the PodGroup: every status write that
changes it is a new resourceVersion, and the operator writes nothing else of it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from tests.e2e.support.harness import POD_GROUPS, pods_of, wait_for_reason

pytestmark = pytest.mark.e2e

WORKERS = 3
CREATED = ("", False, False)
WAITING = ("WaitingForPods", False, False)
ADMITTED = ("Scheduled", True, False)
STARTED = ("Scheduled", True, True)
TRANSITIONS = ([CREATED, WAITING, ADMITTED, STARTED], [CREATED, ADMITTED, STARTED])


class PodGroupWatch:
    """`kubectl get --watch` of one PodGroup: every version of it, in order."""

    def __init__(self, kubectl: Kubectl, namespace: str, name: str) -> None:
        self.process = subprocess.Popen(
            kubectl.command(
                "get",
                POD_GROUPS,
                "-n",
                namespace,
                f"--field-selector=metadata.name={name}",
                "--watch",
                "--output-watch-events",
                "-o",
                "json",
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def versions(self) -> list[dict[str, Any]]:
        """Every version seen, once the watch is stopped."""
        self.process.terminate()
        text, _ = self.process.communicate(timeout=30)
        decoder = json.JSONDecoder()
        seen: dict[str, dict[str, Any]] = {}
        position = 0
        while (position := _skip_space(text, position)) < len(text):
            event, position = decoder.raw_decode(text, position)
            obj = event["object"]
            seen.setdefault(obj["metadata"]["resourceVersion"], obj)
        return list(seen.values())


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def summary(pod_group: dict[str, Any]) -> tuple[str, bool, bool]:
    """What a write may tell: the gang's reason, whether it has a plan, whether every
    member started."""
    status = pod_group.get("status") or {}
    reason = next(
        (
            c.get("reason", "")
            for c in status.get("conditions") or []
            if c["type"] == "PodGroupScheduled"
        ),
        "",
    )
    pods = status.get("pods") or {}
    started = sum(pods.get(phase, 0) for phase in ("running", "succeeded", "failed"))
    return reason, bool(status.get("plan")), started == WORKERS


@pytest.fixture
def watched(kubectl: Kubectl, namespace: str) -> Iterator[PodGroupWatch]:
    watch = PodGroupWatch(kubectl, namespace, "steady")
    yield watch
    if watch.process.poll() is None:
        watch.process.kill()


def test_a_gang_that_starts_as_it_should_is_written_once_per_transition(
    operator: OperatorProcess,
    kubectl: Kubectl,
    namespace: str,
    pool: NodePool,
    watched: PodGroupWatch,
) -> None:
    pool.add(gpus=WORKERS)
    kubectl.apply(gang_job("steady", pool, workers=WORKERS), namespace)
    wait_for_reason(kubectl, namespace, "steady", "Scheduled")
    wait_until(
        "every member to run",
        lambda: (
            [pod["status"].get("phase") for pod in pods_of(kubectl, namespace, "steady")]
            == ["Running"] * WORKERS
        ),
    )
    wait_until(
        "the PodGroup to say so",
        lambda: summary(kubectl.json("get", POD_GROUPS, "steady", "-n", namespace))[2],
    )
    told = [summary(version) for version in watched.versions()]
    told = [step for at, step in enumerate(told) if not (at and step == told[at - 1] == WAITING)]
    # From its creation (unless the watch began later): each version a transition.
    assert any(told == whole[-len(told) :] for whole in TRANSITIONS), told
