"""Whole-object requests built on the client."""

from __future__ import annotations

import pytest

from muster.client.kube import KubeError
from muster.client.objects import get_or_none
from tests.unit.client.test_kube import OK, Response, ScriptedApiClient, client


async def test_get_or_none_is_none_for_a_missing_object_and_raises_other_errors() -> None:
    missing = Response(404, {"reason": "NotFound"})
    assert await get_or_none(client(ScriptedApiClient(OK)), "/api/v1/pods/x") == {"kind": "Pod"}
    assert await get_or_none(client(ScriptedApiClient(missing)), "/api/v1/pods/x") is None
    with pytest.raises(KubeError):
        await get_or_none(client(ScriptedApiClient(Response(403, {}))), "/api/v1/pods/x")
