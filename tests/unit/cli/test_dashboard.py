"""`muster dashboard`: its flags, and what it says without a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from muster.cli import build_parser, main
from muster.cli.dashboard import DEFAULT_PORT
from muster.cli.explain import EXIT_NO_CLUSTER


def test_it_binds_to_localhost_unless_told_and_takes_the_engine_flags() -> None:
    args = build_parser().parse_args(["dashboard"])
    assert (args.address, args.port) == ("127.0.0.1", DEFAULT_PORT)
    args = build_parser().parse_args(
        ["dashboard", "--address=0.0.0.0", "--port=9000", "--topology-levels=zone,rack"]
    )
    assert (args.address, args.port, args.topology_levels) == ("0.0.0.0", 9000, "zone,rack")
    assert build_parser().parse_args(["dashboard", "--estimate-budget=1"]).estimate_budget == "1"


def test_it_answers_its_own_address_and_the_names_it_is_given_only() -> None:
    assert build_parser().parse_args(["dashboard"]).allowed_host == []
    args = build_parser().parse_args(
        ["dashboard", "--allowed-host=dash.example", "--allowed-host=dash"]
    )
    assert args.allowed_host == ["dash.example", "dash"]


def test_without_a_kubeconfig_outside_a_cluster_it_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["dashboard", "--port=0"]) == EXIT_NO_CLUSTER
    err = capsys.readouterr().err
    assert err.startswith("muster dashboard: cannot connect to a cluster (no kubeconfig")
    assert err.count("\n") == 1
