"""Where the API server is, how to reach it, and whom it knows this client as.

Followed client-go (k8s.io/client-go v0.37.2): `rest.InClusterConfig` for the
in-cluster server's address, and for the proxy the `http.ProxyFromEnvironment` that
apimachinery's `util/net.SetTransportDefaults` gives every transport, which never
proxies a loopback address.
"""

from __future__ import annotations

import ipaddress
import logging
import urllib.parse
import urllib.request
from collections.abc import Mapping

from kubernetes_asyncio import client, config

from muster.client.kube import Kube, KubeError

logger = logging.getLogger(__name__)


async def connect(kubeconfig: str | None, *, user_agent: str = "muster") -> Kube:
    """Load credentials from a kubeconfig file, or from the pod's service account.

    `user_agent` names this replica in the API server's audit log and metrics, so the
    requests of two replicas that share credentials can be told apart.
    """
    configuration = client.Configuration()
    if kubeconfig:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    if not configuration.proxy:
        configuration.proxy = proxy_from_environment(configuration.host or "")
    api_client = client.ApiClient(configuration)
    # kubernetes_asyncio opens its session with trust_env=True: aiohttp then reads the
    # proxy variables and looks for ~/.netrc (in a thread of its own) on every request,
    # a tenth of the operator's CPU in a burst of releases. The proxy is read once,
    # above; credentials come from the kubeconfig, never from a netrc.
    api_client.rest_client.pool_manager._trust_env = False
    api_client.user_agent = user_agent
    return Kube(api_client)


def proxy_from_environment(server: str) -> str | None:
    """The proxy the environment names for the API server's URL (`HTTPS_PROXY`,
    `NO_PROXY`...), as client-go's ProxyFromEnvironment reads them, which never
    proxies a loopback address; None for none."""
    url = urllib.parse.urlsplit(server)
    if (
        not url.hostname
        or is_loopback_host(url.hostname)
        or urllib.request.proxy_bypass(url.hostname)
    ):
        return None
    return urllib.request.getproxies().get(url.scheme or "https")


def in_cluster_server(environment: Mapping[str, str]) -> str | None:
    """The API server's URL as client-go's InClusterConfig takes it, from
    `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` (joined as
    net.JoinHostPort joins them); None unless both are set.

    kubernetes_asyncio's in-cluster configuration reads them too, while kopf's
    service-account login names `https://kubernetes.default.svc`, which needs the
    cluster's DNS and the port 443: both clients must reach the same server.
    """
    host = environment.get("KUBERNETES_SERVICE_HOST")
    port = environment.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        return None
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def is_loopback_host(host: str) -> bool:
    """Whether a URL's host is this machine's loopback: `localhost`, or a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


SELF_SUBJECT_REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


async def own_user(kube: Kube) -> str | None:
    """The user name the API server knows this client by; None where it cannot say
    (before Kubernetes 1.28, or a review refused)."""
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        answer = await kube.request("POST", SELF_SUBJECT_REVIEWS, body=review)
    except KubeError as error:
        logger.warning("cannot learn this client's user name: %s", error)
        return None
    name = ((answer.get("status") or {}).get("userInfo") or {}).get("username")
    return name if isinstance(name, str) and name else None
