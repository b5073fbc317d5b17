"""The fixed names of Muster's contract (docs/concepts.md and docs/api-reference.md).

Users' manifests, the webhooks, the operator and the tests all depend on these
strings, so they are spelled exactly once, here.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "scheduling.muster.dev"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

POD_GROUP_KIND: Final = "PodGroup"
POD_GROUP_PLURAL: Final = "podgroups"
WORKLOAD_KIND: Final = "Workload"
WORKLOAD_PLURAL: Final = "workloads"
CATEGORY: Final = "muster"

# Membership and gating of pods.
POD_GROUP_LABEL: Final = f"{GROUP}/pod-group"
GANG_GATE: Final = f"{GROUP}/gang"
# On the pod template of a Job gated for its native field `spec.scheduling`: what the
# gate was put there for. An API server without the WorkloadWithJob feature drops the
# field after admission, and the stored Job then no longer says why its pods are gated.
GATED_FOR_ANNOTATION: Final = f"{GROUP}/gated-for"
GATED_FOR_FIELD: Final = "spec.scheduling"
# On a member pod created bound to a node (spec.nodeName), by the pod webhook: the pod
# bypassed gang admission. The leader tells it, by an event on the pod, from what it
# observes (the webhook itself has no side effect); the value is the node it named.
BYPASSED_ANNOTATION: Final = f"{GROUP}/bypassed-gang-admission"

# Job opt-in: a label choosing the policy, annotations tuning it.
POLICY_LABEL: Final = f"{GROUP}/policy"
MIN_COUNT_ANNOTATION: Final = f"{GROUP}/min-count"
TOPOLOGY_KEY_ANNOTATION: Final = f"{GROUP}/topology-key"
DISRUPTION_MODE_ANNOTATION: Final = f"{GROUP}/disruption-mode"
# The narrowest topology level a gang prefers (a node label key), on a PodGroup, a
# Workload (for each of its PodGroups) or an opted-in Job.
TOPOLOGY_PREFERRED_ANNOTATION: Final = f"{GROUP}/topology-preferred"
# Slices, in the same places: every N consecutive members (`-slice-size`) in one domain
# of a node label key (`-slice`), inside the gang's required or preferred domain.
TOPOLOGY_SLICE_ANNOTATION: Final = f"{GROUP}/topology-slice"
TOPOLOGY_SLICE_SIZE_ANNOTATION: Final = f"{GROUP}/topology-slice-size"
# What orders a Job's pods into slices: the completion index of an Indexed Job's pod
# (an annotation on every such pod, and a label since Kubernetes 1.28).
COMPLETION_INDEX_KEY: Final = "batch.kubernetes.io/job-completion-index"

# Start-time estimates: how long pods run. The first is declared by users on a Job,
# PodGroup or pod; the second is how a Job's activeDeadlineSeconds reaches its PodGroup;
# the third names the CronJob a Job was made by, so that its earlier Jobs' runtimes count.
EXPECTED_RUNTIME_ANNOTATION: Final = f"{GROUP}/expected-runtime"
ACTIVE_DEADLINE_ANNOTATION: Final = f"{GROUP}/active-deadline-seconds"
CRON_JOB_ANNOTATION: Final = f"{GROUP}/cron-job"

POLICY_BASIC: Final = "basic"
POLICY_GANG: Final = "gang"
DISRUPTION_SINGLE: Final = "single"
DISRUPTION_ALL: Final = "all"

# The single template of a Workload made for a Job.
JOB_TEMPLATE_NAME: Final = "workers"
# A Workload's template names, comma-separated, kept by the operator for the TEMPLATES
# column of `kubectl get workloads`: a printer column shows one value of a JSON path,
# so `.spec.podGroupTemplates[*].name` would show the first template only.
TEMPLATES_ANNOTATION: Final = f"{GROUP}/templates"
# On the PodGroup of a Job that runs no pods (parallelism 0: paused), kept by the
# operator as the Job changes, so that the gang shows as paused, not as waiting for
# minCount pods that its Job will not make.
PAUSED_ANNOTATION: Final = f"{GROUP}/paused"
PAUSED: Final = "paused"  # status.minCount (the MIN column) of a paused gang
# On the PodGroup of a Job with a number of completions: how many pods the Job runs in
# all. Once some have succeeded, the Job makes only the pods still to run, which may
# be fewer than minCount; the gang then needs only those (`GroupRecord.completions`).
COMPLETIONS_ANNOTATION: Final = f"{GROUP}/completions"

# PodGroup condition types.
CONDITION_SCHEDULED: Final = "PodGroupScheduled"
CONDITION_INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"
CONDITION_DISRUPTION_TARGET: Final = "DisruptionTarget"

# PodGroup condition reasons.
REASON_SCHEDULED: Final = "Scheduled"
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_WAITING_FOR_PODS: Final = "WaitingForPods"
REASON_PREEMPTED: Final = "Preempted"
REASON_ROLLED_BACK: Final = "RolledBack"
REASON_SCHEDULER_ERROR: Final = "SchedulerError"
REASON_PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"

# Preemption policies (as core/v1 and scheduling.k8s.io spell them).
PREEMPT_LOWER_PRIORITY: Final = "PreemptLowerPriority"
PREEMPT_NEVER: Final = "Never"

# Upstream limits.
MAX_POD_GROUP_TEMPLATES: Final = 8

# The largest gang: its whole plan (pod name to node name) lives in the PodGroup's
# status, which etcd stores as one object of at most 1.5 MiB. Measured on the API
# server, a plan of 63-character pod names on 253-character node names (the longest
# names Kubernetes allows) stops fitting near 4,850 pods; 4,000 leaves room for the
# rest of the status (conditions, refusals, counts) and its managedFields.
MAX_GANG_SIZE: Final = 4000

# Upstream's bound on a PodGroup's priority (`+k8s:maximum` of scheduling.k8s.io/v1beta1):
# higher values belong to the system PriorityClasses (system-cluster-critical,
# system-node-critical), which pods may name and pod groups may not.
HIGHEST_USER_PRIORITY: Final = 1_000_000_000

# Muster's own bounds on what a PodGroup's status remembers of kube-scheduler's refusals.
MAX_REFUSED_NODES: Final = 32
MAX_REFUSAL_MESSAGE: Final = 1024

UNEVICTABLE_NAMESPACE: Final = "kube-system"
"""The namespace whose pods the operator may not evict (the chart's pod-rights policy):
the cluster's own components. The engine never plans one of them as a victim."""
