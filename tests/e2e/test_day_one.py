"""The README's first commands after a clone, run as written on a control plane of their own.

The block under "Development cluster" in README.md is run line by line in bash, from
the repository, as a new user would paste it; the only change is the directory the
cluster lives in (`$PWD/.cluster` becomes this test's own, through
MUSTER_CLUSTER_DIR), so that a developer's own dev cluster is left alone. Between the
lines the test checks what the README promises: a warning for an opted-in Job while
Muster does not run, Muster running as its ServiceAccount, the example gang bound
whole, and the warning back once Muster is stopped, with nothing left behind that
keeps the chart from being installed there. It runs again with `make run IMAGE=1`,
as the README offers: Muster from the image (built once for the test run, so `-o
image` keeps make from building it again), its mounted token its only credentials.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from devtools import helm
from devtools.builds import ROOT
from devtools.container import SERVICE_ACCOUNT_DIR
from devtools.installed import USER, token_kubeconfig
from devtools.kubectl import Kubectl
from devtools.waiting import wait_until

from tests.e2e.support.image import IMAGE, process_and_image

pytestmark = pytest.mark.e2e

EXAMPLE = "examples/training-job.yaml"


def readme_block(heading: str) -> list[str]:
    """The command lines of the first `sh` block under a README heading."""
    text = (ROOT / "README.md").read_text()
    section = text.split(f"## {heading}\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, heading
    return [line for line in block.group(1).splitlines() if line.strip()]


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "cluster"
    yield directory
    env = {**os.environ, "MUSTER_CLUSTER_DIR": str(directory)}
    subprocess.run(["python3", "hack/cluster.py", "down"], cwd=ROOT, env=env, check=False)


class Shell:
    """Runs README lines in bash; `export` lines carry over to the lines after them."""

    def __init__(self, state: Path) -> None:
        self.state = state
        self.exports: list[str] = []

    def __call__(self, line: str) -> str:
        line = line.replace("$PWD/.cluster", str(self.state))
        if line.startswith("export "):
            self.exports.append(line)
        script = "\n".join(["set -euo pipefail", *self.exports, line])
        env = {**os.environ, "MUSTER_CLUSTER_DIR": str(self.state)}
        env.pop("KUBECONFIG", None)
        done = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=900, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout + done.stderr


@process_and_image
def test_the_readme_takes_a_new_user_from_cluster_up_to_a_running_gang(
    state: Path, replicas: str, request: pytest.FixtureRequest
) -> None:
    lines = readme_block("Development cluster")
    assert lines[0].startswith("make cluster-up") and lines[1].startswith("make run ")
    if replicas == IMAGE:
        request.getfixturevalue("image")
        lines[1] = lines[1].replace("make run ", "make run IMAGE=1 -o image ", 1)
    shell = Shell(state)
    shell(lines[0])
    kubectl = Kubectl(state / "kubeconfig")

    # Before Muster runs, an opted-in Job is created with a warning that says so.
    wait_until("the warning that Muster is absent", lambda: warned(kubectl))
    assert "make run" in kubectl("create", "--dry-run=server", "-f", str(ROOT / EXAMPLE)).stderr

    started = shell(lines[1])
    assert f"{state}/logs/muster.log" in started and "make run-stop" in started
    assert f"export PATH={ROOT}/.venv/bin:" in started  # `muster` and `kubectl muster`
    assert not warned(kubectl)

    stop_at = next(index for index, line in enumerate(lines) if line.startswith("make run-stop"))
    for line in lines[2:stop_at]:
        said = shell(line)
        if line.startswith("kubectl get podgroups"):
            assert "train" in said, said
    wait_until("the example gang bound whole", lambda: bound(kubectl) == 4, timeout=60)
    whoami = Kubectl(credentials(state, kubectl))("auth", "whoami").stdout
    assert USER in whoami

    shell(lines[stop_at])
    # Stopped, Muster takes its webhooks away and the warning is back.
    wait_until("the warning that Muster is absent", lambda: warned(kubectl))
    # Nothing it installed is left that the chart would refuse to adopt: the chart
    # installs where it ran (as docs/operations.md says), the API server says so.
    helm.helm(
        "install", helm.RELEASE, str(helm.CHART), "-n", helm.NAMESPACE, "--dry-run=server",
        kubeconfig=state / "kubeconfig",
    )  # fmt: skip
    for line in lines[stop_at + 1 :]:
        shell(line)
    assert not (state / "kubeconfig").exists()


def credentials(state: Path, kubectl: Kubectl) -> Path:
    """A kubeconfig that authenticates as Muster does, read from its command line: the
    kubeconfig it was given, or the token mounted into its container (and then no
    kubeconfig at all)."""
    pid = (state / "pids" / "muster.pid").read_text().strip()
    command = Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    given = [arg.partition("=")[2] for arg in command if arg.startswith("--kubeconfig=")]
    mounted = [
        arg.partition("=")[2].split(":")[0]
        for arg in command
        if arg.startswith("--volume=") and f":{SERVICE_ACCOUNT_DIR}:" in arg
    ]
    if not mounted:
        [kubeconfig] = given
        return Path(kubeconfig)
    assert not given, command
    token = (Path(mounted[0]) / "token").read_text()
    return token_kubeconfig(kubectl.kubeconfig, token, state / "mounted.kubeconfig")


def bound(kubectl: Kubectl) -> int:
    pods = kubectl.json("get", "pods", "-l", "job-name=train")["items"]
    return sum(1 for pod in pods if pod["spec"].get("nodeName"))


def warned(kubectl: Kubectl) -> bool:
    """Whether creating the example Job now draws the warning that Muster is absent
    (in force once the API server has read the policy's binding)."""
    answer = kubectl("create", "--dry-run=server", "-f", str(ROOT / EXAMPLE), check=False)
    return "Muster is not running" in answer.stderr
