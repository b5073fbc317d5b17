"""The patches that bring a resized gang Job's Workload template and PodGroup along."""

from __future__ import annotations

from muster.api.resize import current_min_count, min_count_patch

POD_GROUP = {"kind": "PodGroup", "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
WORKLOAD = {
    "kind": "Workload",
    "spec": {
        "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]
    },
}


def test_the_podgroup_patch_tests_the_old_value_and_replaces_it() -> None:
    path = "/spec/schedulingPolicy/gang/minCount"
    assert min_count_patch(POD_GROUP, 4) == [
        {"op": "test", "path": path, "value": 2},
        {"op": "replace", "path": path, "value": 4},
    ]
    assert current_min_count(POD_GROUP) == 2


def test_the_workload_patch_changes_the_job_template() -> None:
    patch = min_count_patch(WORKLOAD, 3)
    assert patch is not None
    assert patch[1] == {
        "op": "replace",
        "path": "/spec/podGroupTemplates/0/schedulingPolicy/gang/minCount",
        "value": 3,
    }


def test_nothing_to_change_for_the_same_size_or_a_basic_group() -> None:
    assert min_count_patch(POD_GROUP, 2) is None
    assert (
        min_count_patch({"kind": "PodGroup", "spec": {"schedulingPolicy": {"basic": {}}}}, 2)
        is None
    )
