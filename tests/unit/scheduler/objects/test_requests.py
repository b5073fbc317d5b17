"""Pod requests: containers, init containers, sidecars and overhead, as kube-scheduler sums them."""

from __future__ import annotations

from typing import Any

import pytest

from muster.scheduler.objects.quantity import QuantityError
from muster.scheduler.objects.requests import pod_requests


def container(cpu: str | None = None, memory: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    return {"name": "c", "resources": {"requests": requests}, **extra}


def test_containers_add_up() -> None:
    spec = {"containers": [container("500m", "1Gi"), container("1", "1Gi")]}
    assert pod_requests(spec) == {"cpu": 1500, "memory": 2 * 2**30}


def test_an_init_container_larger_than_the_containers_sets_the_request() -> None:
    spec = {"containers": [container("1", "1Gi")], "initContainers": [container("3", "512Mi")]}
    assert pod_requests(spec) == {"cpu": 3000, "memory": 2**30}


def test_init_containers_take_the_maximum_not_the_sum() -> None:
    spec = {
        "containers": [container("1")],
        "initContainers": [container("2"), container("3")],
    }
    assert pod_requests(spec) == {"cpu": 3000}


def test_sidecars_run_beside_the_containers() -> None:
    spec = {
        "containers": [container("1")],
        "initContainers": [container("500m", restartPolicy="Always")],
    }
    assert pod_requests(spec) == {"cpu": 1500}


def test_init_containers_after_a_sidecar_run_beside_it() -> None:
    spec = {
        "containers": [container("1")],
        "initContainers": [
            container("1", restartPolicy="Always"),
            container("3"),
        ],
    }
    # init phase peak: 3 (init) + 1 (sidecar started before it) = 4 > 1 + 1
    assert pod_requests(spec) == {"cpu": 4000}


def test_init_containers_before_a_sidecar_do_not_overlap_it() -> None:
    spec = {
        "containers": [container("1")],
        "initContainers": [
            container("3"),
            container("1", restartPolicy="Always"),
        ],
    }
    assert pod_requests(spec) == {"cpu": 3000}


def test_overhead_comes_on_top() -> None:
    spec = {
        "containers": [container("1", "1Gi")],
        "initContainers": [container("2")],
        "overhead": {"cpu": "250m", "memory": "128Mi"},
    }
    assert pod_requests(spec) == {"cpu": 2250, "memory": 2**30 + 128 * 2**20}


def test_limits_stand_in_for_missing_requests() -> None:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}
    assert pod_requests(spec) == {"nvidia.com/gpu": 2}


def test_explicit_requests_win_over_limits() -> None:
    spec = {
        "containers": [
            {"name": "c", "resources": {"limits": {"cpu": "4"}, "requests": {"cpu": "1"}}}
        ]
    }
    assert pod_requests(spec) == {"cpu": 1000}


def test_a_pod_without_requests_asks_for_nothing() -> None:
    assert pod_requests({"containers": [{"name": "c"}]}) == {}


def test_malformed_resources_are_an_error() -> None:
    with pytest.raises(QuantityError):
        pod_requests({"containers": [container("lots")]})
    with pytest.raises(QuantityError):
        pod_requests({"containers": "not a list"})
