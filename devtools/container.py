"""Muster's image (`make image`) run with podman as the chart's Deployment runs its pod.

What the kubelet would do for the Deployment's container is read from the rendered
Deployment, not restated here: its user and group (`runAsUser`, `runAsGroup`), its
read-only root, the capabilities it drops, no privilege escalation, and its emptyDir
volumes (each a tmpfs of the volume's `sizeLimit`). The ServiceAccount's token, the
cluster's CA and the namespace are mounted where the kubelet mounts them, and
`KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT` name the API server, so the
operator takes the in-cluster configuration as in a pod; it is given no kubeconfig.

What differs from a pod, because there is no kubelet: the container shares the host's
network, so the caller chooses the addresses (as for a local process,
devtools/installed.py); podman runs it with runc and explicit ulimits, since crun refuses
some hosts' cgroup layouts and podman's default ulimits may exceed the host's hard
limits.
"""

from __future__ import annotations

import base64
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from devtools import installed
from devtools.builds import ROOT
from devtools.kubectl import Kubectl

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
RUNTIME = (
    "--runtime=runc",
    "--network=host",
    "--ulimit=nofile=16384:16384",
    "--ulimit=nproc=1024:1024",
    "--http-proxy=false",
)


def image() -> str:
    """The tag `make image` gives: muster:<version> in podman's store."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return f"localhost/muster:{project['version']}"


def mount_service_account(kubeconfig: Path, directory: Path) -> Path:
    """`directory` filled as the kubelet fills a pod's ServiceAccount volume: a token of
    the operator's ServiceAccount (the TokenRequest API), the API server's CA and the
    namespace, readable by any user (the projected volume's default mode, 0644)."""
    admin = Kubectl(kubeconfig).json("config", "view", "--raw", "--flatten", "--minify")
    authority = admin["clusters"][0]["cluster"]["certificate-authority-data"]
    token = installed.service_account_token(kubeconfig)
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    for name, content in (
        ("token", token.encode()),
        ("ca.crt", base64.b64decode(authority)),
        ("namespace", installed.NAMESPACE.encode()),
    ):
        path = directory / name
        path.write_bytes(content)
        path.chmod(0o644)
    return directory


def service_environment(kubeconfig: Path) -> dict[str, str]:
    """`KUBERNETES_SERVICE_HOST` and `_PORT`: the API server of `kubeconfig`, as the
    kubelet names the `kubernetes` Service to every pod."""
    admin = Kubectl(kubeconfig).json("config", "view", "--minify")
    server = urlsplit(admin["clusters"][0]["cluster"]["server"])
    return {
        "KUBERNETES_SERVICE_HOST": server.hostname or "",
        "KUBERNETES_SERVICE_PORT": str(server.port or 443),
    }


def local_environment(
    kubeconfig: Path,
    settings: dict[str, str],
    *,
    webhook_port: int,
    health_port: int,
    identity: str,
) -> dict[str, str]:
    """The container's environment: the Deployment's `settings`
    (`installed.install`), the API server's address, and on the host's network the
    addresses and identity a local process would choose."""
    return {
        **settings,
        **service_environment(kubeconfig),
        "MUSTER_WEBHOOK_HOST": "127.0.0.1",
        "MUSTER_WEBHOOK_PORT": str(webhook_port),
        "MUSTER_HEALTH_HOST": "127.0.0.1",
        "MUSTER_HEALTH_PORT": str(health_port),
        "MUSTER_IDENTITY": identity,
    }


@dataclass(frozen=True)
class ImageRun:
    """The image run as the Deployment's container: `tag`, the rendered `deployment`
    whose container and pod settings it takes, and the directory mounted as the
    ServiceAccount's (`mount_service_account`)."""

    tag: str
    deployment: dict[str, Any]
    service_account: Path

    @classmethod
    def prepared(cls, kubeconfig: Path, tag: str, service_account: Path) -> ImageRun:
        """`tag` run as the installed Deployment of the cluster of `kubeconfig`, with a
        token of its ServiceAccount mounted from `service_account`."""
        return cls(
            tag=tag,
            deployment=installed.deployment(installed.rendered(kubeconfig)),
            service_account=mount_service_account(kubeconfig, service_account),
        )

    def command(
        self,
        *,
        name: str,
        environment: dict[str, str],
        volumes: dict[Path, str] | None = None,
        arguments: tuple[str, ...] = (),
    ) -> list[str]:
        """`podman run` in the foreground as the Deployment's container, named `name`,
        with `environment` (the Deployment's settings and the API server's address),
        the ServiceAccount mounted where the kubelet mounts it, `volumes` (host
        directory: path in the container) mounted writable beyond the Deployment's
        own, and `arguments` after the image's entry point (`muster run`)."""
        pod = self.deployment["spec"]["template"]["spec"]
        [container] = pod["containers"]
        pod_security = pod.get("securityContext", {})
        security = {**pod_security, **container.get("securityContext", {})}
        command = ["podman", "run", "--rm", "--replace", f"--name={name}", *RUNTIME]
        command.append(f"--user={security['runAsUser']}:{security['runAsGroup']}")
        if security.get("readOnlyRootFilesystem"):
            # Only the Deployment's volumes are writable, not podman's usual /run and /tmp.
            command += ["--read-only", "--read-only-tmpfs=false"]
        if security.get("allowPrivilegeEscalation") is False:
            command.append("--security-opt=no-new-privileges")
        command += [f"--cap-drop={capability}" for capability in security["capabilities"]["drop"]]
        empty_dirs = {
            volume["name"]: volume["emptyDir"] for volume in pod["volumes"] if "emptyDir" in volume
        }
        for mount in container["volumeMounts"]:
            if mount["name"] in empty_dirs:
                size = empty_dirs[mount["name"]].get("sizeLimit")
                options = f":size={tmpfs_size(size)}" if size else ""
                command.append(f"--tmpfs={mount['mountPath']}{options}")
        command.append(f"--volume={self.service_account}:{SERVICE_ACCOUNT_DIR}:ro")
        command += [f"--volume={host}:{path}" for host, path in (volumes or {}).items()]
        command += [f"--env={key}={value}" for key, value in sorted(environment.items())]
        return [*command, self.tag, *arguments]


def tmpfs_size(quantity: str) -> str:
    """A Kubernetes quantity in binary units (`16Mi`) as tmpfs's size option (`16m`)."""
    for suffix, unit in (("Ki", "k"), ("Mi", "m"), ("Gi", "g")):
        if quantity.endswith(suffix):
            return quantity.removesuffix(suffix) + unit
    return quantity
