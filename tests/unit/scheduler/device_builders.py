"""Dynamic Resource Allocation objects for engine tests, as the API server returns them."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
DRIVER = "gpu.example.com"
GPU_CLASS = "gpu.example.com"


def resource_slice(
    node: str,
    devices: int = 8,
    *,
    product: str = "H100",
    memory: str = "80Gi",
    generation: int = 0,
    slice_count: int = 1,
    name: str | None = None,
    pool: str | None = None,
) -> Obj:
    """A node's slice of `devices` GPUs of one product, in the node's own pool (unless
    `pool` names another)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {
                "name": pool or node,
                "generation": generation,
                "resourceSliceCount": slice_count,
            },
            "devices": [
                {
                    "name": f"gpu-{index}",
                    "attributes": {"product": {"string": product}, "index": {"int": index}},
                    "capacity": {"memory": {"value": memory}},
                }
                for index in range(devices)
            ],
        },
    }


def device_class(name: str = GPU_CLASS, *expressions: str) -> Obj:
    selectors = expressions or (f'device.driver == "{DRIVER}"',)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": text}} for text in selectors]},
    }


def request(
    name: str = "gpu",
    *,
    count: int = 1,
    device_class_name: str = GPU_CLASS,
    selectors: tuple[str, ...] = (),
    all_devices: bool = False,
) -> Obj:
    exactly: Obj = {"deviceClassName": device_class_name}
    if all_devices:
        exactly["allocationMode"] = "All"
    else:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": text}} for text in selectors]
    return {"name": name, "exactly": exactly}


def claim_spec(*requests: Obj) -> Obj:
    return {"devices": {"requests": list(requests or (request(),))}}


def claim(
    name: str,
    *requests: Obj,
    namespace: str = "default",
    allocated: list[tuple[str, str]] | None = None,
) -> Obj:
    """A ResourceClaim; `allocated`: (pool, device) pairs of its status's allocation."""
    obj: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": claim_spec(*requests),
    }
    if allocated is not None:
        results = [
            {"request": "gpu", "driver": DRIVER, "pool": pool, "device": device}
            for pool, device in allocated
        ]
        obj["status"] = {"allocation": {"devices": {"results": results}}}
    return obj


def claim_template(name: str, *requests: Obj, namespace: str = "default") -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": claim_spec(*requests)},
    }


def from_template(template: str, claim_name: str = "gpu") -> Obj:
    """A pod spec fragment: one claim made from the template."""
    return {"resourceClaims": [{"name": claim_name, "resourceClaimTemplateName": template}]}


def sharing(claim_name: str, entry: str = "gpu") -> Obj:
    """A pod spec fragment: one claim named in the spec (shared by the pods naming it)."""
    return {"resourceClaims": [{"name": entry, "resourceClaimName": claim_name}]}


def nested_all(body: str, *, depth: int = 3, length: int = 30) -> str:
    """A CEL selector of `depth` nested `.all()` over lists of `length` numbers, with
    variables a, b, c, ... in `body`: cheap to write, and `length ** depth` steps to
    evaluate on every device."""
    numbers = "[" + ",".join(str(n) for n in range(1, length + 1)) + "]"
    expression = body
    for variable in reversed("abcdefgh"[:depth]):
        expression = f"{numbers}.all({variable}, {expression})"
    return expression
