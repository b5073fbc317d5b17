"""`build.sh --without-kueue` leaves Kueue out, and `--without-helm` helm, in the same
cache layout: a cache that holds the control plane is complete for them, and a later
call without the flag builds only what is missing (here, with a `go` that fails, it
is seen trying). `--helm-only` builds helm and nothing else."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from devtools.cluster import control_plane

HACK = Path(__file__).resolve().parents[3] / "hack"
CONTROL_PLANE = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "etcd",
    "kwok",
)


def _version(name: str) -> str:
    for line in (HACK / "versions.env").read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1]
    raise AssertionError(f"{name} is not in versions.env")


def _build(
    tmp_path: Path, *flags: str, built: tuple[str, ...] = CONTROL_PLANE
) -> subprocess.CompletedProcess[str]:
    """build.sh over a cache holding the `built` binaries of the control plane (empty
    files) and a `go` that always fails: any real build attempt shows as a failed step."""
    bin_dir = tmp_path / "cache" / "k8s" / _version("KUBE_VERSION") / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in built:
        (bin_dir / name).touch(mode=0o755)
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "go").write_text("#!/bin/sh\nexit 1\n")
    (tools / "go").chmod(0o755)
    env = {
        **os.environ,
        "MUSTER_CACHE": str(tmp_path / "cache"),
        "PATH": f"{tools}:{os.environ['PATH']}",
    }
    return subprocess.run(
        [str(HACK / "build.sh"), *flags], env=env, capture_output=True, text=True, check=False
    )


def test_without_kueue_a_built_control_plane_is_complete(tmp_path: Path) -> None:
    done = _build(tmp_path, "--without-kueue", "--without-helm")
    assert done.returncode == 0, done.stderr
    assert "building kueue" not in done.stdout
    assert "control plane binaries ready" in done.stdout


def test_without_the_flag_kueue_is_built_too(tmp_path: Path) -> None:
    done = _build(tmp_path, "--without-helm")
    assert done.returncode == 1
    assert "==> building kueue" in done.stdout
    assert "building kueue failed" in done.stderr


def test_without_the_flag_helm_is_built_too(tmp_path: Path) -> None:
    done = _build(tmp_path, "--without-kueue")
    assert done.returncode == 1
    assert "==> building helm" in done.stdout
    assert "building helm failed" in done.stderr


def test_helm_alone_needs_no_control_plane(tmp_path: Path) -> None:
    done = _build(tmp_path, "--helm-only", built=())
    assert done.returncode == 1
    assert [line for line in done.stdout.splitlines() if line.startswith("==>")] == [
        f"==> building helm (log: {tmp_path}/cache/k8s/{_version('KUBE_VERSION')}/logs/helm.log)"
    ]
    assert "building helm failed" in done.stderr


def test_the_adopted_crds_alone_need_no_control_plane(tmp_path: Path) -> None:
    done = _build(tmp_path, "--adopted-crds-only", built=())
    assert done.returncode == 1
    assert [line for line in done.stdout.splitlines() if line.startswith("==>")] == [
        f"==> building adopted-crds (log: {tmp_path}/cache/k8s/"
        f"{_version('KUBE_VERSION')}/logs/adopted-crds.log)"
    ]
    assert "building adopted-crds failed" in done.stderr


def test_kuberay_alone_needs_no_control_plane(tmp_path: Path) -> None:
    done = _build(tmp_path, "--kuberay-only", built=())
    assert done.returncode == 1
    assert [line for line in done.stdout.splitlines() if line.startswith("==>")] == [
        f"==> building kuberay (log: {tmp_path}/cache/k8s/"
        f"{_version('KUBE_VERSION')}/logs/kuberay.log)"
    ]
    assert "building kuberay failed" in done.stderr


def test_an_unknown_flag_is_refused(tmp_path: Path) -> None:
    done = _build(tmp_path, "--quick")
    assert done.returncode == 2
    assert "usage" in done.stderr


def test_a_cluster_builds_kueue_only_when_it_runs_it_and_never_helm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda command, **_: calls.append([*map(str, command)]))
    control_plane.build(with_kueue=False)
    control_plane.build(with_kueue=True)
    assert [call[1:] for call in calls] == [
        ["--without-helm", "--without-kueue"],
        ["--without-helm"],
    ]
    assert all(call[0].endswith("hack/build.sh") for call in calls)
