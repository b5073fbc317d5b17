"""A member pod created bound to a node is told as a Warning on its PodGroup, with the
PodGroup's uid when it can be read."""

from __future__ import annotations

from typing import Any

from muster.api.constants import API_VERSION, POD_GROUP_LABEL
from muster.api.wire import JsonObject
from muster.client.kube import KubeError
from muster.operator.execution.bypass import REASON, BypassReporter
from muster.operator.execution.events import WARNING

POD = {
    "metadata": {"generateName": "train-", "namespace": "ml", "labels": {POD_GROUP_LABEL: "train"}},
    "spec": {"nodeName": "n1"},
}
STORED = {
    "apiVersion": API_VERSION,
    "kind": "PodGroup",
    "metadata": {"namespace": "ml", "name": "train", "uid": "u-1"},
}


class Kube:
    def __init__(self, answer: JsonObject | Exception) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, **_: Any) -> JsonObject:
        self.asked.append((method, path))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class Events:
    def __init__(self) -> None:
        self.recorded: list[tuple[JsonObject, str, str, str]] = []

    async def record(self, involved: JsonObject, kind: str, reason: str, message: str) -> None:
        self.recorded.append((involved, kind, reason, message))


async def report(answer: JsonObject | Exception) -> tuple[Kube, Events]:
    kube, events = Kube(answer), Events()
    await BypassReporter(kube, events)(POD)  # type: ignore[arg-type]
    return kube, events


async def test_the_event_names_the_pod_and_its_node_on_the_pod_group() -> None:
    kube, events = await report(STORED)
    assert kube.asked == [("GET", f"/apis/{API_VERSION}/namespaces/ml/podgroups/train")]
    ((involved, kind, reason, message),) = events.recorded
    assert (kind, reason) == (WARNING, REASON)
    assert involved["uid"] == "u-1" and involved["name"] == "train"
    assert message.startswith("pod train-… was created bound to node n1 (spec.nodeName)")


async def test_a_pod_group_that_cannot_be_read_is_named_without_its_uid() -> None:
    _, events = await report(KubeError(404, "NotFound", 'podgroups "train" not found'))
    ((involved, _, _, _),) = events.recorded
    assert involved == {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "namespace": "ml",
        "name": "train",
    }
