"""kube-scheduler 1.37's words for a node refused by inter-pod rules (PodTopologySpread
and InterPodAffinity), so that a gang's refusal reads as kube-scheduler's would."""

from __future__ import annotations

SPREAD_LABEL_MISSING = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
SPREAD_NOT_MATCHED = "node(s) didn't match pod topology spread constraints"
AFFINITY_NOT_MATCHED = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_NOT_MATCHED = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
REASONS = (
    SPREAD_LABEL_MISSING,
    SPREAD_NOT_MATCHED,
    AFFINITY_NOT_MATCHED,
    ANTI_AFFINITY_NOT_MATCHED,
    EXISTING_ANTI_AFFINITY,
)
