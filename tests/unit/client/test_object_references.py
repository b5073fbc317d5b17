"""ObjectReferences to an object, and to its owners of one kind."""

from __future__ import annotations

from muster.client.object_references import owner_references, reference

JOB_OWNER = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j-1"}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "namespace": "ml",
        "name": "train-0",
        "uid": "p-1",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "r-1"},
            JOB_OWNER,
        ],
    },
}


def test_a_reference_names_the_object_with_its_uid() -> None:
    assert reference(POD) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ml",
        "name": "train-0",
        "uid": "p-1",
    }


def test_an_object_without_metadata_is_referred_to_with_empty_fields() -> None:
    assert reference({}) == {"apiVersion": "", "kind": "", "namespace": "", "name": "", "uid": ""}


def test_owner_references_keep_owners_of_the_kind_in_the_objects_namespace() -> None:
    assert owner_references(POD, "Job") == [{**JOB_OWNER, "namespace": "ml"}]
    assert owner_references(POD, "CronJob") == []
    assert owner_references({"metadata": {}}, "Job") == []
