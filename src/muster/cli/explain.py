"""`muster explain podgroup NAME [-n NS]`: why a gang waits, against the live cluster.

Lists the cluster once, runs the same engine the operator runs on that snapshot, and
prints the gang's verdict as tables: how many of its pods fit in each topology domain
(or the whole cluster), what the other nodes are short of, and its place in the queue;
then when it is expected to start, from the engine run forward in time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from kubernetes_asyncio.config import ConfigException

from muster.api.constants import CONDITION_SCHEDULED
from muster.api.keys import GroupKey
from muster.api.times import rfc3339
from muster.client.connection import connect
from muster.client.kube import KubeError
from muster.operator.config import ENGINE_FIELDS, add_arguments, engine_config, from_arguments
from muster.operator.controller import load_snapshot
from muster.operator.dashboard.board import start_words
from muster.scheduler import (
    ClusterState,
    EngineConfig,
    Estimate,
    Forecast,
    NodeDevices,
    condition,
    devices_per_node,
    gang_memory_from,
    group_records,
    member_records,
    nodes_line,
    run_forecast,
    waiting_for,
)
from muster.scheduler.decisions import CycleResult, Explanation

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_NO_CLUSTER = 2
DEFAULT_KUBECONFIG = Path("~/.kube/config")
EMPTY = " (on an empty cluster: it does not fit even there)"
DEVICE_ROWS = 10  # nodes shown with their devices, most free first


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `explain` to the `muster` command."""
    parser = subparsers.add_parser(
        "explain",
        help="explain why a PodGroup waits, against a live cluster",
        description=(
            "Read the cluster (nodes, pods, PodGroups, PriorityClasses), run Muster's "
            "decision engine once on it, and explain the PodGroup's verdict: what fits "
            "where, what is short, and its position in the queue."
        ),
    )
    parser.add_argument("kind", choices=["podgroup", "pg"], help="what to explain")
    parser.add_argument("name", help="the PodGroup's name")
    parser.add_argument("-n", "--namespace", default="default", help="its namespace")
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)",
    )
    add_arguments(parser, only=ENGINE_FIELDS)  # decide as the operator does
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    kubeconfig = find_kubeconfig(args.kubeconfig, os.environ)
    key = GroupKey(args.namespace, args.name)
    try:
        config = engine_config(from_arguments(args, os.environ))
        return asyncio.run(_explain(kubeconfig, key, config, sys.stdout))
    except ConfigException as error:
        where = kubeconfig or "no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a pod"
        print(f"muster explain: cannot connect to a cluster ({where}): {error}", file=sys.stderr)
        return EXIT_NO_CLUSTER
    except (KubeError, OSError) as error:
        print(f"muster explain: cannot read the cluster: {error}", file=sys.stderr)
        return EXIT_NO_CLUSTER


def find_kubeconfig(explicit: str | None, env: Mapping[str, str]) -> str | None:
    """--kubeconfig, then $KUBECONFIG, then ~/.kube/config if it exists, as kubectl
    does; None leaves the in-cluster service account, for a command run in a pod."""
    if explicit or env.get("KUBECONFIG"):
        return explicit or env["KUBECONFIG"]
    default = DEFAULT_KUBECONFIG.expanduser()
    return str(default) if default.is_file() else None


async def _explain(kubeconfig: str | None, key: GroupKey, config: EngineConfig, out: TextIO) -> int:
    kube = await connect(kubeconfig)
    try:
        cache = await load_snapshot(kube)
    finally:
        await kube.close()
    cache.state.devices.judge_in_place()  # the claims' selectors, as the operator would
    pod_group = cache.pod_groups.get(key)
    if pod_group is None:
        print(f"PodGroup {key} not found", file=sys.stderr)
        return EXIT_NOT_FOUND
    ahead = run_forecast(cache.state, now=time.time(), config=config)
    record = group_records(cache.state).get(key)
    topology_key = None if record is None else record.topology_key
    out.write(render(key, pod_group.get("status") or {}, ahead.first_cycle))
    if claims_devices(cache.state, key):
        out.write(render_devices(devices_per_node(cache.state)))
    estimate = ahead.estimates.get(key)
    if estimate is not None:
        out.write(render_estimate(estimate, ahead, topology_key))
    return EXIT_OK


def claims_devices(state: ClusterState, key: GroupKey) -> bool:
    """Whether a pod of the group claims devices through Dynamic Resource Allocation."""
    return any(record.device_claims for record in member_records(state, key))


def render_devices(nodes: Sequence[NodeDevices]) -> str:
    """The nodes' devices, free and in all (those with the most free first)."""
    rows = [(item.node, f"{item.free}/{item.total}") for item in nodes[:DEVICE_ROWS]]
    lines = ["", *_table(("NODE", "DEVICES FREE"), rows)]
    if len(nodes) > DEVICE_ROWS:
        lines.append(f"... and {len(nodes) - DEVICE_ROWS} more node(s) with devices")
    if not nodes:
        lines.append("(no node publishes devices in a ResourceSlice)")
    return "\n".join(lines) + "\n"


def render_estimate(estimate: Estimate, ahead: Forecast, topology_key: str | None) -> str:
    """When the gang should start, and what it waits for, in words."""
    start = start_words(estimate, ahead)
    verdict = ahead.first_cycle.verdicts.get(estimate.group)
    return f"\nStart:    {start}\nWaits for: {waiting_for(estimate, verdict, topology_key)}\n"


def render(key: GroupKey, status: Mapping[str, Any], result: CycleResult) -> str:
    """The explanation as text: a summary, then per-domain fits, then shortages."""
    lines = [f"PodGroup {key}"]
    verdict = result.verdicts.get(key)
    admission = next((a for a in result.admissions if a.group == key), None)
    if verdict is not None:
        lines.append(f"Status:   waiting ({verdict.reason})")
        lines.append(f"Message:  {verdict.message}")
        lines.extend(_lifecycle(status))
        if verdict.explanation is not None:
            lines.extend(_explanation(verdict.explanation))
    elif admission is not None:
        lines.append("Status:   fits now; the operator admits it on its next cycle")
        lines.extend(_table(("POD", "NODE"), sorted(admission.placements.items())))
    else:
        scheduled = condition(status, CONDITION_SCHEDULED) or {}
        lines.append(f"Status:   admitted ({scheduled.get('reason', 'Scheduled')})")
        lines.extend(_lifecycle(status))  # a preemptor names the victims it waits for
        plan = status.get("plan")
        if isinstance(plan, dict):
            lines.extend(_table(("POD", "NODE"), sorted((str(p), str(n)) for p, n in plan.items())))
    return "\n".join(lines) + "\n"


def _lifecycle(status: Mapping[str, Any]) -> list[str]:
    """The gang's lifecycle memory, as the operator wrote it and the engine read it."""
    memory = gang_memory_from(status)
    lines = []
    if memory.backoff_until is not None:
        lines.append(f"Backoff:  until {rfc3339(memory.backoff_until)}")
    if memory.rollbacks:
        lines.append(f"Rollbacks: {memory.rollbacks} in a row")
    if memory.victims:
        lines.append(f"Victims:  waiting for {', '.join(str(v) for v in memory.victims)}")
    return lines


def _explanation(explanation: Explanation) -> list[str]:
    lines = [
        f"Queue:    position {explanation.queue_position}",
        f"Pods:     needs {explanation.needed}, {explanation.existing} exist, "
        f"at most {explanation.best_fit} fit at once",
        f"Nodes:    {nodes_line(explanation)}{EMPTY if explanation.never else ''}",
        "",
    ]
    slices = explanation.slices
    if slices is not None:
        line = f"Slices:   of {slices.size} pods, each in one {slices.key} domain"
        if slices.most is not None:
            line += f"; none has room for one, at most {slices.most.fits} ({slices.most.domain})"
        lines.insert(2, line)
    lines.extend(_table(("DOMAIN", "FITS"), [(d.domain, str(d.fits)) for d in explanation.domains]))
    if explanation.shortages:
        lines.append("")
        lines.extend(
            _table(("SHORT OF", "NODES"), [(s.reason, str(s.nodes)) for s in explanation.shortages])
        )
    return lines


def _table(header: tuple[str, str], rows: Sequence[tuple[str, str]]) -> list[str]:
    width = max(len(header[0]), *(len(row[0]) for row in rows)) if rows else len(header[0])
    return [f"{left:<{width}}  {right}" for left, right in (header, *rows)]
