"""A thin JSON client over kubernetes_asyncio's connection handling.

The engine takes objects as plain mappings, exactly as the API server sends them, so
the operator never deserialises into kubernetes_asyncio's generated models: that
would cost CPU and memory per pod and then have to be undone. This module keeps
kubernetes_asyncio for what it is good at (kubeconfig, TLS, tokens) and speaks JSON.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from kubernetes_asyncio import client, config

JsonObject = dict[str, Any]

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class KubeError(Exception):
    """A non-2xx answer from the API server, with its status code and Status reason."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def transient(self) -> bool:
        """Worth retrying as is: throttling, timeouts, or the server's own trouble."""
        return self.status in (429, 504) or self.status >= 500


async def connect(kubeconfig: str | None) -> Kube:
    """Load credentials from a kubeconfig file, or from the pod's service account."""
    configuration = client.Configuration()
    if kubeconfig:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return Kube(client.ApiClient(configuration))


class Kube:
    """JSON requests and watch streams against one API server."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client

    async def close(self) -> None:
        await self.api_client.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int] | None = None,
        body: object = None,
        content_type: str = JSON,
        timeout: float = 30.0,
    ) -> JsonObject:
        """One request; the decoded JSON answer, or KubeError for any non-2xx status."""
        response = await self._call(
            method, path, query=query, body=body, content_type=content_type, timeout=timeout
        )
        try:
            payload = await response.read()
            if not 200 <= response.status <= 299:
                raise _error(response.status, payload)
            decoded: JsonObject = json.loads(payload) if payload else {}
            return decoded
        finally:
            response.release()

    async def list_pages(
        self, path: str, *, query: Mapping[str, str] | None = None, page_size: int = 500
    ) -> AsyncIterator[tuple[list[JsonObject], str]]:
        """A collection page by page, each with the list's resourceVersion so far.

        Pages let a caller digest 50,000 pods without ever holding them all as
        decoded objects at once.
        """
        params: dict[str, str | int] = dict(query or {})
        params["limit"] = page_size
        while True:
            page = await self.request("GET", path, query=params, timeout=120.0)
            kind = str(page.get("kind", "")).removesuffix("List")
            items: list[JsonObject] = page.get("items") or []
            for item in items:
                # List items come without kind and apiVersion; events need both.
                item.setdefault("kind", kind)
                item.setdefault("apiVersion", page.get("apiVersion", ""))
            metadata = page.get("metadata") or {}
            yield items, str(metadata.get("resourceVersion", ""))
            token = metadata.get("continue")
            if not token:
                return
            params["continue"] = token

    async def list_all(
        self, path: str, *, query: Mapping[str, str] | None = None
    ) -> tuple[list[JsonObject], str]:
        """Every item of a collection (paginated), and the list's resourceVersion."""
        everything: list[JsonObject] = []
        resource_version = ""
        async for items, version in self.list_pages(path, query=query):
            resource_version = version
            everything.extend(items)
        return everything, resource_version

    async def watch(
        self, path: str, *, resource_version: str, timeout_seconds: int, query: Mapping[str, str]
    ) -> AsyncIterator[JsonObject]:
        """Watch events (`{"type", "object"}`) from a resourceVersion, bookmarks included."""
        params: dict[str, str | int] = dict(query)
        params.update(
            watch="true",
            resourceVersion=resource_version,
            allowWatchBookmarks="true",
            timeoutSeconds=timeout_seconds,
        )
        response = await self._call(
            "GET", path, query=params, body=None, content_type=JSON, timeout=timeout_seconds + 30.0
        )
        try:
            if not 200 <= response.status <= 299:
                raise _error(response.status, await response.read())
            while True:
                line = await response.content.readline()
                if not line:
                    return
                if line.strip():
                    event: JsonObject = json.loads(line)
                    yield event
        finally:
            response.release()

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int] | None,
        body: object,
        content_type: str,
        timeout: float,
    ) -> Any:
        pairs: Sequence[tuple[str, str | int]] = list((query or {}).items())
        return await self.api_client.call_api(
            path,
            method,
            query_params=pairs,
            header_params={"Accept": JSON, "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _request_timeout=timeout,
        )


async def apply_object(kube: Kube, obj: JsonObject) -> JsonObject:
    """Create a cluster-scoped object, or replace it with this content if it exists."""
    api_version = str(obj["apiVersion"])
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    collection = f"{prefix}/{str(obj['kind']).lower()}s"
    name = obj["metadata"]["name"]
    try:
        current = await kube.request("GET", f"{collection}/{name}")
    except KubeError as error:
        if not error.not_found:
            raise
        return await kube.request("POST", collection, body=obj)
    replacement = {**obj, "metadata": {**obj["metadata"], **_version_of(current)}}
    return await kube.request("PUT", f"{collection}/{name}", body=replacement)


def _version_of(obj: JsonObject) -> JsonObject:
    return {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion")}


def _error(status: int, payload: bytes) -> KubeError:
    try:
        decoded = json.loads(payload)
    except ValueError:
        return KubeError(status, "", payload.decode(errors="replace"))
    if isinstance(decoded, dict):
        return KubeError(status, str(decoded.get("reason", "")), str(decoded.get("message", "")))
    return KubeError(status, "", str(decoded))
