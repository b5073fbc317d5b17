from __future__ import annotations

from muster.client.paths import LEASES, POD_GROUPS, PODS, WORKLOADS, namespaced


def test_namespaced_narrows_a_collection_to_a_namespace_or_an_object() -> None:
    assert namespaced(PODS, "ml", "train-0") == "/api/v1/namespaces/ml/pods/train-0"
    assert namespaced(LEASES, "muster") == "/apis/coordination.k8s.io/v1/namespaces/muster/leases"
    assert namespaced(POD_GROUPS, "ml", "train") == (
        "/apis/scheduling.muster.dev/v1beta1/namespaces/ml/podgroups/train"
    )
    assert namespaced(WORKLOADS, "ml") == (
        "/apis/scheduling.muster.dev/v1beta1/namespaces/ml/workloads"
    )
