"""A port taken between choosing it and binding it starts the control plane again, and
a start that fails otherwise leaves nothing running (a real start is what every e2e
test does; these pin the failures)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from devtools.cluster import commands, control_plane, layout, processes


def logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(layout, "STATE", tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "kube-scheduler.log").write_text(text)


def test_a_component_that_could_not_listen_is_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged(tmp_path, monkeypatch, 'listen tcp 127.0.0.1:5: bind: address already in use"\n')
    with pytest.raises(processes.PortTakenError):
        processes.fail("kube-scheduler exited", "kube-scheduler")


def test_any_other_failure_ends_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged(tmp_path, monkeypatch, "flag provided but not defined\n")
    with pytest.raises(SystemExit):
        processes.fail("kube-scheduler exited", "kube-scheduler")


def test_a_failed_start_stops_what_it_had_started_and_keeps_the_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged(tmp_path, monkeypatch, "flag provided but not defined\n")
    started: list[int | None] = []

    def start_then_fail(args: argparse.Namespace) -> None:
        processes.start("etcd", ["sleep", "60"])
        started.append(processes.pid_of("etcd"))
        processes.fail("kube-scheduler exited", "kube-scheduler")

    monkeypatch.setattr(commands, "healthy", lambda: False)
    monkeypatch.setattr(commands, "start_with_free_ports", start_then_fail)
    with pytest.raises(SystemExit):
        commands.up(argparse.Namespace(kueue=False))
    assert started and not processes.alive(started[0])
    assert (tmp_path / "logs" / "kube-scheduler.log").exists()


def test_the_control_plane_starts_again_with_other_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[str] = []

    def start(args: argparse.Namespace) -> None:
        attempts.append("start")
        if len(attempts) == 1:
            raise processes.PortTakenError("kube-scheduler's port was taken")

    monkeypatch.setattr(control_plane, "start_control_plane", start)
    monkeypatch.setattr(commands, "down", lambda args: attempts.append("down"))
    commands.start_with_free_ports(argparse.Namespace())
    assert attempts == ["start", "down", "start"]
