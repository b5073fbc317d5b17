"""The one registry of filters: kube-scheduler's order, each reason written once, and
the three places that judge or explain nodes iterating it."""

from __future__ import annotations

import ast
from pathlib import Path

from muster.scheduler.placement.interpod_filter import REASONS
from muster.scheduler.rules import filters
from muster.scheduler.rules.filters import FILTERS, STAGES, Stage, of_stage

SCHEDULER = Path(filters.__file__).parents[1]

# kube-scheduler v1.37.2's Filter plugins, in the order its default profile enables
# them (pkg/scheduler/apis/config/v1/default_plugins.go), as far as Muster models them.
UPSTREAM_ORDER = (
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeBinding",
    "PodTopologySpread",
    "InterPodAffinity",
)


def test_each_filter_is_registered_once() -> None:
    names = [entry.name for entry in FILTERS]
    assert len(names) == len(set(names))


def test_the_stages_run_in_one_order_and_group_their_filters() -> None:
    assert STAGES == (Stage.NODE, Stage.CYCLE, Stage.GANG, Stage.RESOURCES, Stage.INTER_POD)
    assert [entry.stage for entry in FILTERS] == sorted(
        (entry.stage for entry in FILTERS), key=STAGES.index
    )


def test_within_a_stage_the_filters_keep_kube_schedulers_order() -> None:
    """Across stages Muster departs from it in one place: volumes are judged with the
    shape's cached filter, before resources (a node they refuse is refused whatever is
    free); each node is still counted for one reason only."""
    for stage in STAGES:
        modelled = [entry.name for entry in of_stage(stage) if entry.name in UPSTREAM_ORDER]
        assert modelled == sorted(modelled, key=UPSTREAM_ORDER.index)


def test_the_inter_pod_reasons_are_the_registrys_in_order() -> None:
    assert REASONS == (
        filters.SPREAD_LABEL_MISSING,
        filters.SPREAD_NOT_MATCHED,
        filters.AFFINITY_NOT_MATCHED,
        filters.ANTI_AFFINITY_NOT_MATCHED,
        filters.EXISTING_ANTI_AFFINITY,
    )


def test_predicates_board_and_explanation_iterate_the_registry() -> None:
    for module in ("state/predicates.py", "cycle/board.py", "placement/explain.py"):
        source = (SCHEDULER / module).read_text()
        assert "of_stage(" in source, module


def test_each_fixed_reason_is_written_in_the_registry_only() -> None:
    reasons = {reason for entry in FILTERS for reason in entry.reasons}
    for path in SCHEDULER.rglob("*.py"):
        if path.name == "filters.py":
            continue
        literals = {
            node.value
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        assert not literals & reasons, path
