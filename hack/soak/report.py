"""The soak's report: what was injected, how soon gangs were released again, what broke.

Pure: the run hands in its records and gets the JSON (bench/results/soak-<seed>.json)
and the Markdown section generated into docs/soak.md. A fault's recovery is the time
from its start to the first gang released (risen whole) after it: how long the
cluster took to do useful work again; a fault after which no gang was released has none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.common.stats import percentile

from hack.soak.excuses import Excused
from hack.soak.judge import Violation


@dataclass(frozen=True)
class FaultRecord:
    """A fault as it was carried out: whether it hit (its evidence says how it showed)."""

    kind: str
    at: float  # seconds after the start
    lasts: float
    hit: bool
    evidence: str


def recovery(fault: FaultRecord, releases: Sequence[float]) -> float | None:
    """Seconds from the fault to the first gang released after it."""
    after = [at for at in releases if at >= fault.at]
    return round(min(after) - fault.at, 2) if after else None


def by_kind(faults: Sequence[FaultRecord], releases: Sequence[float]) -> dict[str, Any]:
    kinds: dict[str, Any] = {}
    for kind in sorted({f.kind for f in faults}):
        mine = [f for f in faults if f.kind == kind]
        times = [t for t in (recovery(f, releases) for f in mine) if t is not None]
        kinds[kind] = {
            "injected": len(mine),
            "hit": sum(f.hit for f in mine),
            "recovery_p50": round(percentile(times, 50), 2) if times else None,
            "recovery_p99": round(percentile(times, 99), 2) if times else None,
        }
    return kinds


def build(
    *,
    seed: int,
    kinds: Sequence[str],
    fault_every: float,
    duration: float,
    started: str,
    faults: Sequence[FaultRecord],
    releases: Sequence[float],
    submitted: int,
    completed: int,
    violations: Iterable[Violation],
    excused: Iterable[Excused],
    restarts: Mapping[str, Sequence[int]],
) -> dict[str, Any]:
    """The report of one run; `releases` are the moments gangs rose whole."""
    found = [{"seed": seed, **asdict(v)} for v in violations]
    hit = [f for f in faults if f.hit]
    return {
        "seed": seed,
        "drawn_from": list(kinds),  # `--faults`, to replay the run
        "fault_every": fault_every,  # `--fault-every`
        "duration": duration,
        "started": started,
        "faults": {
            "injected": len(faults),
            "hit": len(hit),
            "kinds": len({f.kind for f in hit}),
            "by_kind": by_kind(faults, releases),
            "log": [asdict(f) for f in faults],
        },
        "gangs_released": len(releases),
        "jobs": {"submitted": submitted, "completed": completed},
        "violations": found,
        "violations_by_invariant": dict(Counter(v["invariant"] for v in found)),
        # Partial gangs within the grace once the time Muster could not act is taken out
        # (hack/soak/excuses.py): what a watch without excuses would also have counted.
        "excused_partials": [
            {**asdict(e.span), "counted": e.counted, "excused_by": list(e.reasons)} for e in excused
        ],
        "restarts": {replica: list(exits) for replica, exits in sorted(restarts.items())},
    }


def section(report: Mapping[str, Any], results: str) -> str:
    """The Markdown of docs/soak.md's generated section for one report."""
    faults = report["faults"]
    rows = [
        f"| {kind} | {row['injected']} | {row['hit']} | {_seconds(row['recovery_p50'])} "
        f"| {_seconds(row['recovery_p99'])} |"
        for kind, row in faults["by_kind"].items()
    ]
    restarts = ", ".join(
        f"{replica}: {len(exits)}" for replica, exits in report["restarts"].items()
    )
    violations = report["violations"]
    listed = [
        f"- {v['invariant']} at +{v['at']:.1f}s, {v['subject']}: {v['detail']}" for v in violations
    ] or ["- none"]
    forgiven = [
        f"- {e['gang']} at +{e['start']:.1f}s, partial {e['end'] - e['start']:.1f}s, "
        f"{e['counted']:.1f}s counted; excused: {'; '.join(e['excused_by'])}"
        for e in report["excused_partials"]
    ] or ["- none"]
    jobs = report["jobs"]
    return "\n".join(
        [
            f"Seed {report['seed']}, {report['duration']:g} s from {report['started']}, "
            f"a fault every {report['fault_every']:g} s on average "
            f"(`bench/results/{results}`): {faults['injected']} faults injected, "
            f"{faults['hit']} hit, of {faults['kinds']} kinds; "
            f"{jobs['submitted']} Jobs submitted, {jobs['completed']} completed; "
            f"{report['gangs_released']} gangs released; "
            f"{len(violations)} violations; operator restarts: {restarts or 'none'}.",
            "",
            "| fault | injected | hit | recovery p50 | recovery p99 |",
            "|---|---|---|---|---|",
            *rows,
            "",
            "Violations:",
            "",
            *listed,
            "",
            "Partial gangs within the grace once the time Muster could not act is taken out:",
            "",
            *forgiven,
        ]
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"
