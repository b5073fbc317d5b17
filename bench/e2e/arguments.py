"""The end-to-end benchmark's command line: sizes, modes, presets and where results go."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from devtools.builds import ROOT

from bench.e2e import kueue, report
from bench.e2e.workload import (
    DEFAULT_MODES,
    KUEUE_MODES,
    MODES,
)

RESULTS = ROOT / "bench" / "results" / "e2e.json"
KUEUE_RESULTS = RESULTS.parent / "e2e-kueue.json"
WORK_DIR = Path("/tmp/muster-bench")


# Presets fill whatever the command line leaves unset.
PRESETS: dict[str, dict[str, Any]] = {
    "default": {"nodes": 500, "gpus_per_node": 8, "jobs": 200, "modes": list(DEFAULT_MODES)},
    "quick": {
        "nodes": 20,
        "gpus_per_node": 8,
        "jobs": 12,
        "modes": list(DEFAULT_MODES),
        "output": WORK_DIR / "e2e-quick.json",
    },
    # The scale point: 5,000 nodes and 50,000 pods, every mode on the same shape (16 GPUs
    # a node, so every pod fits), for throughput there and the operator's memory.
    "scale": {
        "nodes": 5000,
        "gpus_per_node": 16,
        "jobs": 6250,
        "modes": list(DEFAULT_MODES),
        "output": RESULTS.parent / report.SCALE_RESULTS,
        "timeout": 1800.0,
        # Its first cycles face thousands of gangs at once: minutes may pass between binds.
        "settle": 300.0,
        "node_lease_seconds": 600,
    },
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line, with its preset filling whatever it leaves unset."""
    parser = _parser()
    args = parser.parse_args(argv)
    defaults = {
        "timeout": 900.0,
        "settle": 30.0,
        "node_lease_seconds": 40,
        **PRESETS[args.preset],
    }
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    unknown = [mode for mode in args.modes if mode not in MODES]
    if unknown:
        parser.error(f"unknown mode(s): {', '.join(unknown)}")
    if args.output is None:
        # The Kueue modes have a table of their own: they never overwrite e2e.json.
        kueue_only = all(mode in KUEUE_MODES for mode in args.modes)
        args.output = KUEUE_RESULTS if kueue_only else RESULTS
    return args


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    preset = parser.add_mutually_exclusive_group()
    preset.add_argument(
        "--quick",
        dest="preset",
        action="store_const",
        const="quick",
        help="smoke run: 20 nodes, 12 Jobs",
    )
    preset.add_argument(
        "--scale",
        dest="preset",
        action="store_const",
        const="scale",
        help="every mode at 5,000 nodes x 16 GPUs and 6,250 Jobs (50,000 pods)",
    )
    parser.add_argument("--nodes", type=int, help="simulated nodes (default 500)")
    parser.add_argument("--gpus-per-node", type=int, help="default 8")
    parser.add_argument(
        "--node-lease-seconds",
        type=int,
        help="node Lease duration (default 40; KWOK renews every quarter of it)",
    )
    parser.add_argument("--jobs", type=int, help="gang Jobs in the burst (default 200)")
    parser.add_argument(
        "--gpus-per-pod",
        type=int,
        default=1,
        help="GPUs each pod requests; raise it to demand more than the cluster has",
    )
    parser.add_argument("--zone-share", type=float, default=0.25, help="Jobs kept in one zone")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--modes",
        type=lambda text: [mode for mode in text.split(",") if mode],
        help=f"comma-separated, from {','.join(MODES)} (default {','.join(DEFAULT_MODES)})",
    )
    parser.add_argument(
        "--settle", type=float, help="stop after this long without a bind (default 30 s)"
    )
    parser.add_argument("--timeout", type=float, help="longest run of a mode (default 900 s)")
    parser.add_argument("--submit-concurrency", type=int, default=16)
    parser.add_argument(
        "--kueue-pods-ready-timeout",
        default=kueue.PODS_READY_TIMEOUT,
        metavar="DURATION",
        help=f"Kueue's waitForPodsReady timeout (default {kueue.PODS_READY_TIMEOUT})",
    )
    _where_arguments(parser)
    parser.set_defaults(preset="default")
    return parser


def _where_arguments(parser: argparse.ArgumentParser) -> None:
    """Where a run keeps its results, logs and clusters."""
    parser.add_argument(
        "--output",
        type=Path,
        help=f"results file (default {RESULTS}, or {KUEUE_RESULTS.name} for the Kueue modes)",
    )
    parser.add_argument(
        "--merge", action="store_true", help="keep the other modes' figures already in --output"
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=WORK_DIR,
        help=f"logs here, each mode's cluster beside it (default {WORK_DIR})",
    )
    parser.add_argument("--keep-clusters", action="store_true", help="leave each cluster up")
