"""`make demo` plays to the end on a fresh control plane of its own.

The demo checks each story's outcome itself (every gang bound whole or not at all,
the short gang waits and then runs, exactly one of two competing gangs runs, the
zonal gang stays in one zone, the whole low-priority gang is preempted) and exits
non-zero when one does not happen; this test runs it non-interactively, as a
newcomer's `make demo` would, and checks what it leaves behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hack.cluster import ROOT, bin_dir

pytestmark = pytest.mark.e2e


@pytest.fixture
def demo_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {**os.environ, "MUSTER_CLUSTER_DIR": str(tmp_path / "cluster")}
    yield env
    subprocess.run([sys.executable, "-m", "hack.demo", "--down"], cwd=ROOT, env=env, check=False)


def test_demo_plays_every_story_and_leaves_the_cluster_to_explore(
    demo_env: dict[str, str],
) -> None:
    played = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-m", "hack.demo", "--non-interactive"],
        cwd=ROOT,
        env=demo_env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert played.returncode == 0, played.stdout[-3000:] + played.stderr[-3000:]

    status = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "cluster.py"), "status"],
        env=demo_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert status.returncode == 0, status.stdout

    kubeconfig = Path(demo_env["MUSTER_CLUSTER_DIR"]) / "kubeconfig"
    listed = subprocess.run(
        [
            str(bin_dir() / "kubectl"),
            f"--kubeconfig={kubeconfig}",
            "get",
            "podgroups",
            "-A",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    # Every story cleans up after itself: the cluster is left empty to explore.
    assert json.loads(listed.stdout)["items"] == []
