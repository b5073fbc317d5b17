"""Replicas of the installed operator run from the image (`make image`) with podman, as
the chart's Deployment runs them (devtools/container.py), beside or instead of the
session's local process: the same installation, ServiceAccount and webhook stand-in.

A test marked `process_and_image` runs twice: with its replicas as local processes,
then from the image. For the second runs of a module's marked tests (pytest runs them
one after the other) the operator (the session's, or the fault suite's) is stopped
and started again from the image with its identity, flags and trace, and every
replica it makes (`replica()`) runs from the image too; after them it runs as a
local process again. The image is built once per test run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from devtools import container
from devtools.builds import ROOT
from devtools.operator import OperatorProcess

PROCESS = "process"
IMAGE = "image"
# The mark of a test that runs both ways (`replicas` says which, in the test's id too);
# by module, so that the operator changes how it runs once per module and way.
process_and_image = pytest.mark.parametrize(
    "replicas", [PROCESS, IMAGE], indirect=True, scope="module"
)


@pytest.fixture(scope="session")
def image() -> str:
    """The image of this checkout, by its ID (which no later build of another checkout
    on the machine retags): built afresh (hack/image.sh, on the bases and wheels it
    caches), unless MUSTER_E2E_IMAGE_BUILT says that `make image` has just built it
    (`make test` builds it once for its e2e and fault runs)."""
    if not os.environ.get("MUSTER_E2E_IMAGE_BUILT"):
        subprocess.run([str(ROOT / "hack" / "image.sh")], check=True, cwd=ROOT)
    inspected = subprocess.run(
        ["podman", "image", "inspect", "--format={{.Id}}", container.image()],
        capture_output=True,
        text=True,
        check=True,
    )
    return inspected.stdout.strip()


@pytest.fixture(scope="module", autouse=True)
def replicas(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """How the test's replicas run: `process` unless the test is marked
    `process_and_image` and this is its run from the image. A test without an
    operator (the README's own `make run`, test_day_one.py) reads the choice itself."""
    chosen: str = getattr(request, "param", PROCESS)
    if chosen == PROCESS or "operator" not in request.fixturenames:
        yield chosen
        return
    tag: str = request.getfixturevalue("image")
    operator: OperatorProcess = request.getfixturevalue("operator")
    directory = tmp_path_factory.mktemp("image")
    run = image_run(operator, tag, directory)
    operator.stop()  # the Lease given up, so the image's replica leads at once
    operator.image = run
    try:
        operator.start()
        yield chosen
    finally:
        operator.stop()
        operator.image = None
        operator.start()


def image_replica(
    operator: OperatorProcess, tag: str, identity: str, directory: Path
) -> OperatorProcess:
    """A replica of `operator`'s installation from the image `tag`, not yet started,
    with a token of the ServiceAccount mounted from `directory`."""
    replica = operator.replica(identity)
    replica.image = image_run(operator, tag, directory)
    return replica


def image_run(operator: OperatorProcess, tag: str, directory: Path) -> container.ImageRun:
    """`tag` run as the Deployment of `operator`'s installation, with a token of its
    ServiceAccount mounted from `directory`."""
    return container.ImageRun.prepared(operator.kubeconfig, tag, directory / "serviceaccount")


def process_status(replica: OperatorProcess, field_name: str) -> str:
    """A line of /proc/<pid>/status of the container's first process (the operator:
    the image's entry point runs no shell), e.g. its `Uid`."""
    pid = subprocess.run(
        ["podman", "inspect", "--format={{.State.Pid}}", replica.container_name],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field_name}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {field_name} in /proc/{pid}/status")
