"""A whole simulation: input documents in, a report out, cycle after cycle until the
engine has nothing more to change.

The clock is fixed for the run (the latest creation time in the input unless given),
so the same input always gives the same report.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from muster.api.constants import (
    CONDITION_SCHEDULED,
    REASON_PREEMPTED,
    REASON_ROLLED_BACK,
    REASON_SCHEDULED,
)
from muster.api.keys import GroupKey
from muster.api.preferences import declared_topology, kueue_levels
from muster.scheduler import (
    EngineConfig,
    IntakeError,
    admitted_message,
    condition,
    group_records,
    parse_timestamp,
    preempted_message,
    schedule,
)
from muster.scheduler.decisions import NOTHING_CARRIED, CycleResult
from muster.simulation.cluster import SimulatedCluster
from muster.simulation.documents import Document, InvalidInputError, Problem
from muster.simulation.expansion import expand
from muster.simulation.inventory import Entry, Inventory, Manifest, take_inventory
from muster.simulation.pods import is_finished, is_pending
from muster.simulation.report import GroupOutcome, Report

DEFAULT_MAX_CYCLES = 1000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BASIC_POLICY_MESSAGE = "basic policy: kube-scheduler places its pods one by one (not simulated)"


class NoSteadyStateError(Exception):
    """The engine kept changing the cluster for more cycles than allowed."""


def simulate(
    documents: Iterable[Document],
    *,
    now: datetime | None = None,
    config: EngineConfig | None = None,
    max_cycles: int = DEFAULT_MAX_CYCLES,
) -> Report:
    """Run the engine over `documents` until a cycle changes nothing, and report.

    Raises `InvalidInputError` (every problem, each with its document) and
    `NoSteadyStateError` (when `max_cycles` cycles all changed something).
    """
    cluster, clock, warnings = load(documents, now=now)
    engine_config = config or EngineConfig()
    carried = NOTHING_CARRIED
    for cycle in range(1, max_cycles + 1):
        result = schedule(
            cluster.state, now=clock.timestamp(), config=engine_config, carried=carried
        )
        carried = result.carried
        if not cluster.execute(result.plan):
            return Report(
                pod_groups=tuple(
                    _outcome(cluster, key, result) for key in sorted(cluster.pod_groups)
                ),
                victims=tuple(cluster.victims),
                warnings=warnings,
                cycles=cycle,
            )
    raise NoSteadyStateError(
        f"the cluster still changed after {max_cycles} scheduling cycles; "
        "raise --max-cycles if the input is that large"
    )


def load(
    documents: Iterable[Document], *, now: datetime | None = None
) -> tuple[SimulatedCluster, datetime, tuple[Problem, ...]]:
    """The input as a simulated cluster, the clock of the run, and what was ignored.

    Raises `InvalidInputError` with every problem found.
    """
    inventory = take_inventory(documents)
    topologies, ignored = _topologies(inventory)
    expansion = expand(inventory)
    clock = now or _latest_creation(inventory)
    cluster = SimulatedCluster()
    cluster.load(
        objects=[
            *inventory.priority_classes,
            *inventory.nodes,
            *inventory.namespaces,
            *inventory.volumes,
            *inventory.claims,
            *inventory.budgets,
            *topologies,
            *inventory.devices,
        ],
        pod_groups=expansion.pod_groups,
        pods=expansion.pods,
    )
    warnings = (*inventory.warnings, *ignored, *expansion.warnings)
    return cluster, clock, warnings


def _topologies(inventory: Inventory) -> tuple[list[Entry], list[Problem]]:
    """The input's Kueue Topologies the engine takes, and a warning for each it does
    not: one that is not a Kueue Topology, and those whose levels give way to the one
    the engine keeps (`declared_topology`)."""
    ignored: list[Problem] = []
    valid: dict[str, Entry] = {}
    for entry in inventory.topologies:
        if kueue_levels(entry.body) is None:
            message = "not a Kueue Topology with a node label key at each level; ignored"
            ignored.append(Problem(entry.origin, message))
        else:
            valid[entry.name] = entry
    kept = declared_topology(valid)
    for name, entry in valid.items():
        if name != kept:
            message = f"the topology levels are taken from {valid[str(kept)].origin}; ignored"
            ignored.append(Problem(entry.origin, message))
    return list(valid.values()), ignored


def _latest_creation(inventory: Inventory) -> datetime:
    """The moment the newest object was created: the run happens right after it."""
    problems: list[Problem] = []
    latest = EPOCH
    for entry in _every_entry(inventory):
        try:
            created = parse_timestamp(entry.body["metadata"].get("creationTimestamp"))
        except IntakeError as error:
            problems.append(Problem(entry.origin, str(error)))
            continue
        if created is not None:
            latest = max(latest, datetime.fromtimestamp(created, UTC))
    if problems:
        raise InvalidInputError(problems)
    return latest


def _every_entry(inventory: Inventory) -> Iterable[Entry]:
    yield from inventory.nodes
    yield from inventory.pods
    yield from inventory.priority_classes
    yield from inventory.pod_groups
    yield from inventory.workloads
    yield from inventory.jobs


def _outcome(cluster: SimulatedCluster, key: GroupKey, result: CycleResult) -> GroupOutcome:
    record = group_records(cluster.state)[key]
    placements = dict(cluster.placements.get(key, {}))
    preempted = key in cluster.preempted
    if record.admitted:
        members = cluster.members(key)
        live = [pod for pod in members if not is_finished(pod)]
        if members and not live:
            message = f"finished: {_succeeded(members)}"
            return GroupOutcome(key, True, REASON_SCHEDULED, message, placements, preempted)
        waiting = [
            pod for pod in live if is_pending(pod) and pod["metadata"]["name"] not in record.plan
        ]
        message = admitted_message(len(live) - len(waiting), live=len(live))
        awaited = [victim for victim in record.memory.victims if victim in cluster.pods]
        if awaited:  # preempted for it and still leaving: none of its pods runs yet
            names = ", ".join(str(victim) for victim in awaited)
            message = f"{message}; waiting for {len(awaited)} preempted pod(s) to leave: {names}"
        return GroupOutcome(key, True, REASON_SCHEDULED, message, placements, preempted)
    if not record.gang:
        return GroupOutcome(key, False, "", BASIC_POLICY_MESSAGE, placements, preempted)
    # What the operator would have written: a gang in backoff or taken down says so.
    scheduled = condition(cluster.pod_groups[key].get("status") or {}, CONDITION_SCHEDULED) or {}
    verdict = result.verdicts.get(key)
    reason = str(scheduled.get("reason") or (verdict.reason if verdict else ""))
    message = str(scheduled.get("message") or (verdict.message if verdict else ""))
    if preempted and verdict is not None and reason != REASON_ROLLED_BACK:
        reason = REASON_PREEMPTED  # taken down during the run: say by whom, then why it waits
        message = f"{preempted_message(cluster.preempted[key])}; {verdict.message}"
    return GroupOutcome(key, False, reason, message, placements, preempted)


def _succeeded(pods: list[Manifest]) -> str:
    """How many of a finished gang's pods succeeded: `3 of 4 pods succeeded`."""
    succeeded = sum((pod.get("status") or {}).get("phase") == "Succeeded" for pod in pods)
    return f"{succeeded} of {len(pods)} pods succeeded"
