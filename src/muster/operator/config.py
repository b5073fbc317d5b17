"""The operator's settings, from command-line flags with environment fallbacks.

Every flag has an environment variable (`MUSTER_` + the flag in upper snake case) so
a Deployment can configure the operator without rewriting its command line; a flag
given explicitly always wins over the environment.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from muster.api.adoption import (
    DEFAULT_NAMESPACE_SELECTOR,
    DEFAULT_SCHEDULER_NAMES,
    Adoption,
    adoption_from,
)
from muster.api.names import is_label_key
from muster.scheduler import EngineConfig

ENV_PREFIX = "MUSTER_"
# The flags that tune decisions: `muster explain` takes them too, so that it decides
# as the operator does.
ENGINE_FIELDS = (
    "release_timeout",
    "victims_timeout",
    "rollback_backoff",
    "rollback_backoff_max",
    "max_rollbacks",
    "starvation_seconds",
    "orphan_grace",
    "topology_levels",
    "keep_verdicts",
    "verdict_flush_seconds",
)


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """What `muster run` needs to know; defaults suit a single local replica."""

    kubeconfig: str | None = None
    release_timeout: float = 60.0
    victims_timeout: float = 300.0
    rollback_backoff: float = 10.0
    rollback_backoff_max: float = 300.0
    max_rollbacks: int = 3
    starvation_seconds: float = 600.0
    keep_verdicts: bool = True
    verdict_flush_seconds: float = 300.0
    estimate_horizon: float = 86400.0
    estimate_interval: float = 10.0
    estimate_budget: float = 2.0
    debounce: float = 0.2
    resync_period: float = 30.0
    release_concurrency: int = 32
    orphan_grace: float = 10.0
    topology_levels: str = ""
    record_trace: str = ""
    webhook_host: str = "127.0.0.1"
    webhook_port: int = 9443
    webhook_cert: str | None = None
    webhook_key: str | None = None
    webhook_configuration: str = "muster.scheduling.muster.dev"
    manage_webhooks: bool = True
    webhook_service: str = ""
    webhook_secret: str = ""
    health_host: str = "0.0.0.0"
    health_port: int = 8080
    dashboard_host: str = "127.0.0.1"
    dashboard_port: int = 0
    leader_election: bool = True
    lease_name: str = "muster-operator"
    lease_namespace: str = "default"
    lease_duration: float = 15.0
    lease_renew_deadline: float = 10.0
    lease_retry_period: float = 2.0
    kube_qps: float = 100.0
    kube_burst: int = 200
    watch_timeout: float = 300.0
    identity: str = ""
    log_format: str = "plain"
    log_level: str = "info"
    adopt: str = ""
    adopt_namespace_selector: str = DEFAULT_NAMESPACE_SELECTOR
    adopt_scheduler_names: str = DEFAULT_SCHEDULER_NAMES


_HELP: dict[str, str] = {
    "kubeconfig": "kubeconfig file (default: $KUBECONFIG, then in-cluster)",
    "release_timeout": "seconds a released pod may stay unbound, with kube-scheduler "
    "binding nothing else, before its gang is rolled back",
    "victims_timeout": "seconds a preempting gang waits, from its admission, for the pods "
    "preempted for it to leave before it is rolled back",
    "rollback_backoff": "first delay before a rolled-back gang is admitted again (doubles)",
    "rollback_backoff_max": "the longest delay between readmissions of a rolled-back gang",
    "max_rollbacks": "rollbacks in a row because kube-scheduler refused a released pod "
    "after which a gang is not planned again until a node is added, removed or changed "
    "(0: no limit)",
    "starvation_seconds": "seconds a gang waits before smaller gangs behind it may no "
    "longer take the capacity it needs",
    "keep_verdicts": "keep a waiting gang's verdict until something that could change it "
    "changes, instead of deciding every waiting gang in every cycle (same decisions)",
    "verdict_flush_seconds": "seconds after which a kept verdict is decided afresh all the "
    "same (a safety net)",
    "estimate_horizon": "seconds ahead that start-time estimates look; a gang not "
    "started by then shows >24h (for the default)",
    "estimate_interval": "fewest seconds between two start-time forecasts (each runs the "
    "engine forward in time); one runs only when the cluster or the queue changed",
    "estimate_budget": "seconds of CPU time one start-time forecast may take (it runs in a "
    "process of its own, at idle priority); past it, the gangs not yet reached show unknown",
    "debounce": "seconds to gather events before a scheduling cycle starts",
    "resync_period": "seconds between cycles when nothing happens",
    "release_concurrency": "pods released (or evicted, or deleted) in parallel",
    "orphan_grace": "seconds from a member pod's creation before it gets a PodGroupNotFound "
    "event, if its PodGroup does not exist",
    "topology_levels": "node label keys of the cluster's topology levels, widest first and "
    "comma-separated (e.g. topology.kubernetes.io/zone,example.com/block,example.com/rack): "
    "a gang preferring one level falls back to the wider ones in this order; a Kueue "
    "Topology in the cluster declares them instead",
    "record_trace": "file to record the engine's inputs and decisions in as they happen "
    "(JSON lines, afresh at each start), for `muster replay`",
    "webhook_host": "address the admission webhooks listen on and advertise",
    "webhook_port": "port of the admission webhooks (HTTPS)",
    "webhook_cert": "PEM certificate for the webhooks (default: one issued at start)",
    "webhook_key": "PEM private key for --webhook-cert",
    "webhook_configuration": "name of the webhook configurations the operator manages",
    "manage_webhooks": "create and update the webhook configurations on start",
    "webhook_service": "NAMESPACE/NAME of the Service in front of the webhooks, "
    "which the webhook configurations then call instead of a URL",
    "webhook_secret": "Secret (in the Service's namespace) for the webhooks' CA and "
    "certificate: created, renewed and trusted in the configurations by the operator",
    "health_host": "address of /metrics, /healthz and /readyz",
    "health_port": "port of /metrics, /healthz and /readyz (HTTP)",
    "dashboard_host": "address of the read-only dashboard page",
    "dashboard_port": "port of the read-only dashboard page (HTTP; 0: not served); it "
    "watches the cluster as `muster dashboard` does, on every replica that serves it, "
    "and answers only bearer tokens whose user may get podgroups in all namespaces",
    "leader_election": "elect one scheduling replica through a coordination.k8s.io Lease",
    "lease_name": "name of the leader election Lease",
    "lease_namespace": "namespace of the leader election Lease",
    "lease_duration": "seconds a standby waits, from the last renewal it saw, before it "
    "takes the Lease over",
    "lease_renew_deadline": "seconds after its last successful renewal at which a leader "
    "stops writing and steps down (shorter than --lease-duration)",
    "lease_retry_period": "seconds between renewals, and between attempts to acquire",
    "kube_qps": "requests per second to the API server, sustained (client-side limit)",
    "kube_burst": "requests to the API server at once above --kube-qps",
    "watch_timeout": "seconds after which the API server ends a watch (randomised up to "
    "twice that), which is then resumed",
    "identity": "this replica's name in the Lease (default: host name and pid)",
    "log_format": "plain or json",
    "log_level": "debug, info, warning or error",
    "adopt": "other schedulers' PodGroups to gang-schedule, comma-separated: "
    "scheduler-plugins, volcano (docs/frameworks.md); empty: none",
    "adopt_namespace_selector": "the namespaces whose PodGroups and pods are adopted, a "
    "label selector as JSON",
    "adopt_scheduler_names": "scheduler names that adopted pods are moved from to the "
    "default scheduler, comma-separated",
}

_CHOICES: dict[str, tuple[str, ...]] = {
    "log_format": ("plain", "json"),
    "log_level": ("debug", "info", "warning", "error"),
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def env_name(name: str) -> str:
    """The environment variable that configures a field, e.g. MUSTER_RELEASE_TIMEOUT."""
    return ENV_PREFIX + name.upper()


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def engine_config(config: OperatorConfig) -> EngineConfig:
    """The engine's tunables, from the operator's settings."""
    values = {name: getattr(config, name) for name in ENGINE_FIELDS}
    values["topology_levels"] = topology_levels(config.topology_levels)
    return EngineConfig(**values)


def adoption(config: OperatorConfig) -> Adoption | None:
    """What the operator adopts (`--adopt`), or None."""
    return adoption_from(
        config.adopt, config.adopt_scheduler_names, config.adopt_namespace_selector
    )


def topology_levels(text: str) -> tuple[str, ...]:
    """The levels of `--topology-levels`: comma-separated label keys, widest first."""
    levels = tuple(part.strip() for part in text.split(",") if part.strip())
    for level in levels:
        if not is_label_key(level):
            raise ValueError(f"--topology-levels: {level!r} is not a valid label key")
    if len(set(levels)) != len(levels):
        raise ValueError("--topology-levels: a level is given twice")
    return levels


def topology_levels_argument(text: str) -> tuple[str, ...]:
    """`topology_levels` as an argparse type, for the commands that take the flag alone."""
    try:
        return topology_levels(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--topology-levels: ")) from error


def add_arguments(parser: argparse.ArgumentParser, *, only: tuple[str, ...] | None = None) -> None:
    """Declare one flag per field (or per field in `only`); defaults stay unset so the
    environment can fill them."""
    for field in fields(OperatorConfig):
        if only is not None and field.name not in only:
            continue
        default = field.default
        help_text = f"{_HELP[field.name]} (env {env_name(field.name)}; default {default!r})"
        kind: dict[str, Any] = {"choices": _CHOICES.get(field.name)}
        if isinstance(default, bool):
            kind = {"action": argparse.BooleanOptionalAction}
        parser.add_argument(
            _flag(field.name), dest=field.name, default=None, help=help_text, **kind
        )


def from_arguments(args: argparse.Namespace, env: Mapping[str, str]) -> OperatorConfig:
    """Flags first, then `MUSTER_*` variables, then the defaults; values converted by type."""
    values: dict[str, Any] = {}
    for field in fields(OperatorConfig):
        raw = getattr(args, field.name, None)
        if raw is None:
            raw = env.get(env_name(field.name))
        if raw is None:
            continue
        values[field.name] = _convert(field.name, field.default, raw)
    if "kubeconfig" not in values and env.get("KUBECONFIG"):
        values["kubeconfig"] = env["KUBECONFIG"]
    if not values.get("identity"):
        values["identity"] = f"{os.uname().nodename}-{os.getpid()}"
    if values.get("starvation_seconds", 0.0) < 0:
        raise ValueError("--starvation-seconds must not be negative")
    if values.get("verdict_flush_seconds", 0.0) < 0:
        raise ValueError("--verdict-flush-seconds must not be negative")
    if values.get("max_rollbacks", 0) < 0:
        raise ValueError("--max-rollbacks must not be negative")
    if values.get("kube_qps", 1.0) <= 0 or values.get("kube_burst", 1) < 1:
        raise ValueError("--kube-qps must be positive and --kube-burst at least 1")
    if values.get("watch_timeout", 1.0) < 1:
        raise ValueError("--watch-timeout must be at least 1 second")
    topology_levels(values.get("topology_levels", ""))
    adoption_from(
        values.get("adopt", ""),
        values.get("adopt_scheduler_names", DEFAULT_SCHEDULER_NAMES),
        values.get("adopt_namespace_selector", DEFAULT_NAMESPACE_SELECTOR),
    )
    if values.get("webhook_service"):
        parse_service(values["webhook_service"])
    elif values.get("webhook_secret"):
        raise ValueError("--webhook-secret needs --webhook-service (the Secret's namespace)")
    return OperatorConfig(**values)


def parse_service(text: str) -> tuple[str, str]:
    """The namespace and name of `--webhook-service NAMESPACE/NAME`."""
    namespace, _, name = text.partition("/")
    if not namespace or not name or "/" in name:
        raise ValueError(f"--webhook-service: {text!r} is not NAMESPACE/NAME")
    return namespace, name


def _convert(name: str, default: object, raw: object) -> object:
    if isinstance(raw, bool) or not isinstance(raw, str):
        return raw
    try:
        if isinstance(default, bool):
            return _parse_bool(raw)
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError as error:
        raise ValueError(f"{_flag(name)}: {error}") from error
    choices = _CHOICES.get(name)
    if choices is not None and raw not in choices:
        raise ValueError(f"{_flag(name)}: {raw!r} is not one of {', '.join(choices)}")
    return raw
