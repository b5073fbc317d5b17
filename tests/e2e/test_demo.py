"""`make demo` plays to the end on a fresh control plane of its own.

The demo checks each story's outcome itself (every gang bound whole or not at all,
the short gang waits and then runs, exactly one of two competing gangs runs, the
zonal gang stays in one zone, the whole low-priority gang is preempted) and exits
non-zero when one does not happen; this test runs it non-interactively, as a
newcomer's `make demo` would, and checks what it leaves behind. The gang observer
watches the demo's namespace from the moment the demo's API server answers, before
the demo has made any pod, to the end: every story's gangs rise and fall whole.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from devtools.builds import ROOT
from devtools.kubectl import Kubectl
from devtools.waiting import wait_until
from hack.demo import NAMESPACE

from tests.e2e.support.observer import observing

pytestmark = pytest.mark.e2e

STORIES_GANGS = {"train", "big", "first", "second", "zonal", "low", "urgent"}


@pytest.fixture
def demo_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {**os.environ, "MUSTER_CLUSTER_DIR": str(tmp_path / "cluster")}
    yield env
    subprocess.run([sys.executable, "-m", "hack.demo", "--down"], cwd=ROOT, env=env, check=False)


def answers(kubeconfig: Path) -> bool:
    if not kubeconfig.exists():
        return False
    probe = Kubectl(kubeconfig).command("get", "--raw", "/readyz")
    return subprocess.run(probe, capture_output=True, check=False, timeout=30).returncode == 0


def test_demo_plays_every_story_and_leaves_the_cluster_to_explore(
    demo_env: dict[str, str], tmp_path: Path
) -> None:
    kubeconfig = Path(demo_env["MUSTER_CLUSTER_DIR"]) / "kubeconfig"
    output = tmp_path / "demo.log"
    with output.open("wb") as log:
        demo = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "python"), "-m", "hack.demo", "--non-interactive"],
            cwd=ROOT,
            env=demo_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:

        def up() -> bool:
            assert demo.poll() is None, output.read_text()[-3000:]
            return answers(kubeconfig)

        wait_until("the demo's API server", up, timeout=900, interval=0.5)
        with observing(kubeconfig, NAMESPACE) as observer:
            assert observer.ledger.pods() == [], "the observer began after the demo's first pod"
            returncode = demo.wait(timeout=900)
            observer.finish()
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert returncode == 0, output.read_text()[-6000:]
    # It saw them: the stories' gangs rose whole, and the preempted one fell whole. It
    # rises again once the cleanup deletes the gang that preempted it; whether the
    # cleanup's own deletion of it starts before that rise ends (no second fall) or
    # after (a second fall, taken down whole too) is a race of the cleanup's, not a
    # decision of Muster's, so both are right.
    assert {rise.gang for rise in observer.ledger.risen} == STORIES_GANGS
    low_falls = [fall for fall in observer.ledger.falls if fall.gang == "low"]
    assert 1 <= len(low_falls) <= 2 and not any(fall.restored for fall in low_falls), [
        (fall.wall.isoformat(), fall.describe(0)) for fall in low_falls
    ]

    status = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "cluster.py"), "status"],
        env=demo_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert status.returncode == 0, status.stdout

    listed = subprocess.run(
        Kubectl(kubeconfig).command(
            "get",
            "podgroups",
            "-A",
            "-o",
            "json",
        ),
        capture_output=True,
        text=True,
        check=True,
    )
    # Every story cleans up after itself: the cluster is left empty to explore.
    assert json.loads(listed.stdout)["items"] == []
