"""A trace of the engine's life in the operator: its inputs in order, and its decisions.

The operator can record (`muster run --record-trace FILE`) every change that reaches
the engine's state — each object an informer delivers, each status the API server
answers a write with — and, after every cycle, the clock it decided at and what it
decided. Replaying the trace (`muster.simulation.replay`) feeds the same changes
through the same door (`ClusterState.apply` and `delete`) into a fresh `ClusterState`,
runs `schedule` at the recorded clock and compares: the proof that the operator
decides nothing the engine does not.

A trace is JSON lines, one of:

- `{"line": "start", "config": {...}}`: an operator started; a fresh state, and the
  engine configuration of every cycle after it;
- `{"line": "apply", "kind": K, "object": {...}}`: an object of kind K given to the state;
- `{"line": "delete", "kind": K, "namespace": N, "name": M}`: one taken out of it;
- `{"line": "release", "pod": "NS/NAME", "failure": {...} | null}`: what the API server
  answered to a pod's release (`ClusterState.observe_release`), null when it released it;
- `{"line": "judged", "cases": [{"expression": E, "kind": {...}, "judgement": J}]}`:
  DRA selector cases judged outside the engine (`ClusterState.judge_selectors`);
- `{"line": "cycle", "now": T, "decisions": {...}}`: a cycle decided at T (`traced_decisions`).

The recorder adds `"at"` (seconds since the epoch) to each line; nothing reads it but
people.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from muster.api.keys import PodKey
from muster.api.wire import JsonObject
from muster.scheduler.config import EngineConfig
from muster.scheduler.decisions.plan import Action, Evict, Release, Ungate, WriteStatus
from muster.scheduler.decisions.results import CycleResult
from muster.scheduler.devices.selectors import Case, DeviceKind, Judgement
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.state.kinds import scoped
from muster.scheduler.state.state import ClusterState

START, APPLY, DELETE, RELEASE, JUDGED, CYCLE = (
    "start",
    "apply",
    "delete",
    "release",
    "judged",
    "cycle",
)


def start_line(config: EngineConfig) -> JsonObject:
    return {"line": START, "config": asdict(config)}


def apply_line(kind: str, obj: Mapping[str, Any]) -> JsonObject:
    return {"line": APPLY, "kind": kind, "object": obj}


def delete_line(kind: str, namespace: str, name: str) -> JsonObject:
    return {"line": DELETE, "kind": kind, "namespace": scoped(kind, namespace), "name": name}


def release_line(pod: PodKey, failure: ReleaseFailure | None) -> JsonObject:
    return {
        "line": RELEASE,
        "namespace": pod.namespace,
        "name": pod.name,
        "failure": None if failure is None else asdict(failure),
    }


def observe_release(state: ClusterState, line: Mapping[str, Any]) -> None:
    """Give the state a release outcome read back from its trace line."""
    failure = line["failure"]
    state.observe_release(
        PodKey(line["namespace"], line["name"]),
        None if failure is None else ReleaseFailure(**failure),
    )


def judged_line(found: Mapping[Case, Judgement]) -> JsonObject:
    return {
        "line": JUDGED,
        "cases": [
            {
                "expression": expression,
                "kind": {
                    "driver": kind.driver,
                    "attributes": [list(item) for item in kind.attributes],
                    "capacity": [list(item) for item in kind.capacity],
                },
                "judgement": str(judgement),
            }
            for (expression, kind), judgement in found.items()
        ],
    }


def observe_judged(state: ClusterState, line: Mapping[str, Any]) -> None:
    """Give the state the selector judgements read back from their trace line."""
    found: dict[Case, Judgement] = {}
    for entry in line["cases"]:
        kind = entry["kind"]
        device = DeviceKind(
            kind["driver"],
            tuple((name, value) for name, value in kind["attributes"]),
            tuple((name, amount) for name, amount in kind["capacity"]),
        )
        found[(entry["expression"], device)] = Judgement(entry["judgement"])
    state.judge_selectors(found)


def cycle_line(now: float, result: CycleResult) -> JsonObject:
    return {"line": CYCLE, "now": now, "decisions": traced_decisions(result)}


def traced_decisions(result: CycleResult) -> JsonObject:
    """Everything a cycle decided, as plain JSON: admissions (placements, domain,
    victims), growths, verdicts (reason and message) and the plan (its steps and
    actions, each group's desired status, when to wake, the notices to give)."""
    plan = result.plan
    return {
        "admissions": [
            {
                "group": str(admission.group),
                "placements": dict(sorted(admission.placements.items())),
                "domain": list(admission.domain) if admission.domain else None,
                "victims": [str(victim.pod) for victim in admission.victims],
            }
            for admission in result.admissions
        ],
        "growths": [
            {"group": str(growth.group), "placements": dict(sorted(growth.placements.items()))}
            for growth in result.growths
        ],
        "verdicts": {
            str(key): {"reason": str(verdict.reason), "message": verdict.message}
            for key, verdict in sorted(result.verdicts.items())
        },
        "steps": [
            {
                "group": str(step.group),
                "kind": str(step.kind),
                "actions": [_action(action) for action in step.actions],
            }
            for step in plan.steps
        ],
        "statuses": {str(key): status for key, status in sorted(plan.statuses.items())},
        "versions": {str(key): version for key, version in sorted(plan.versions.items())},
        "wakeAt": plan.wake_at,
        "notices": [
            {"object": f"{n.kind} {n.namespace}/{n.name}", "reason": n.reason, "message": n.message}
            for n in plan.notices
        ],
    }


def _action(action: Action) -> JsonObject:
    if isinstance(action, WriteStatus):
        return {"write": str(action.group)}
    if isinstance(action, Evict):
        return {"evict": [str(pod) for pod in action.pods], "force": action.force}
    if isinstance(action, Release):
        return {"release": str(action.group), "placements": [list(p) for p in action.placements]}
    if isinstance(action, Ungate):
        return {"ungate": [str(pod) for pod in action.pods]}
    told = {"jobEvent" if action.target.kind == "Job" else "event": str(action.target)}
    return {**told, "warning": action.warning, "reason": action.reason, "message": action.message}
