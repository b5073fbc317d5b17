#!/usr/bin/env python3
"""`make demo`: watch gang scheduling work on a local, simulated GPU cluster.

Brings up the local control plane with 4 simulated nodes of 4 GPUs in 2 zones,
installs Muster as `make run` does (hack/run.py), then plays the stories users care about,
narrating each step. It leaves everything running to explore; `make demo-down`
stops it. `--non-interactive` plays without pauses (for tests); every story checks
its outcome and the demo exits non-zero when one does not happen.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from devtools.builds import ROOT, bin_dir
from devtools.cluster.layout import KUBECONFIG, STATE
from devtools.kubectl import Kubectl, KubectlError

from hack.nodes import gpu_node
from hack.run import start_muster

NODES = ROOT / "hack" / "nodes" / "demo-cluster.yaml"
OPERATOR_LOG = STATE / "logs" / "muster.log"
NAMESPACE = "demo"
GPU = "nvidia.com/gpu"

BOLD, DIM, GREEN, RED, RESET = "\033[1m", "\033[2m", "\033[32m", "\033[31m", "\033[0m"


class Demo:
    def __init__(self, *, interactive: bool) -> None:
        self.interactive = interactive

    # --- narration ---------------------------------------------------------------

    def say(self, text: str) -> None:
        print(f"\n{BOLD}==> {text}{RESET}", flush=True)

    def pause(self) -> None:
        if self.interactive:
            input(f"{DIM}    (press Enter to continue){RESET}")

    def show(self, *args: str) -> None:
        """Run a kubectl command the reader could type, and show its output."""
        print(f"{DIM}$ kubectl {' '.join(args)}{RESET}", flush=True)
        print(self.kubectl(*args).stdout.rstrip(), flush=True)

    def explain(self, group: str) -> None:
        """`muster explain`: the engine's reasons, per node, for a waiting gang."""
        print(f"{DIM}$ muster explain podgroup {group} -n {NAMESPACE}{RESET}", flush=True)
        result = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "muster"), "explain", "podgroup", group, "-n", NAMESPACE],
            env={**os.environ, "KUBECONFIG": str(KUBECONFIG)},
            capture_output=True,
            text=True,
            check=False,
        )
        print((result.stdout + result.stderr).rstrip(), flush=True)

    def events(self, group: str, last: str) -> None:
        """The gang's events, where Muster tells them (on its PodGroup), once the last
        of the story (`last`) is there: they are posted just after the status they tell."""
        selector = ("--field-selector", f"involvedObject.kind=PodGroup,involvedObject.name={group}")
        self.wait(
            f"the {last} event on PodGroup {group}",
            lambda: any(
                event["reason"] == last
                for event in self.get("events", "-n", NAMESPACE, *selector)["items"]
            ),
        )
        self.show("get", "events", "-n", NAMESPACE, *selector, "--sort-by=.lastTimestamp")

    def ok(self, text: str) -> None:
        print(f"{GREEN}    ✔ {text}{RESET}", flush=True)

    # --- cluster access ----------------------------------------------------------

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        try:
            return Kubectl(KUBECONFIG)(*args, input=stdin)
        except KubectlError as error:
            raise DemoError(f"kubectl {' '.join(args)} failed: {error.stderr.strip()}") from error

    def apply(self, *docs: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in docs))

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def wait(self, what: str, check: Callable[[], bool], timeout: float = 90) -> None:
        print(f"{DIM}    waiting for {what} ...{RESET}", flush=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                self.ok(what)
                return
            time.sleep(0.5)
        raise DemoError(f"timed out waiting for {what}")

    # --- what the stories look at ------------------------------------------------

    def pods(self, job: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.get("pods", "-n", NAMESPACE, "-l", f"job-name={job}")[
            "items"
        ]
        return [p for p in items if "deletionTimestamp" not in p["metadata"]]

    def bound(self, job: str) -> list[dict[str, Any]]:
        return [p for p in self.pods(job) if p["spec"].get("nodeName")]

    def scheduled(self, group: str) -> dict[str, Any] | None:
        found = self.get(
            "podgroups", "-n", NAMESPACE, "--field-selector", f"metadata.name={group}"
        )["items"]
        for cond in found[0].get("status", {}).get("conditions", []) if found else []:
            if cond["type"] == "PodGroupScheduled":
                return dict(cond)
        return None

    def reason(self, group: str) -> str:
        cond = self.scheduled(group)
        return str(cond.get("reason", "")) if cond else ""

    def group_status(self, group: str) -> dict[str, Any]:
        found = self.get(
            "podgroups", "-n", NAMESPACE, "--field-selector", f"metadata.name={group}"
        )["items"]
        status: dict[str, Any] = found[0].get("status", {}) if found else {}
        return status

    def counted(self, group: str) -> int:
        """Bound pods as the PodGroup counts them (the SCHEDULED column)."""
        return int(self.group_status(group).get("pods", {}).get("scheduled", 0))

    def start_estimate(self, group: str) -> str:
        """The START column: when the waiting gang is expected to start."""
        return str(self.group_status(group).get("estimate", {}).get("start", ""))

    def complete(self, job: str) -> bool:
        conditions = self.get("job", job, "-n", NAMESPACE).get("status", {}).get("conditions")
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions or [])

    def all_bound_or_none(self, job: str) -> None:
        """The invariant the whole demo is about; checked at every step."""
        pods, bound = self.pods(job), self.bound(job)
        if bound and len(bound) < len(pods) and self.reason(job) != "Scheduled":
            raise DemoError(f"{job}: {len(bound)}/{len(pods)} pods bound without admission")

    def cleanup(self, *jobs: str) -> None:
        for job in jobs:
            self.kubectl(
                "delete",
                "job",
                job,
                "-n",
                NAMESPACE,
                "--ignore-not-found",
                "--cascade=foreground",
                "--wait=true",
                "--timeout=60s",
            )
        self.wait(
            f"the pods and PodGroups of {', '.join(jobs)} to be gone",
            lambda: (
                not any(
                    self.get("pods", "-n", NAMESPACE, "-l", f"job-name={job}")["items"]
                    for job in jobs
                )
                and not {
                    item["metadata"]["name"]
                    for item in self.get("podgroups", "-n", NAMESPACE)["items"]
                }
                & set(jobs)
            ),
        )

    # --- the stories -------------------------------------------------------------

    def story_training_job(self) -> None:
        self.say("Story 1: a 4-worker training Job, 1 GPU each, opted in with one label")
        self.apply(job("train", workers=4, gpus=1))
        self.show("get", "job", "train", "-n", NAMESPACE, "--show-labels")
        self.wait("all 4 workers bound at once", lambda: len(self.bound("train")) == 4)
        self.wait("the PodGroup to count them", lambda: self.counted("train") == 4)
        self.show("get", "podgroups", "-n", NAMESPACE)
        self.show("get", "pods", "-n", NAMESPACE, "-o", "wide")
        self.pause()
        self.cleanup("train")

    def story_one_gpu_short(self) -> None:
        self.say("Story 2: a gang one GPU short waits, holding nothing, and says why")
        self.apply(plain_pod("someone-else", gpus=1))
        self.wait(
            "another pod to hold 1 of the 16 GPUs",
            lambda: bool(self.get("pod", "someone-else", "-n", NAMESPACE)["spec"].get("nodeName")),
        )
        self.apply(job("big", workers=4, gpus=4))
        self.wait(
            "the gang to be reported Unschedulable", lambda: self.reason("big") == "Unschedulable"
        )
        self.all_bound_or_none("big")
        if self.bound("big"):
            raise DemoError("a pod of the waiting gang was bound")
        self.wait("its start-time estimate (START)", lambda: bool(self.start_estimate("big")))
        self.show("get", "podgroups", "-n", NAMESPACE)
        print(f"    message: {(self.scheduled('big') or {}).get('message')}")
        self.explain("big")
        self.show("get", "pods", "-n", NAMESPACE, "-l", "job-name=big")
        self.pause()
        self.say("Add a node with 4 more GPUs: the gang starts, all of it")
        self.apply(gpu_node("gpu-c0-9", zone="zone-c", rack="zone-c-rack-0", gpus=4))
        self.wait("all 4 workers of the gang bound", lambda: len(self.bound("big")) == 4)
        self.wait("the PodGroup to count them", lambda: self.counted("big") == 4)
        self.show("get", "podgroups", "-n", NAMESPACE)
        self.events("big", "Scheduled")
        self.pause()
        self.cleanup("big")
        self.kubectl("delete", "pod", "someone-else", "-n", NAMESPACE, "--wait=true")
        self.kubectl("delete", "node", "gpu-c0-9")

    def story_no_deadlock(self) -> None:
        self.say(
            "Story 3: two 12-GPU Jobs on 16 GPUs. The default scheduler would start "
            "8 + 8 pods and deadlock both; Muster runs one, then the other"
        )
        self.apply(
            job("first", workers=12, gpus=1, runs="20s"),
            job("second", workers=12, gpus=1, runs="20s"),
        )
        self.wait(
            "exactly one gang running",
            lambda: sorted((len(self.bound("first")), len(self.bound("second")))) == [0, 12],
        )
        self.show("get", "podgroups", "-n", NAMESPACE)
        self.pause()
        self.wait(
            "the first gang to complete and the other to run",
            lambda: (
                sorted((self.complete("first"), self.complete("second"))) == [False, True]
                and 12 in (len(self.bound("first")), len(self.bound("second")))
            ),
            timeout=120,
        )
        self.show("get", "jobs", "-n", NAMESPACE)
        self.cleanup("first", "second")

    def story_zone(self) -> None:
        self.say("Story 4: a gang pinned to one zone with the topology-key annotation")
        self.apply(job("zonal", workers=8, gpus=1, topology="topology.kubernetes.io/zone"))
        self.wait("all 8 workers bound", lambda: len(self.bound("zonal")) == 8)
        zones = {
            self.get("node", p["spec"]["nodeName"])["metadata"]["labels"][
                "topology.kubernetes.io/zone"
            ]
            for p in self.bound("zonal")
        }
        if len(zones) != 1:
            raise DemoError(f"the zonal gang spans zones {sorted(zones)}")
        self.ok(f"all in {zones.pop()}")
        self.show("get", "pods", "-n", NAMESPACE, "-o", "wide")
        self.cleanup("zonal")
        self.say("A 10-GPU zonal gang fits in no single zone (8 GPUs each), though 16 are free")
        self.apply(job("too-wide", workers=10, gpus=1, topology="topology.kubernetes.io/zone"))
        self.wait(
            "the gang to be reported Unschedulable",
            lambda: self.reason("too-wide") == "Unschedulable",
        )
        print(f"    message: {(self.scheduled('too-wide') or {}).get('message')}")
        self.pause()
        self.cleanup("too-wide")

    def story_preemption(self) -> None:
        self.say("Story 5: a high-priority gang preempts a whole low-priority gang")
        self.apply(priority_class("batch-low", 100), priority_class("train-high", 1000))
        self.apply(job("low", workers=16, gpus=1, priority="batch-low"))
        self.wait("the low-priority gang to take all 16 GPUs", lambda: len(self.bound("low")) == 16)
        self.apply(job("urgent", workers=8, gpus=1, priority="train-high"))
        self.wait("the urgent gang to run", lambda: len(self.bound("urgent")) == 8)
        self.wait(
            "the low-priority gang to be taken down whole and requeued",
            lambda: not self.bound("low") and self.reason("low") in ("Preempted", "Unschedulable"),
        )
        self.wait(
            "the low Job to have its 16 pods again, gated, holding nothing",
            lambda: len(self.pods("low")) == 16 and not self.bound("low"),
        )
        failed = self.get("job", "low", "-n", NAMESPACE).get("status", {}).get("failed", 0)
        if failed:
            raise DemoError(f"the preemption cost the low Job {failed} failure(s)")
        self.ok("the low Job counted no failure (its backoffLimit is 0)")
        self.show("get", "podgroups", "-n", NAMESPACE)
        self.show("get", "jobs", "-n", NAMESPACE)
        self.events("low", "Preempted")
        self.pause()
        print(
            "    The low Job survives, with backoffLimit 0 and no podFailurePolicy: before\n"
            "    taking its pods down, Muster removed the Job's tracking finalizer from\n"
            "    them, so the Job controller counted no failure and recreated them at once\n"
            "    (gated). The gang waits for room, holding nothing, and runs when the\n"
            "    urgent gang is done."
        )
        self.cleanup("urgent", "low")

    # --- set-up ------------------------------------------------------------------

    def start(self) -> None:
        self.say(
            "Starting a local Kubernetes control plane (the first run builds it from "
            "Go modules: several minutes; the components being built are shown)"
        )
        subprocess.run(
            [sys.executable, str(ROOT / "hack" / "cluster.py"), "up", f"--nodes={NODES}"],
            check=True,
        )
        self.say(
            "Installing Muster as its manifests install it (`make run`): the operator runs "
            "as its ServiceAccount, with only the manifests' rights"
        )
        start_muster()
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        self.wait(
            "the namespace's default ServiceAccount",
            lambda: (
                self.kubectl("get", "serviceaccounts", "-n", NAMESPACE).stdout.count("default") > 0
            ),
        )
        self.show(
            "get",
            "nodes",
            "-o",
            "custom-columns=NAME:.metadata.name,ZONE:.metadata.labels.topology\\.kubernetes"
            "\\.io/zone,GPUS:.status.allocatable.nvidia\\.com/gpu",
        )

    def play(self) -> None:
        self.start()
        self.story_training_job()
        self.story_one_gpu_short()
        self.story_no_deadlock()
        self.story_zone()
        self.story_preemption()
        self.say("Done. Everything is still running; explore it:")
        print(f"""
    export PATH={ROOT / ".venv" / "bin"}:{bin_dir()}:$PATH KUBECONFIG={KUBECONFIG}
    kubectl get podgroups -A
    kubectl apply -n {NAMESPACE} -f examples/training-job.yaml
    kubectl muster explain podgroup train -n {NAMESPACE}
    tail -f {OPERATOR_LOG}
    make demo-down
""")


class DemoError(Exception):
    """A story's outcome did not happen: the demo fails loudly rather than narrate it."""


# --- objects the stories create ---------------------------------------------------


def job(
    name: str,
    *,
    workers: int,
    gpus: int,
    runs: str = "1h",
    topology: str | None = None,
    priority: str | None = None,
) -> dict[str, Any]:
    annotations = {"scheduling.muster.dev/topology-key": topology} if topology else {}
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "worker",
                "image": "registry.example/trainer:1.0",
                "resources": {"requests": {"cpu": "1", GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
            }
        ],
    }
    if priority:
        spec["priorityClassName"] = priority
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"scheduling.muster.dev/policy": "gang"},
            "annotations": annotations,
        },
        "spec": {
            "parallelism": workers,
            "completions": workers,
            # No failure allowed, and no podFailurePolicy: Muster's preemptions and
            # rollbacks cost a Job nothing (docs/preemption-and-priorities.md).
            "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": {"pod-complete.stage.kwok.x-k8s.io/delay": runs}},
                "spec": spec,
            },
        },
    }


def plain_pod(name: str, *, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.example/app:1",
                    "resources": {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
                }
            ]
        },
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


# --- stopping -----------------------------------------------------------------------


def down() -> None:
    """Stop the cluster, Muster with it (`cluster.py down` stops what `make run` started)."""
    subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), "down"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--non-interactive", action="store_true", help="play without pausing between steps"
    )
    parser.add_argument("--down", action="store_true", help="stop the operator and the cluster")
    args = parser.parse_args()
    if args.down:
        down()
        return
    try:
        Demo(interactive=not args.non_interactive and sys.stdin.isatty()).play()
    except DemoError as error:
        print(f"{RED}demo failed: {error}{RESET}\noperator log: {OPERATOR_LOG}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
