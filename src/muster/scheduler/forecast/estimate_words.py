"""A forecast in words: what a waiting gang waits for, and when that comes.

`needs 4 nvidia.com/gpu in one topology.kubernetes.io/zone; zone=zone-a frees them at
~10:42 UTC when ml/train-a ends (expected runtime 2h, declared)`. The same sentence is
written to `status.estimate.waitingFor` and printed by `muster explain`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from muster.scheduler.decisions.results import Verdict
from muster.scheduler.forecast.forecast import Estimate, Outcome
from muster.scheduler.memory.runtimes import format_duration
from muster.scheduler.placement.explain import format_amount

SHOWN_OWNERS = 3


def clock_time(moment: float) -> str:
    """`10:42 UTC`: a time of day, as the API server's clock reads it."""
    return datetime.fromtimestamp(moment, UTC).strftime("%H:%M UTC")


def starts_in(estimate: Estimate, now: float, horizon: float) -> str:
    """The START column: `now`, `~12m`, `>24h`, `unknown` or `never`."""
    if estimate.outcome is Outcome.UNKNOWN:
        return "unknown"
    if estimate.outcome is Outcome.NEVER:
        return "never"
    if estimate.outcome is Outcome.BEYOND_HORIZON or estimate.start is None:
        return f">{format_duration(horizon - now)}"
    wait = estimate.start - now
    return "now" if wait < 1 else f"~{format_duration(wait)}"


def waiting_for(estimate: Estimate, verdict: Verdict | None, topology_key: str | None) -> str:
    """What the gang needs, where it frees up, and whose end frees it; for a gang
    that never starts, why (the engine's verdict)."""
    if estimate.outcome is Outcome.NEVER:
        return estimate.why
    needs = _needs(verdict, topology_key)
    if estimate.outcome is not Outcome.STARTS:
        why = estimate.why
        if estimate.unknown:
            shown = ", ".join(estimate.unknown[:SHOWN_OWNERS])
            more = len(estimate.unknown) - SHOWN_OWNERS
            why = f"{why}: {shown}" + (f" and {more} more" if more > 0 else "")
        return f"{needs}; {why}" if needs else why
    if estimate.backoff_until is not None:
        text = f"in backoff until ~{clock_time(estimate.backoff_until)}; it fits then"
        return f"{needs}; {text}" if needs else text
    if not estimate.vacancies or estimate.start is None:
        return f"{needs}; it fits now" if needs else "it fits now"
    where = (
        f"{estimate.domain[0]}={estimate.domain[1]} frees them"
        if estimate.domain is not None
        else f"{_nodes(estimate.nodes)} free{'s' if len(estimate.nodes) == 1 else ''} them"
    )
    last = estimate.vacancies[0]
    text = (
        f"{where} at ~{clock_time(estimate.start)} when {last.owner} ends "
        f"(expected runtime {last.runtime.describe()})"
    )
    if len(estimate.vacancies) > 1:
        text = f"{text}, after {len(estimate.vacancies) - 1} more"
    return f"{needs}; {text}" if needs else text


def _needs(verdict: Verdict | None, topology_key: str | None) -> str:
    """`needs 4 nvidia.com/gpu in one zone`, from what the gang lacks in total now."""
    if verdict is None or verdict.explanation is None:
        return ""
    explanation = verdict.explanation
    where = f" in one {topology_key}" if topology_key is not None else ""
    if explanation.shortfalls:
        amounts = " and ".join(
            f"{format_amount(item.resource, item.needed)} {item.resource}"
            for item in explanation.shortfalls
        )
        return f"needs {amounts}{where}"
    return f"needs room for {explanation.needed} pods at once{where}"


def _nodes(nodes: tuple[str, ...]) -> str:
    if len(nodes) <= SHOWN_OWNERS:
        return "node " + ", ".join(nodes) if len(nodes) == 1 else "nodes " + ", ".join(nodes)
    return f"{len(nodes)} nodes ({', '.join(nodes[:SHOWN_OWNERS])}, ...)"
