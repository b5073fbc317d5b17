#!/usr/bin/env python3
"""Generate a YAML file of simulated GPU nodes for KWOK.

Nodes are spread over zones and racks so topology-aware placement has something to
choose between. The default matches `hack/nodes/gpu-cluster.yaml`: 2 zones x 2 racks x
2 nodes x 4 GPUs; benchmarks ask for more (`--nodes 5000`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

RACK_LABEL = "topology.muster.dev/rack"


def gpu_node(
    name: str, *, zone: str, rack: str, gpus: int, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """One simulated GPU node, labelled with its zone, rack and hostname, and ``labels``
    (deeper topologies name their own levels)."""
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                "topology.kubernetes.io/zone": zone,
                RACK_LABEL: rack,
                **(labels or {}),
            },
        },
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def node(
    index: int, *, zones: int, racks_per_zone: int, nodes_per_rack: int, gpus: int, prefix: str
) -> dict[str, Any]:
    """The index-th node of a cluster spread evenly over zones, then racks."""
    per_zone = racks_per_zone * nodes_per_rack
    zone = chr(ord("a") + (index // per_zone) % zones)
    rack = (index % per_zone) // nodes_per_rack
    return gpu_node(
        f"{prefix}-{zone}{rack}-{index}",
        zone=f"zone-{zone}",
        rack=f"zone-{zone}-rack-{rack}",
        gpus=gpus,
    )


def to_yaml(value: object, indent: int = 0) -> str:
    """Block-style YAML for nested mappings of strings (all a Node needs), stdlib only."""
    assert isinstance(value, Mapping)
    lines = []
    for key, item in value.items():
        pad = "  " * indent
        if isinstance(item, Mapping):
            lines.append(f"{pad}{key}:\n{to_yaml(item, indent + 1)}")
        else:
            lines.append(f"{pad}{key}: {json.dumps(item)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--zones", type=int, default=2)
    parser.add_argument("--racks-per-zone", type=int, default=2)
    parser.add_argument("--gpus", type=int, default=4)
    parser.add_argument("--prefix", default="gpu")
    args = parser.parse_args()
    nodes_per_rack = max(1, args.nodes // (args.zones * args.racks_per_zone))
    for index in range(args.nodes):
        doc = node(
            index,
            zones=args.zones,
            racks_per_zone=args.racks_per_zone,
            nodes_per_rack=nodes_per_rack,
            gpus=args.gpus,
            prefix=args.prefix,
        )
        sys.stdout.write("---\n" + to_yaml(doc) + "\n")


if __name__ == "__main__":
    main()
