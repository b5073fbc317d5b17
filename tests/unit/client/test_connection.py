"""Reaching the API server: its address in a cluster, the proxy, the session's settings."""

from __future__ import annotations

from typing import Any

import pytest

from muster.client.connection import connect, in_cluster_server, proxy_from_environment
from tests.unit.client.kubeconfig import token_kubeconfig


def test_the_proxy_comes_from_the_environment_once_and_never_for_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert proxy_from_environment("https://api.example:6443") == "http://proxy.example:3128"
    assert proxy_from_environment("https://api.internal.example:6443") is None
    assert proxy_from_environment("https://127.0.0.1:6443") is None
    assert proxy_from_environment("https://localhost:6443") is None


async def test_the_client_reads_no_environment_per_request(tmp_path: Any) -> None:
    kubeconfig = token_kubeconfig(tmp_path / "kubeconfig")
    kube = await connect(str(kubeconfig))
    session = kube.api_client.rest_client.pool_manager
    assert session.trust_env is False
    await kube.api_client.close()


def test_the_in_cluster_server_is_the_one_the_service_variables_name() -> None:
    """As client-go's InClusterConfig: both variables, joined as net.JoinHostPort."""
    assert (
        in_cluster_server({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"})
        == "https://10.0.0.1:443"
    )
    assert (
        in_cluster_server({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"})
        == "https://[fd00::1]:6443"
    )
    assert in_cluster_server({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) is None
    assert in_cluster_server({}) is None
