"""The soak: gang Jobs arriving steadily while faults strike at random, judged throughout.

`make soak DURATION=<s> SEED=<n>` (`python -m hack.soak`) starts a control plane of its
own, installs Muster with two replicas as the manifests install it, submits a seeded
stream of gang Jobs to namespace `muster-soak` and injects faults drawn from a
catalogue, one or two at a time, while a watcher of its own judges the invariants.
The pieces without I/O (`plan`, `judge`, `report`) are tested alone; `faults`,
`watch` and `run` carry them out against the cluster. See docs/soak.md.
"""
