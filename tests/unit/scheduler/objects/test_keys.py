from muster.scheduler.objects.keys import object_key, resource_version, revision


def test_object_key_of_namespaced_and_cluster_scoped_objects() -> None:
    assert object_key({"metadata": {"namespace": "ns", "name": "p"}}) == ("ns", "p")
    assert object_key({"metadata": {"name": "node-1"}}) == ("", "node-1")
    assert object_key({}) == ("", "")


def test_resource_version_as_written_and_as_a_number() -> None:
    pod = {"metadata": {"resourceVersion": "42"}}
    assert resource_version(pod) == "42"
    assert revision(pod) == 42
    assert resource_version({"metadata": {}}) == ""
    assert revision({"metadata": {}}) is None
    assert revision({"metadata": {"resourceVersion": "opaque"}}) is None
