"""A report as the JSON document of the command-line contract, or as a table for people."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from muster.simulation.report import GroupOutcome, PreemptedPod, Report

COLUMN_GAP = "   "
TABLE_HEADER = ("NAMESPACE", "PODGROUP", "SCHEDULED", "REASON", "PLACED", "MESSAGE")


def report_to_json(report: Report) -> dict[str, Any]:
    """The `-o json` document; keys and shapes are fixed (docs/simulate.md, "Output")."""
    return {
        "podGroups": [_group_to_json(outcome) for outcome in report.pod_groups],
        "victims": [_victim_to_json(victim) for victim in report.victims],
    }


def render_table(report: Report) -> str:
    """One row per PodGroup (kubectl style), then the preempted pods, if any."""
    if not report.pod_groups:
        return "No PodGroups in the input.\n"
    rows = [TABLE_HEADER, *(_group_row(outcome) for outcome in report.pod_groups)]
    text = aligned(rows)
    if report.victims:
        text += "\nPreempted pods:\n" + aligned(
            [("NAMESPACE", "POD", "PODGROUP"), *(_victim_row(v) for v in report.victims)]
        )
    return text


def _group_to_json(outcome: GroupOutcome) -> dict[str, Any]:
    return {
        "namespace": outcome.group.namespace,
        "name": outcome.group.name,
        "scheduled": outcome.scheduled,
        "reason": outcome.reason,
        "message": outcome.message,
        "placements": dict(sorted(outcome.placements.items())),
        "preempted": outcome.preempted,
    }


def _victim_to_json(victim: PreemptedPod) -> dict[str, Any]:
    return {
        "namespace": victim.pod.namespace,
        "name": victim.pod.name,
        "podGroup": None if victim.group is None else victim.group.name,
    }


def _group_row(outcome: GroupOutcome) -> tuple[str, ...]:
    return (
        outcome.group.namespace,
        outcome.group.name,
        "True" if outcome.scheduled else "False",
        outcome.reason,
        str(len(outcome.placements)),
        outcome.message,
    )


def _victim_row(victim: PreemptedPod) -> tuple[str, ...]:
    return (
        victim.pod.namespace,
        victim.pod.name,
        "<none>" if victim.group is None else victim.group.name,
    )


def aligned(rows: Sequence[tuple[str, ...]]) -> str:
    """Pad every column but the last to its widest cell, so a long message never pads."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    lines = (
        COLUMN_GAP.join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    )
    return "".join(line.rstrip() + "\n" for line in lines)
