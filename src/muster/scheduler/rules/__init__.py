"""The rules pods and nodes set, as records evaluated over the node table: labels,
node affinity, taints, pod affinity and spread, volumes, disruption budgets."""
