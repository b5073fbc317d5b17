"""`muster explain` renders the engine's verdict on one gang as tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from muster.api.keys import GroupKey
from muster.cli import explain, main
from muster.cli.explain import (
    DEVICE_ROWS,
    EXIT_NO_CLUSTER,
    claims_devices,
    find_kubeconfig,
    render,
    render_devices,
)
from muster.operator.controller import load_snapshot
from muster.operator.intake.cache import LiveCache
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import (
    Admission,
    CycleResult,
    DomainFit,
    Explanation,
    Reason,
    Shortage,
    Verdict,
)
from muster.scheduler.devices.gang import NodeDevices, devices_per_node
from muster.simulation.documents import Document
from muster.simulation.run import simulate
from tests.unit.operator.test_controller import ListingKube
from tests.unit.scheduler.builders import cluster, node, pod, pod_group
from tests.unit.scheduler.device_builders import claim, from_template, resource_slice

KEY = GroupKey("ml", "train")


WAITING = Explanation(
    nodes_total=12,
    nodes_feasible=4,
    shortages=(Shortage("Insufficient nvidia.com/gpu", 8),),
    needed=4,
    existing=4,
    best_fit=3,
    domains=(DomainFit("zone=a", 2), DomainFit("zone=b", 3)),
    queue_position=2,
)


def _rendered(explanation: Explanation) -> list[str]:
    verdict = Verdict(Reason.UNSCHEDULABLE, "...", explanation)
    return render(KEY, {}, CycleResult(verdicts={KEY: verdict})).splitlines()


def test_a_waiting_gang_shows_fits_per_domain_shortages_and_queue_position() -> None:
    lines = _rendered(WAITING)
    assert lines[0] == "PodGroup ml/train"
    assert "Status:   waiting (Unschedulable)" in lines
    assert "Queue:    position 2" in lines
    assert "Pods:     needs 4, 4 exist, at most 3 fit at once" in lines
    assert "zone=a  2" in lines and "zone=b  3" in lines
    assert "Insufficient nvidia.com/gpu  8" in lines
    assert "Nodes:    4/12 nodes can host a pod of the gang" in lines


def test_the_node_counts_say_what_they_are_of() -> None:
    lines = _rendered(
        replace(
            WAITING,
            nodes_total=4,
            nodes_feasible=0,
            shortages=(Shortage("node(s) didn't match pod anti-affinity rules", 4),),
            never=True,
            placed_first=4,
            counted_in="zone=a",
        )
    )
    assert (
        "Nodes:    in zone=a, 0/4 nodes can host a pod of the gang once 4 are placed"
        " (on an empty cluster: it does not fit even there)"
    ) in lines


def test_a_gang_that_fits_now_lists_where_its_pods_would_go() -> None:
    result = CycleResult(admissions=(Admission(KEY, {"train-0": "gpu-1"}),))
    text = render(KEY, {}, result)
    assert "fits now" in text
    assert "train-0  gpu-1" in text.splitlines()


def test_an_admitted_gang_shows_its_recorded_plan() -> None:
    status = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
        "plan": {"train-0": "gpu-1"},
    }
    text = render(KEY, status, CycleResult())
    assert "Status:   admitted (Scheduled)" in text
    assert "train-0  gpu-1" in text.splitlines()


def test_a_preemptor_waiting_for_its_victims_names_them() -> None:
    status = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
        "plan": {"train-0": "gpu-1"},
        "lifecycle": {"rollbacks": 0, "victims": ["ml/low-0"]},
    }
    text = render(KEY, status, CycleResult())
    assert "Victims:  waiting for ml/low-0" in text.splitlines()


def test_without_a_kubeconfig_outside_a_cluster_it_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["explain", "podgroup", "train", "-n", "ml"]) == EXIT_NO_CLUSTER
    err = capsys.readouterr().err
    assert err.startswith("muster explain: cannot connect to a cluster (no kubeconfig")
    assert err.endswith("\n") and err.count("\n") == 1


def test_the_kubeconfig_is_the_flag_then_the_variable_then_the_home_file(tmp_path: Path) -> None:
    home_file = tmp_path / ".kube" / "config"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path))
        assert find_kubeconfig(None, {}) is None  # in-cluster
        home_file.parent.mkdir()
        home_file.write_text("apiVersion: v1\n")
        assert find_kubeconfig(None, {}) == str(home_file)
        assert find_kubeconfig(None, {"KUBECONFIG": "/env"}) == "/env"
        assert find_kubeconfig("/flag", {"KUBECONFIG": "/env"}) == "/flag"


def test_a_missing_pod_group_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class EmptyCluster:
        async def close(self) -> None:
            pass

    async def connect(kubeconfig: str | None) -> EmptyCluster:
        return EmptyCluster()

    async def load_snapshot(kube: EmptyCluster) -> LiveCache:
        return LiveCache()

    monkeypatch.setattr(explain, "connect", connect)
    monkeypatch.setattr(explain, "load_snapshot", load_snapshot)
    assert main(["explain", "podgroup", "train", "-n", "ml", "--kubeconfig", "k"]) == 1
    assert capsys.readouterr().err == "PodGroup ml/train not found\n"


async def test_the_live_snapshot_gives_the_verdict_simulate_gives() -> None:
    """4 pods of 4 GPUs on 4 nodes of 4 GPUs, one GPU taken by a plain pod elsewhere."""
    objects: list[dict[str, Any]] = [
        *(node(f"gpu-{index}", gpu="4") for index in range(4)),
        pod("plain", namespace="other", cpu=None, gpu="1", node_name="gpu-0", phase="Running"),
        pod("done", namespace="other", cpu=None, gpu="4", node_name="gpu-1", phase="Succeeded"),
        pod_group("train", min_count=4, namespace="ml"),
        *(
            pod(f"train-{index}", group="train", namespace="ml", cpu=None, gpu="4")
            for index in range(4)
        ),
    ]
    report = simulate([Document("cluster.yaml", 1, obj) for obj in objects], now=None)
    (simulated,) = report.pod_groups

    class ListingCluster(ListingKube):
        async def list_all(
            self, path: str, *, query: Mapping[str, str] | None = None
        ) -> tuple[list[dict[str, Any]], str]:
            kind = {"nodes": "Node", "pods": "Pod", "podgroups": "PodGroup"}.get(
                path.rsplit("/", 1)[-1]
            )
            items = [
                {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}
                for obj in objects
                if obj["kind"] == kind
            ]
            return items, "1"

    cache = await load_snapshot(ListingCluster({}))  # type: ignore[arg-type]
    live = schedule(cache.state, now=0.0, config=EngineConfig())
    assert live.verdicts[GroupKey("ml", "train")].message == simulated.message
    assert "short in total: nvidia.com/gpu (needs 16, 15 free)" in simulated.message


def test_a_waiting_gang_is_told_when_it_starts_and_what_it_waits_for(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    running = pod_group("a", min_count=1, namespace="ml", admitted=True, plan={"a-0": "gpu"})
    running["metadata"]["annotations"] = {"scheduling.muster.dev/expected-runtime": "2h"}
    worker = pod("a-0", group="a", namespace="ml", cpu=None, gpu="4", node_name="gpu")
    worker["status"] = {"phase": "Running", "startTime": "2026-01-01T08:42:00Z"}
    cache = LiveCache()
    for obj in (
        node("gpu", gpu="4"),
        running,
        worker,
        pod_group("train", min_count=1, namespace="ml"),
        pod("train-0", group="train", namespace="ml", cpu=None, gpu="4"),
    ):
        assert cache.state.apply(obj["kind"], obj).rejected is None
    cache.pod_groups.put(KEY, pod_group("train", min_count=1, namespace="ml"))

    class Cluster:
        async def close(self) -> None:
            pass

    async def connect(kubeconfig: str | None) -> Cluster:
        return Cluster()

    async def load_snapshot(kube: Cluster) -> LiveCache:
        return cache

    monkeypatch.setattr(explain, "connect", connect)
    monkeypatch.setattr(explain, "load_snapshot", load_snapshot)
    monkeypatch.setattr("time.time", lambda: 1_767_254_400.0)  # 08:00 UTC
    assert main(["explain", "podgroup", "train", "-n", "ml", "--kubeconfig", "k"]) == 0
    out = capsys.readouterr().out
    assert "Start:    ~2h42m (at 10:42 UTC)\n" in out
    assert (
        "Waits for: needs 4 nvidia.com/gpu; node gpu frees them at ~10:42 UTC when ml/a ends "
        "(expected runtime 2h, declared)\n"
    ) in out


def test_a_sliced_gang_is_shown_its_slices_and_the_domain_closest_to_one() -> None:
    racks = [node(f"n{index}", cpu="4", labels={"rack": f"r{index // 2}"}) for index in range(4)]
    group = pod_group("train", namespace="ml", min_count=6, slicing=("rack", 6))
    members = [pod(f"train-{index}", group="train", namespace="ml", cpu="2") for index in range(6)]
    result = schedule(cluster(*racks, group, *members), now=0.0, config=EngineConfig())
    lines = render(KEY, {}, result).splitlines()
    assert "Pods:     needs 6, 6 exist, at most 0 fit at once" in lines
    assert (
        "Slices:   of 6 pods, each in one rack domain; none has room for one, at most 4 (rack=r0)"
    ) in lines


def test_a_gang_claiming_devices_is_shown_the_devices_free_per_node() -> None:
    state = cluster(
        node("n1"),
        node("n2"),
        resource_slice("n1", 2),
        resource_slice("n2", 4),
        claim("busy", allocated=[("n2", "gpu-0")]),
        pod("w-0", group="train", namespace="ml", spec=from_template("one-gpu")),
        pod("other", group="web", namespace="ml"),
    )
    assert claims_devices(state, KEY)
    assert not claims_devices(state, GroupKey("ml", "web"))
    assert render_devices(devices_per_node(state)).splitlines() == [
        "",
        "NODE  DEVICES FREE",
        "n2    3/4",
        "n1    2/2",
    ]


def test_a_long_list_of_nodes_with_devices_is_cut_and_none_is_said() -> None:
    many = [NodeDevices(f"n{index:02}", 1, 1) for index in range(DEVICE_ROWS + 3)]
    assert render_devices(many).splitlines()[-1] == "... and 3 more node(s) with devices"
    assert "no node publishes devices" in render_devices([])
