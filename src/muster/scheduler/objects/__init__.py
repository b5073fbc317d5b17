"""Reading plain Kubernetes objects exactly: fields, quantities, times, conditions,
identities and what a pod requests."""
