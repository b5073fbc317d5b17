"""KWOK's configuration: the stages that make simulated nodes Ready and pods run."""

from __future__ import annotations

from pathlib import Path

from devtools.builds import bin_dir

# KWOK renews node Leases every quarter of this; thousands of nodes renewing every 10 s
# would keep two cores busy, so large benchmarks ask for longer Leases.
DEFAULT_NODE_LEASE_SECONDS = 40

# A deleted (or evicted) pod first stops, as a kubelet would stop it: its phase becomes
# Failed. Only then is it removed. KWOK's own fast pod-delete stage skips the first
# step, so a Job with a podFailurePolicy (which waits for a terminal phase before it
# counts or replaces a pod) would keep such a pod Terminating forever.
POD_TERMINATE_STAGES = """\
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-terminate
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending', 'Running']
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 137
            finishedAt: {{ $now | Quote }}
            reason: Error
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.status.phase'
      operator: 'In'
      values: ['Succeeded', 'Failed']
  next:
    delete: true
"""


def kwok_config(path: Path, node_lease_seconds: int = DEFAULT_NODE_LEASE_SECONDS) -> None:
    """KWOK's configuration plus the stages that make nodes Ready and pods run.

    Job-owned pods complete after the delay in the annotation
    `pod-complete.stage.kwok.x-k8s.io/delay` (a Go duration), 5 s when it is absent, so
    Jobs reach Complete; tests that need long-running pods set a long delay. KWOK
    renews each node's Lease every quarter of `node_lease_seconds`.
    """
    stages = bin_dir().parent / "stages"
    parts = [
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\n"
        "options:\n  manageAllNodes: true\n  podPlayStageParallelism: 16\n"
        "  nodePlayStageParallelism: 8\n  nodeLeaseParallelism: 8\n"
        "  podsOnNodeSyncParallelism: 4\n"
        f"  nodeLeaseDurationSeconds: {node_lease_seconds}\n",
    ]
    for rel in (
        "node/fast/node-initialize.yaml",
        "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "pod/fast/pod-ready.yaml",
    ):
        parts.append((stages / rel).read_text())
    parts.append(POD_TERMINATE_STAGES)
    complete = (stages / "pod/general/pod-complete.yaml").read_text()
    complete = complete.replace("durationMilliseconds: 1000", "durationMilliseconds: 5000")
    # Without jitter the delay is exactly the annotation's (a jitter below it wins).
    complete = "\n".join(
        line
        for line in complete.splitlines()
        if "jitterDuration" not in line and "jitter-delay" not in line
    )
    parts.append(complete)
    path.write_text("\n---\n".join(part.strip() + "\n" for part in parts))
