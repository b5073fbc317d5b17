"""What the API server serves, asked once when the operator starts.

An optional API (Kueue's, or Dynamic Resource Allocation's, which clusters before
Kubernetes 1.34 do not serve) is watched only where it is served; what that turns
off, and why, is :class:`muster.api.features.ServedFeatures`'s to say.
"""

from __future__ import annotations

from muster.api.features import DEVICES_API, KUEUE_API, ServedFeatures
from muster.client.kube import Kube
from muster.client.objects import get_or_none


async def served(kube: Kube, api: str) -> bool:
    """Whether the API server serves the group version at `api` (`/apis/GROUP/VERSION`):
    an optional API, such as Kueue's, is watched only where it is installed."""
    return await get_or_none(kube, api) is not None


async def served_features(kube: Kube) -> ServedFeatures:
    """The API server's version and which of the optional APIs it serves."""
    version = await get_or_none(kube, "/version") or {}
    return ServedFeatures(
        kubernetes=str(version.get("gitVersion") or ""),
        devices=await served(kube, f"/apis/{DEVICES_API}"),
        kueue=await served(kube, f"/apis/{KUEUE_API}"),
    )
