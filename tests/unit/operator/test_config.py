"""Operator settings: flags win over MUSTER_* variables, which win over defaults."""

from __future__ import annotations

import argparse

import pytest

from muster.api.adoption import SCHEDULER_PLUGINS, VOLCANO
from muster.operator.config import (
    OperatorConfig,
    add_arguments,
    adoption,
    engine_config,
    env_name,
    from_arguments,
)


def parse(*argv: str, env: dict[str, str] | None = None) -> OperatorConfig:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return from_arguments(parser.parse_args(list(argv)), env or {})


def test_defaults_apply_without_flags_or_environment() -> None:
    config = parse()
    assert config.release_timeout == 60.0
    assert config.leader_election is True
    assert config.identity  # made up from the host name and pid


def test_the_starvation_limit_is_a_setting_and_never_negative() -> None:
    assert parse().starvation_seconds == 600.0
    assert parse(env={"MUSTER_STARVATION_SECONDS": "120"}).starvation_seconds == 120.0
    assert parse("--starvation-seconds", "30").starvation_seconds == 30.0
    with pytest.raises(ValueError, match="--starvation-seconds"):
        parse("--starvation-seconds", "-1")


def test_adoption_is_off_by_default_and_names_known_apis_and_a_selector() -> None:
    assert adoption(parse()) is None
    chosen = adoption(parse(env={"MUSTER_ADOPT": "volcano,scheduler-plugins"}))
    assert chosen is not None
    assert chosen.apis == (SCHEDULER_PLUGINS, VOLCANO)
    assert chosen.scheduler_names == ("volcano", "scheduler-plugins-scheduler")
    assert chosen.namespace_selector == {"matchLabels": {"scheduling.muster.dev/adopt": "true"}}
    everywhere = adoption(parse("--adopt=volcano", "--adopt-namespace-selector={}"))
    assert everywhere is not None and everywhere.namespace_selector == {}
    with pytest.raises(ValueError, match="--adopt: yunikorn not known"):
        parse("--adopt=yunikorn")
    with pytest.raises(ValueError, match="--adopt-namespace-selector"):
        parse("--adopt=volcano", "--adopt-namespace-selector=team=ml")


def test_topology_levels_are_label_keys_widest_first() -> None:
    assert engine_config(parse()).topology_levels == ()
    config = parse("--topology-levels", "zone, example.com/block,example.com/rack")
    assert engine_config(config).topology_levels == (
        "zone",
        "example.com/block",
        "example.com/rack",
    )
    env = {"MUSTER_TOPOLOGY_LEVELS": "zone,rack"}
    assert engine_config(parse(env=env)).topology_levels == ("zone", "rack")
    for bad in ("zone,not a key", "zone,zone"):
        with pytest.raises(ValueError, match="--topology-levels"):
            parse("--topology-levels", bad)


def test_environment_fills_what_flags_leave_unset() -> None:
    config = parse(env={"MUSTER_RELEASE_TIMEOUT": "5", "MUSTER_LEADER_ELECTION": "false"})
    assert config.release_timeout == 5.0
    assert config.leader_election is False


def test_flags_win_over_environment() -> None:
    config = parse(
        "--release-timeout=7", "--leader-election", env={env_name("release_timeout"): "5"}
    )
    assert config.release_timeout == 7.0
    assert config.leader_election is True


def test_kubeconfig_falls_back_to_the_standard_variable() -> None:
    assert parse(env={"KUBECONFIG": "/k"}).kubeconfig == "/k"
    assert parse("--kubeconfig=/mine", env={"KUBECONFIG": "/k"}).kubeconfig == "/mine"


@pytest.mark.parametrize(
    ("variable", "value", "flag"),
    [
        ("MUSTER_RELEASE_CONCURRENCY", "many", "--release-concurrency"),
        ("MUSTER_MANAGE_WEBHOOKS", "perhaps", "--manage-webhooks"),
        ("MUSTER_LOG_FORMAT", "xml", "--log-format"),
    ],
)
def test_bad_values_name_their_flag(variable: str, value: str, flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        parse(env={variable: value})


def test_the_webhook_service_is_namespace_slash_name_and_the_secret_needs_it() -> None:
    config = parse("--webhook-service=muster-system/muster-webhooks", "--webhook-secret=tls")
    assert config.webhook_secret == "tls"
    for wrong in ("muster-webhooks", "/name", "ns/", "a/b/c"):
        with pytest.raises(ValueError, match="NAMESPACE/NAME"):
            parse(f"--webhook-service={wrong}")
    with pytest.raises(ValueError, match="--webhook-secret needs --webhook-service"):
        parse(env={"MUSTER_WEBHOOK_SECRET": "tls"})


def test_max_rollbacks_is_a_setting_and_never_negative() -> None:
    assert parse().max_rollbacks == 3
    assert parse(env={"MUSTER_MAX_ROLLBACKS": "5"}).max_rollbacks == 5
    assert parse("--max-rollbacks", "0").max_rollbacks == 0
    with pytest.raises(ValueError, match="--max-rollbacks"):
        parse("--max-rollbacks", "-1")
