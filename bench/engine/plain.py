"""The plain-Python baseline: the obvious code a first version would have, dictionaries
per node and every pod checked against every node, measured beside the engine."""

from __future__ import annotations

from bench.engine.cluster import Obj

# ---- the plain-Python baseline -------------------------------------------------------


def quantity(text: str) -> float:
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


def requests_of(obj: Obj) -> dict[str, float]:
    totals: dict[str, float] = {"pods": 1}
    for container in obj["spec"]["containers"]:
        for resource, raw in container["resources"]["requests"].items():
            totals[resource] = totals.get(resource, 0) + quantity(raw)
    return totals


class PlainCluster:
    """Nodes as dictionaries; usage recomputed from all pods, as a first version would."""

    def __init__(self, objects: list[Obj]) -> None:
        self.nodes = [obj for obj in objects if "allocatable" in obj.get("status", {})]
        self.pods = [obj for obj in objects if "containers" in obj.get("spec", {})]
        self.free: dict[str, dict[str, float]] = {}
        self.recompute()

    def recompute(self, without: set[str] | None = None) -> None:
        self.free = {
            node["metadata"]["name"]: {
                res: quantity(v) for res, v in node["status"]["allocatable"].items()
            }
            for node in self.nodes
        }
        for obj in self.pods:
            on = obj["spec"].get("nodeName")
            if on is None or (without and obj["metadata"]["name"] in without):
                continue
            for resource, amount in requests_of(obj).items():
                self.free[on][resource] = self.free[on].get(resource, 0) - amount

    def allowed(self, node: Obj, pod: Obj) -> bool:
        tolerations = pod["spec"].get("tolerations", [])
        for taint in node["spec"].get("taints", []):
            if not any(t.get("key") == taint["key"] for t in tolerations):
                return False
        return True

    def place(
        self, gang: list[Obj], free: dict[str, dict[str, float]], nodes: list[Obj]
    ) -> dict[str, str] | None:
        """Best fit, pod by pod: the allowed node with the least room left after it."""
        free = {name: dict(room) for name, room in free.items()}
        placed = {}
        for pod in gang:
            want = requests_of(pod)
            best, best_left = None, float("inf")
            for node in nodes:
                name = node["metadata"]["name"]
                room = free[name]
                if not self.allowed(node, pod):
                    continue
                if all(room.get(res, 0) >= amount for res, amount in want.items()):
                    left = room["cpu"] - want.get("cpu", 0)
                    if left < best_left:
                        best, best_left = name, left
            if best is None:
                return None
            for res, amount in want.items():
                free[best][res] -= amount
            placed[pod["metadata"]["name"]] = best
        return placed

    def decide(self, gang: list[Obj], topology: str | None) -> dict[str, str] | None:
        members = [obj for obj in gang if "containers" in obj.get("spec", {})]
        if topology is None:
            return self.place(members, self.free, self.nodes)
        domains: dict[str, list[Obj]] = {}
        for node in self.nodes:
            value = node["metadata"]["labels"].get(topology)
            if value is not None:
                domains.setdefault(value, []).append(node)
        for value in sorted(domains):
            placed = self.place(members, self.free, domains[value])
            if placed is not None:
                return placed
        return None

    def preempt(self, gang: list[Obj], priority: int) -> dict[str, str] | None:
        """Remove lower priorities level by level until the gang fits."""
        levels = sorted(
            {
                obj["spec"].get("priority", 0)
                for obj in self.pods
                if obj["spec"].get("priority", 0) < priority
            }
        )
        for level in levels:
            gone = {
                obj["metadata"]["name"]
                for obj in self.pods
                if obj["spec"].get("priority", 0) <= level
            }
            self.recompute(without=gone)
            placed = self.decide(gang, None)
            self.recompute()
            if placed is not None:
                return placed
        return None
