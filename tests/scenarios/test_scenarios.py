"""Every scenario file through `muster simulate`, checked against what it must show.

A scenario is `<name>.yaml` (the cluster and its workloads) beside
`<name>.expected.yaml`, which states the outcome that matters rather than every word:

    podGroups:                 # every PodGroup of the report, no more, no fewer
      <namespace>/<name>:
        scheduled: true        # required
        reason: Scheduled      # required
        placed: 4              # pods this run placed
        preempted: false       # default false
        message: [fragment]    # each must appear in the message
        nodes: [n1, n2]        # every placement on one of these
        placements: {pod: n1}  # these placements exactly
        sameNode: true         # all placements on one node
    victims: [ns/pod, ...]     # exactly these pods preempted (any order)

Whatever the expectation, the final placement must be feasible (checked by
`feasibility`, independently of the engine), and a gang that is not scheduled has
no placement.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from muster.cli import main
from muster.cli.simulate import read_documents
from muster.simulation.expansion import expand
from muster.simulation.inventory import take_inventory
from muster.simulation.pods import is_finished
from tests.scenarios.feasibility import placement_problems

HERE = Path(__file__).parent
SCENARIOS = sorted(path for path in HERE.glob("*.yaml") if not path.name.endswith(".expected.yaml"))
REQUIRED = ("scheduled", "reason")


def expectation_of(scenario: Path) -> dict[str, Any]:
    expected: dict[str, Any] = yaml.safe_load(scenario.with_suffix(".expected.yaml").read_text())
    return expected


AT = "2026-01-01T10:05:00Z"
"""The clock of every scenario: just after its newest object was made (their stories,
an older gang and a newer one, are told minutes apart on that day)."""


def simulate_json(scenario: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main(["simulate", str(scenario), "-o", "json", "--at", AT])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report: dict[str, Any] = json.loads(captured.out)
    return report


def test_every_scenario_has_an_expectation() -> None:
    assert len(SCENARIOS) >= 14
    for scenario in SCENARIOS:
        assert scenario.with_suffix(".expected.yaml").exists(), scenario.name


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda path: path.stem)
def test_scenario(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = expectation_of(scenario)
    report = simulate_json(scenario, capsys)
    groups = {f"{group['namespace']}/{group['name']}": group for group in report["podGroups"]}
    assert sorted(groups) == sorted(expected["podGroups"])
    for name, wanted in expected["podGroups"].items():
        check_group(name, groups[name], wanted)
    victims = sorted(f"{victim['namespace']}/{victim['name']}" for victim in report["victims"])
    assert victims == sorted(expected["victims"])
    assert feasibility_problems(scenario, report) == []


def check_group(name: str, group: dict[str, Any], wanted: dict[str, Any]) -> None:
    for field in REQUIRED:
        assert group[field] == wanted[field], (name, field, group)
    assert group["preempted"] == wanted.get("preempted", False), (name, group)
    placements: dict[str, str] = group["placements"]
    if "placed" in wanted:
        assert len(placements) == wanted["placed"], (name, placements)
    if not group["scheduled"]:
        assert placements == {}, (name, "a waiting gang holds nothing")
    for fragment in wanted.get("message", []):
        assert fragment in group["message"], (name, fragment, group["message"])
    if "nodes" in wanted:
        assert set(placements.values()) <= set(wanted["nodes"]), (name, placements)
    for pod, node in (wanted.get("placements") or {}).items():
        assert placements.get(pod) == node, (name, pod, placements)
    if wanted.get("sameNode"):
        assert len(set(placements.values())) == 1, (name, placements)


def feasibility_problems(scenario: Path, report: dict[str, Any]) -> list[str]:
    """Check the cluster the report describes: input pods still bound, plus placements."""
    inventory = take_inventory(read_documents(str(scenario)))
    expansion = expand(inventory)
    nodes = {entry.name: entry.body for entry in inventory.nodes}
    pods = {entry.name: entry.body for entry in expansion.pods}
    victims = {victim["name"] for victim in report["victims"]}
    final_nodes = {
        name: pod["spec"]["nodeName"]
        for name, pod in pods.items()
        if pod["spec"].get("nodeName") and not is_finished(pod) and name not in victims
    }
    for group in report["podGroups"]:
        final_nodes.update(group["placements"])
    topology_keys = {
        entry.name: constraints["topology"][0]["key"]
        for entry in expansion.pod_groups
        if (constraints := entry.body["spec"].get("schedulingConstraints"))
    }
    return placement_problems(nodes, pods, final_nodes, topology_keys)


def test_reports_are_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = HERE / "preemption.yaml"
    assert simulate_json(scenario, capsys) == simulate_json(scenario, capsys)


def test_the_installed_command_gives_the_same_report(capsys: pytest.CaptureFixture[str]) -> None:
    scenario = HERE / "launcher-and-workers.yaml"
    command = Path(sys.executable).with_name("muster")
    completed = subprocess.run(
        [str(command), "simulate", str(scenario), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == simulate_json(scenario, capsys)
