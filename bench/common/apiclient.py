"""A small asynchronous JSON client for the API server, for the benchmark's own calls.

The benchmark creates Jobs in a burst and watches pods as they change; it needs raw
JSON and the moment each event arrives, nothing more. kubernetes_asyncio reads the
kubeconfig (TLS material, server address); aiohttp does the requests. Every request
says ``User-Agent: muster-bench`` (or the name its user gives: the floor client's is
its own), so the audit log can tell the benchmark's own requests from the ones it
measures.

Why not the operator's client (`muster.client.kube.Kube`): it is what the benchmark
measures. Its requests carry the operator's user agent, its rate limit and retries, and
its watches feed the operator's informers, so the benchmark's own load (the burst, the
watches that stamp each event on arrival) would count as the operator's in the audit
log and wait behind the operator's own client-side limit. A separate, unthrottled
client keeps the measured client and the measuring one apart.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config

USER_AGENT = "muster-bench"

JsonObject = dict[str, Any]


class ApiError(Exception):
    """A non-2xx answer, with the API server's status code and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


class ApiClient:
    """Requests and watches against one API server; use as an async context manager."""

    def __init__(self, server: str, tls: ssl.SSLContext, user_agent: str = USER_AGENT) -> None:
        self.server = server.rstrip("/")
        self._tls = tls
        self._user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    async def from_kubeconfig(cls, kubeconfig: Path, user_agent: str = USER_AGENT) -> ApiClient:
        settings = client.Configuration()
        await config.load_kube_config(config_file=str(kubeconfig), client_configuration=settings)
        tls = ssl.create_default_context(cafile=settings.ssl_ca_cert)
        if settings.cert_file:
            tls.load_cert_chain(settings.cert_file, settings.key_file)
        if not settings.host:
            raise ValueError(f"{kubeconfig} names no API server")
        return cls(settings.host, tls, user_agent)

    async def __aenter__(self) -> ApiClient:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._tls, limit=64),
            headers={"User-Agent": self._user_agent, "Accept": "application/json"},
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
        )
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("ApiClient used outside `async with`")
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        content_type: str = "application/json",
    ) -> JsonObject:
        data = None if body is None else json.dumps(body)
        async with self.session.request(
            method,
            self.server + path,
            data=data,
            headers={"Content-Type": content_type},
            timeout=aiohttp.ClientTimeout(total=60),
        ) as response:
            payload = await response.read()
            if not 200 <= response.status <= 299:
                raise ApiError(response.status, payload.decode(errors="replace"))
            decoded: JsonObject = json.loads(payload) if payload else {}
            return decoded

    async def text(self, path: str) -> str:
        """A GET answered in text (the API server's /metrics)."""
        async with self.session.get(
            self.server + path,
            headers={"Accept": "text/plain"},
            timeout=aiohttp.ClientTimeout(total=60),
        ) as response:
            payload = await response.read()
            if not 200 <= response.status <= 299:
                raise ApiError(response.status, payload.decode(errors="replace"))
            return payload.decode()

    async def create(self, path: str, body: Mapping[str, Any]) -> JsonObject:
        return await self.request("POST", path, body)

    async def _list_when_ready(self, path: str) -> JsonObject:
        """A list, retried while the API server answers 429 (e.g. a CRD's storage is
        still initializing just after the CRD was established) or 503."""
        while True:
            try:
                return await self.request("GET", path)
            except ApiError as error:
                if error.status not in (429, 503):
                    raise
            await asyncio.sleep(1)

    async def watch(
        self, path: str, listed: asyncio.Event | None = None
    ) -> AsyncIterator[tuple[str, JsonObject]]:
        """Every object of a collection as ``("ADDED", obj)``, then its changes, for ever.

        The initial list comes first (then ``listed`` is set); the watch resumes from
        the last resourceVersion when the server ends it, and lists again when that
        version has expired.
        """
        resource_version = ""
        while True:
            if not resource_version:
                listing = await self._list_when_ready(path)
                for item in listing.get("items") or []:
                    yield "ADDED", item
                resource_version = listing["metadata"]["resourceVersion"]
                if listed is not None:
                    listed.set()
            query = f"?watch=true&allowWatchBookmarks=true&resourceVersion={resource_version}"
            async with self.session.get(self.server + path + query) as response:
                if response.status == 410:
                    resource_version = ""
                    continue
                if response.status != 200:
                    raise ApiError(response.status, (await response.read()).decode())
                async for line in response.content:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    kind, obj = event["type"], event["object"]
                    if kind == "ERROR":
                        resource_version = "" if obj.get("code") == 410 else resource_version
                        break
                    resource_version = obj["metadata"]["resourceVersion"]
                    if kind != "BOOKMARK":
                        yield kind, obj


async def create_namespace(api: ApiClient, name: str) -> None:
    """A namespace and its default ServiceAccount: pods are refused until it exists."""
    await api.create("/api/v1/namespaces", {"metadata": {"name": name}})
    deadline = time.monotonic() + 60
    while True:
        try:
            await api.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")
            return
        except ApiError as error:
            if error.status != 404 or time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.2)
