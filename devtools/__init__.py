"""Muster's developer tools: what hack/, bench/ and the e2e tests share.

One of each: a free loopback port (`ports`), the kubectl built with the control plane
(`kubectl`), waiting for a condition (`waiting`), the local control plane (`cluster`),
Muster installed as the manifests install it (`installed`, `container`), the operator
launched as a process, locally or from the image (`operator`), and the objects the
scenarios submit (`factories`). The cluster's modules use only the standard library, so
`hack/cluster.py` runs before any virtualenv exists.
"""
