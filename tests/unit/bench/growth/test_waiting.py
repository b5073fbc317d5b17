from __future__ import annotations

from bench.e2e.workload import GPU
from bench.growth.waiting import NAMESPACE, PAIR, POOL, POOL_LABEL, PRIORITY_CLASS, waiting_manifest

from muster.api.constants import MIN_COUNT_ANNOTATION, POLICY_GANG, POLICY_LABEL


def test_a_waiting_gang_is_a_pair_of_whole_nodes_pinned_to_the_pool_below_everyone() -> None:
    manifest = waiting_manifest(7, gpus_per_node=8)
    assert manifest["metadata"]["name"] == "waiting-00007"
    assert manifest["metadata"]["namespace"] == NAMESPACE
    assert manifest["metadata"]["labels"][POLICY_LABEL] == POLICY_GANG
    assert manifest["metadata"]["annotations"][MIN_COUNT_ANNOTATION] == str(PAIR)
    assert manifest["spec"]["parallelism"] == PAIR
    pod = manifest["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {POOL_LABEL: POOL}
    assert pod["priorityClassName"] == PRIORITY_CLASS
    assert pod["containers"][0]["resources"]["requests"][GPU] == "8"
