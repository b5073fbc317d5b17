"""A replica of the installed operator run from the image (`make image`) with podman,
as the chart's Deployment runs it (hack/container.py), beside or instead of the
session's local process: the same installation, ServiceAccount and webhook stand-in."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hack import container, installed

from tests.e2e.cluster import ROOT
from tests.e2e.harness import OperatorProcess


@pytest.fixture(scope="session")
def image() -> str:
    """The image of this checkout, built afresh (hack/image.sh, on the bases and wheels
    it caches), so that the test runs what this checkout's `make image` gives."""
    subprocess.run([str(ROOT / "hack" / "image.sh")], check=True, cwd=ROOT)
    return container.image()


@dataclass
class ImageReplica(OperatorProcess):
    """One replica as a container: `podman run` in the foreground is its process, so
    its output goes to the log and SIGTERM reaches the operator (podman passes
    signals on); a kill or a stop that times out removes the container too."""

    tag: str = ""
    deployment: dict[str, Any] = field(default_factory=dict)
    service_account: Path = Path()

    @property
    def container_name(self) -> str:
        return f"muster-{self.identity}"

    def command(self, extra: tuple[str, ...]) -> list[str]:
        environment = container.local_environment(
            self.kubeconfig,
            self.service.settings,
            webhook_port=self.webhook_port,
            health_port=self.health_port,
            identity=self.identity,
        )
        return [
            *container.run_command(
                name=self.container_name,
                deployment=self.deployment,
                environment=environment,
                service_account=self.service_account,
                tag=self.tag,
            ),
            *self.flags,
            *extra,
        ]

    def kill(self) -> None:
        subprocess.run(
            ["podman", "kill", "--signal=KILL", self.container_name],
            capture_output=True,
            check=False,
        )
        super().kill()

    def stop(self) -> None:
        super().stop()
        subprocess.run(
            ["podman", "rm", "--force", "--ignore", self.container_name],
            capture_output=True,
            check=False,
        )

    def status(self, field_name: str) -> str:
        """A line of /proc/<pid>/status of the container's first process (the
        operator: the image's entry point runs no shell), e.g. its `Uid`."""
        pid = subprocess.run(
            ["podman", "inspect", "--format={{.State.Pid}}", self.container_name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field_name}:"):
                return line.split(":", 1)[1].strip()
        raise AssertionError(f"no {field_name} in /proc/{pid}/status")


def image_replica(
    operator: OperatorProcess, tag: str, identity: str, directory: Path
) -> ImageReplica:
    """A replica of `operator`'s installation from the image `tag`, with a token of the
    ServiceAccount mounted from `directory`."""
    kubeconfig = operator.kubeconfig
    return ImageReplica(
        service=operator.service,
        log_path=directory / f"{identity}.log",
        identity=identity,
        tag=tag,
        deployment=installed.deployment(installed.rendered(kubeconfig)),
        service_account=container.mount_service_account(kubeconfig, directory / "serviceaccount"),
    )
