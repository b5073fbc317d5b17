# Muster's developer entry points. `make demo` shows gang scheduling working;
# `make test` runs every test. Both install what they need on a fresh machine.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test unit e2e faults test-versions lint lock crds docs manifests helm browser cluster-up cluster-down cluster-status \
        control-plane image run run-stop demo demo-down bench bench-engine bench-admission soak clean

# Dependencies come from the lock only, every file checked against its hash; Muster
# itself is then installed on top, with nothing else fetched.
$(STAMP): pyproject.toml requirements/dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements/dev.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

# The e2e runs take the image `make image` has just built rather than build it again.
BUILT_IMAGE := MUSTER_E2E_IMAGE_BUILT=1

## All tests: static checks, unit and property tests, then e2e on a real control plane,
## then the fault suite on a control plane of its own (one cluster up at a time); a test
## only an older Kubernetes can run (older_kubernetes) runs in test-versions. The
## image is built once, for both e2e runs (tests/e2e/support/image.py).
test: $(STAMP) control-plane browser lint image
	$(BIN)/pytest -m "not e2e" -q
	$(BUILT_IMAGE) $(BIN)/pytest -m "e2e and not faults and not older_kubernetes" -q
	$(BUILT_IMAGE) $(BIN)/pytest -m faults -q

## Fast tests only (no cluster; helm, built on first use, renders the chart).
unit: $(STAMP) helm
	$(BIN)/pytest -m "not e2e" -q

e2e: $(STAMP) control-plane browser image
	$(BUILT_IMAGE) $(BIN)/pytest -m "e2e and not faults and not older_kubernetes" -q

## Faults injected into a real control plane: a paused leader, an API server restart,
## an etcd compaction, the webhooks down, the operator killed mid-release, a member
## pod deleted mid-release, a planned node deleted, a policy refusing a release.
faults: $(STAMP) control-plane image
	$(BUILT_IMAGE) $(BIN)/pytest -m faults -q

## The smoke set on every Kubernetes version of SUPPORTED_KUBE_VERSIONS (hack/versions.env;
## VERSIONS=v1.32.13,v1.38.0-beta.0 for some), each built on first use; writes the table
## of docs/versions.md. Not part of `make test`: run before each release.
test-versions: $(STAMP)
	$(BIN)/python -m hack.versions $(if $(VERSIONS),--versions=$(VERSIONS))

lint: $(STAMP)
	$(BIN)/ruff check src tests bench hack devtools
	$(BIN)/ruff format --check src tests bench hack devtools
	$(BIN)/mypy
	$(BIN)/lint-imports

## Re-resolve the locks (requirements/*.txt, with hashes) from pyproject.toml: after a
## change of dependencies, or to take upgrades. Needs uv (`pip install uv`).
UV_COMPILE := uv pip compile pyproject.toml requirements/build.in --universal \
	--python-version 3.11 --generate-hashes --quiet --custom-compile-command "make lock"
lock:
	$(UV_COMPILE) -o requirements/runtime.txt
	$(UV_COMPILE) --extra test -o requirements/dev.txt

## Regenerate the CRDs from the pydantic models (never edit crds/ by hand), and with
## them the generated parts of charts/muster (CRD copies, webhook configurations) and
## manifests/, the chart rendered by helm.
crds: $(STAMP) helm
	$(BIN)/python -m muster.api.crdgen crds/
	$(BIN)/python -m hack.manifests

manifests: crds

## Regenerate docs/api-reference.md from the models' field docstrings.
docs: $(STAMP)
	$(BIN)/python -m muster.api.docgen docs/api-reference.md

## Build kube-apiserver, controller-manager, scheduler, kubectl, etcd, KWOK, Kueue's
## manager and helm from Go modules (cached under ~/.cache/muster; how long the first
## build takes: hack/README.md).
control-plane:
	hack/build.sh

## helm alone (the chart's fast tests and `make manifests` need nothing else).
helm:
	hack/build.sh --helm-only

## Debian's headless Chromium and chromedriver, for the dashboard's browser tests
## (installed with apt-get when missing).
browser:
	hack/browser.sh

## The operator image from the Dockerfile, built with podman on a base made from
## Debian's packages (no registry needed): muster:<version> in podman's store and
## dist/muster-<version>.oci.tar (hack/image.sh; docs/operations.md#the-image).
image: $(STAMP)
	hack/image.sh

## The dev cluster; `cluster.py up` builds what it runs on first use (Kueue only with
## CLUSTER_FLAGS=--kueue). KUBE_VERSION=vX.Y.Z runs that version (hack/versions.env
## keeps the default), built on first use like the default.
cluster-up:
	$(PYTHON) hack/cluster.py up $(CLUSTER_FLAGS)

cluster-down:
	$(PYTHON) hack/cluster.py down

## Muster on the dev cluster, as the manifests install it (hack/run.py); after cluster-up.
## With IMAGE=1, the image (built first) run with podman as the Deployment runs it.
run: $(STAMP) $(if $(IMAGE),image)
	$(BIN)/python -m hack.run $(if $(IMAGE),--image)

run-stop: $(STAMP)
	$(BIN)/python -m hack.run --stop

cluster-status:
	$(PYTHON) hack/cluster.py status

## Watch gang scheduling work: a local cluster, the operator, five stories. The demo
## runs no Kueue, so it builds none (`cluster.py up` builds what it runs).
demo: $(STAMP)
	$(BIN)/python -m hack.demo

demo-down:
	$(PYTHON) -m hack.demo --down

## End-to-end benchmark: plain kube-scheduler, Muster and native gang scheduling on
## fresh local control planes (500 KWOK nodes); writes bench/results/e2e.json.
bench: $(STAMP) control-plane
	$(BIN)/python -m bench.e2e

bench-engine: $(STAMP)
	$(BIN)/python -m bench.engine

## Admission load (200 reviews/s for 60 s) against the leader's Lease renewals, on the
## cluster of `make cluster-up`; writes bench/results/admission.json.
bench-admission: $(STAMP)
	$(BIN)/python -m bench.admission --kubeconfig .cluster/kubeconfig

clean: cluster-down
	rm -rf $(VENV) .cluster-e2e

## The soak (not part of `make test`): a cluster of its own, Muster with two replicas,
## a seeded stream of gang Jobs under random faults for DURATION seconds, every
## invariant watched; writes bench/results/soak-SEED.json and docs/soak.md's report, and
## fails on any violation (docs/soak.md).
DURATION ?= 600
SEED ?= $(shell date +%s)
FAULT_EVERY ?= 20
soak: $(STAMP) control-plane
	nice $(BIN)/python -m hack.soak --duration=$(DURATION) --seed=$(SEED) --fault-every=$(FAULT_EVERY)
