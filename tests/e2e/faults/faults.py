"""What the fault tests share: the Lease's holder, the operator's metrics, the audit log.

The audit log (`hack/cluster.py up --audit`) has one JSON line per request with its
verb, object, user agent and the moment the API server received it. The operator's
user agent is `muster/<identity>`, so the requests of two replicas that share one
kubeconfig are told apart there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tests.e2e.cluster import Kubectl
from tests.e2e.harness import OperatorProcess

LEASE = ("lease", "muster-operator", "-n", "default")
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def holder(kubectl: Kubectl) -> str | None:
    found = kubectl("get", *LEASE, "-o", "jsonpath={.spec.holderIdentity}", check=False)
    return found.stdout or None


def metric_samples(process: OperatorProcess, name: str) -> dict[str, float]:
    """A metric's samples by label set (as Prometheus prints it, e.g. `resource="..."`)."""
    samples = {}
    for line in process.metrics().splitlines():
        if line.startswith((f"{name} ", f"{name}{{")):
            labels = line.partition("{")[2].rpartition("}")[0]
            samples[labels] = float(line.rsplit(" ", 1)[1])
    return samples


def metric_total(process: OperatorProcess, name: str) -> float:
    """The sum of a metric's samples over all its labels (0 while it has none)."""
    return sum(metric_samples(process, name).values())


@dataclass(frozen=True)
class Request:
    """One line of the audit log."""

    verb: str
    user_agent: str
    resource: str
    name: str
    code: int
    received: datetime

    @property
    def write(self) -> bool:
        return self.verb in WRITES


def audit_log(state_dir: Path) -> list[Request]:
    path = state_dir / "logs" / "audit.log"
    assert path.exists(), f"{path} is missing: the cluster was not started with --audit"
    requests = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the line being written right now
        ref = entry.get("objectRef") or {}
        requests.append(
            Request(
                verb=str(entry.get("verb", "")),
                user_agent=str(entry.get("userAgent", "")),
                resource=str(ref.get("resource", "")),
                name=str(ref.get("name", "")),
                code=int((entry.get("responseStatus") or {}).get("code") or 0),
                received=datetime.fromisoformat(entry["requestReceivedTimestamp"]),
            )
        )
    return requests


def user_agent(identity: str) -> str:
    return f"muster/{identity}"
