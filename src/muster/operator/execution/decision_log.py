"""The operator's log line for each decision it carried out: one line per gang
admitted (where), preempted for (whom), rolled back (why), grown or released; and
one line per notice given, objects told the same thing in one line (the pods of a
Workload or Job whose PodGroup is missing: one line for the group, not one per pod).

The line is written once the step's actions are all done, so the log says what
happened, not what was tried; a step that stopped part-way is decided again by the
next cycle and logged then. The words are the engine's: the message of the status it
wrote, the pods and nodes of its releases and evictions. Verdicts on waiting gangs
(written to their status, and told as events when they change) are not logged: a
busy cluster would repeat them every cycle.
"""

from __future__ import annotations

from collections.abc import Iterable

from muster.api.constants import CONDITION_SCHEDULED
from muster.scheduler import condition
from muster.scheduler.decisions import Evict, Notice, Plan, Release, Step, StepKind, WriteStatus


def decision_line(step: Step, plan: Plan) -> str | None:
    """The INFO line for a carried-out step, or None for one that decided nothing new
    (a status refreshed, a take-down already logged as its rollback or preemption)."""
    key = step.group
    released = _placements(step)
    if step.kind is StepKind.ADMIT:
        return f"PodGroup {key} admitted: {_message(plan, step)}; {_onto(released)}"
    if step.kind is StepKind.PREEMPT:
        victims = sorted(
            str(action.group)
            for action in step.actions
            if isinstance(action, WriteStatus) and action.group != key
        )
        evicted = sum(len(action.pods) for action in step.actions if isinstance(action, Evict))
        whose = f" of {', '.join(victims)}" if victims else ""
        return (
            f"PodGroup {key} admitted by preempting {evicted} pod(s){whose}: "
            f"{_message(plan, step)}; its pods are released once they have left"
        )
    if step.kind is StepKind.ROLL_BACK:
        return f"PodGroup {key} {_message(plan, step)}"
    if released and step.kind is StepKind.GROW:
        return f"PodGroup {key} grew: {_onto(released)}"
    if released:
        return f"PodGroup {key} {_onto(released)}"
    return None


def _message(plan: Plan, step: Step) -> str:
    status = plan.statuses.get(step.group) or {}
    return str((condition(status, CONDITION_SCHEDULED) or {}).get("message") or step.kind)


def _placements(step: Step) -> list[tuple[str, str]]:
    return [
        pair for action in step.actions if isinstance(action, Release) for pair in action.placements
    ]


def _onto(placements: list[tuple[str, str]]) -> str:
    """`released 4 pod(s) onto gpu-a0-0, gpu-a0-1`."""
    nodes = ", ".join(sorted({node for _, node in placements}))
    return f"released {len(placements)} pod(s) onto {nodes}"


NAMED = 3  # objects named in a notice's line; the rest are counted


def notice_lines(notices: Iterable[Notice]) -> list[str]:
    """The WARNING lines for notices given: one per message, naming its objects (the
    first few of them, and how many more)."""
    told: dict[tuple[str, str, str], list[str]] = {}
    for notice in notices:
        told.setdefault((notice.kind, notice.namespace, notice.message), []).append(notice.name)
    lines = []
    for (kind, namespace, message), names in told.items():
        if len(names) == 1:
            where = f"{namespace}/{names[0]}" if namespace else names[0]
            lines.append(f"{kind} {where}: {message}")
            continue
        shown = ", ".join(names[:NAMED])
        more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
        scope = f" in {namespace}" if namespace else ""
        lines.append(f"{len(names)} {kind}s{scope} ({shown}{more}): {message}")
    return lines
