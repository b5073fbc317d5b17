"""What the engine remembers between cycles: each gang's memory (rollbacks, backoff, the
release clock) and kube-scheduler's refusals (kept in status), failed releases, pods'
expected runtimes, Jobs that lost the native field."""
