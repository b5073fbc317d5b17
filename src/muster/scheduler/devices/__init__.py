"""Dynamic Resource Allocation, in one place: devices published in ResourceSlices and
claimed through ResourceClaims, allocated as kube-scheduler's DynamicResources plugin
would allocate them.

The package follows a claim through the engine's stages, each module importing only
those below it (an import-linter contract keeps it so): `selector_cost` and
`selectors` (CEL selectors, their cost and judgements), `intake` (the objects read
into records), `selector_cases` (which judgements a claim needs), `kinds` (the
objects' kinds taken in by the state), `book` (the state's record of devices and
claims), `search` and `ledger` (an allocation on one node, and the cycle's devices),
`gang` (a gang's claims over the cycle's devices) and `preemption` (the devices
victims free).
"""
