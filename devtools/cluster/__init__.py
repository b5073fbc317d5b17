"""The local control plane, one module per job: where it keeps its state (`layout`), its
certificates (`pki`), its components as processes (`processes`, `probes`), KWOK's
configuration (`kwok`), starting it (`control_plane`), its commands (`commands`, `etcd`)
and a cluster as an object for tests and benchmarks (`local`). Standard library only:
hack/cluster.py runs it before any virtualenv exists."""
