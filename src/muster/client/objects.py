"""Whole-object requests built on the client: read one that may be missing, apply one."""

from __future__ import annotations

from muster.api.keys import resource_version
from muster.api.wire import JsonObject
from muster.client.kube import Kube, KubeError


async def get_or_none(kube: Kube, path: str) -> JsonObject | None:
    """The object at `path`, or None when there is none (the API's 404)."""
    try:
        return await kube.request("GET", path)
    except KubeError as error:
        if error.not_found:
            return None
        raise


async def apply_object(kube: Kube, obj: JsonObject) -> JsonObject:
    """Create a cluster-scoped object, or replace it with this content if it exists."""
    api_version = str(obj["apiVersion"])
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    collection = f"{prefix}/{str(obj['kind']).lower()}s"
    name = obj["metadata"]["name"]
    current = await get_or_none(kube, f"{collection}/{name}")
    if current is None:
        return await kube.request("POST", collection, body=obj)
    metadata = {**obj["metadata"], "resourceVersion": resource_version(current)}
    return await kube.request("PUT", f"{collection}/{name}", body={**obj, "metadata": metadata})
