"""The status writer against the real API server: a status computed from an older copy
of the PodGroup than the cache holds is not sent, one the cache could not know to be
stale meets a real 409, after which the group is read again, and of two writes of one
group at once only the first is sent.

The writer here runs in the test, beside the session's operator (which may write the
same PodGroup's status meanwhile: that only makes the copies older still).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess

from muster.api.constants import API_VERSION, GROUP, POD_GROUP_PLURAL
from muster.api.keys import GroupKey
from muster.client.connection import connect
from muster.client.kube import Kube
from muster.client.paths import POD_GROUPS, namespaced
from muster.operator.execution.writer import StatusWriter
from muster.operator.intake.cache import LiveCache

pytestmark = pytest.mark.e2e

PODGROUPS = f"{POD_GROUP_PLURAL}.{GROUP}"  # not the native kind of the same name
COUNTS = {"total": 0, "gated": 0, "scheduled": 0, "running": 0, "succeeded": 0, "failed": 0}
DESIRED = {"minCount": 2, "observedGeneration": 1, "pods": COUNTS}


class CountingKube:
    """The real client, counting the requests that go through it."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.sent: list[str] = []

    async def request(self, method: str, path: str, **options: Any) -> Any:
        self.sent.append(method)
        return await self.kube.request(method, path, **options)


def create_pod_group(kubectl: Kubectl, namespace: str) -> GroupKey:
    manifest = {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": "written", "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    kubectl("apply", "-f", "-", input=json.dumps(manifest))
    return GroupKey(namespace, "written")


async def test_stale_status_writes_are_not_sent_and_real_conflicts_read_again(
    kubectl: Kubectl, kubeconfig: Path, namespace: str, operator: OperatorProcess
) -> None:
    key = create_pod_group(kubectl, namespace)
    kube = await connect(str(kubeconfig))
    try:
        first = await kube.request("GET", namespaced(POD_GROUPS, *key))
        computed_from = first["metadata"]["resourceVersion"]
        kubectl("label", PODGROUPS, key.name, "-n", namespace, "touched=yes")

        seen = LiveCache()
        seen.apply_pod_group(await kube.request("GET", namespaced(POD_GROUPS, *key)))
        counting = CountingKube(kube)
        writer = StatusWriter(counting, seen)  # type: ignore[arg-type]
        assert not await writer.write(key, DESIRED, version=computed_from)
        assert counting.sent == []

        unaware = LiveCache()
        unaware.apply_pod_group(first)
        writer = StatusWriter(counting, unaware)  # type: ignore[arg-type]
        assert not await writer.write(key, DESIRED, version=computed_from)
        assert counting.sent == ["PUT", "GET"]  # the 409, then the group read again
        reread = unaware.pod_groups.get(key)
        assert reread is not None and reread["metadata"]["labels"]["touched"] == "yes"

        for _ in range(3):  # again if the operator wrote the group just before
            counting.sent.clear()
            kept = unaware.pod_groups.get(key)
            assert kept is not None
            current = kept["metadata"]["resourceVersion"]
            answers = await asyncio.gather(
                writer.write(key, DESIRED, version=current),
                writer.write(key, {**DESIRED, "minCount": 3}, version=current),
            )
            if answers[0]:
                break
        assert (answers[0], answers[1]) == (True, False)  # gather answers a list
        assert counting.sent == ["PUT"]  # the second waited its turn, then saw it was stale
        written = unaware.pod_groups.get(key)
        assert written is not None and written["status"] == DESIRED
    finally:
        await kube.close()
