#!/usr/bin/env bash
# Builds the local control plane from Go modules, because the machines that run
# Muster's tests have no container engine and cannot download release binaries.
#
# Output: $MUSTER_CACHE/k8s/$KUBE_VERSION/bin/{kube-apiserver,kube-controller-manager,
# kube-scheduler,kubectl,etcd,kwok}, and Kueue's manager with its CRDs and webhook
# manifests in $MUSTER_CACHE/kueue/$KUEUE_VERSION/{bin/kueue,crds/,webhooks.yaml}, and
# helm in $MUSTER_CACHE/helm/$HELM_VERSION/bin/helm, and the PodGroup CRDs of the
# schedulers Muster adopts in $MUSTER_CACHE/adopted-crds/ (alone, with
# `--adopted-crds-only`: only the e2e tests of adoption install them), and KubeRay's
# ray-operator with its CRDs in $MUSTER_CACHE/kuberay/$KUBERAY_VERSION/{bin,crds}
# (alone, with `--kuberay-only`), and the Kubeflow training-operator with its CRDs in
# $MUSTER_CACHE/training-operator/$TRAINING_OPERATOR_VERSION/{bin,crds} (alone, with
# `--training-operator-only`). A component whose binary exists is
# skipped, so every call after the first returns in seconds. `--without-kueue` leaves
# Kueue out (for a cluster started without it) and `--without-helm` helm (a cluster
# runs without it); a later call without the flag builds only what is missing.
# `--helm-only` builds helm alone (the chart's tests and `make manifests` need
# nothing else). The time of a first build on a two-core machine is measured in
# hack/README.md.
set -euo pipefail

with_control_plane=1
with_kueue=1
with_helm=1
with_adopted_crds=0
with_kuberay=0
with_training_operator=0
for arg in "$@"; do
  case $arg in
    --without-kueue) with_kueue=0 ;;
    --without-helm) with_helm=0 ;;
    --helm-only) with_control_plane=0; with_kueue=0 ;;
    --adopted-crds-only) with_control_plane=0; with_kueue=0; with_helm=0; with_adopted_crds=1 ;;
    --kuberay-only) with_control_plane=0; with_kueue=0; with_helm=0; with_kuberay=1 ;;
    --training-operator-only)
      with_control_plane=0; with_kueue=0; with_helm=0; with_training_operator=1 ;;
    *) echo "usage: $0 [--without-kueue] [--without-helm] | $0 --helm-only" \
         "| $0 --adopted-crds-only | $0 --kuberay-only | $0 --training-operator-only" >&2
       exit 2 ;;
  esac
done

here=$(cd "$(dirname "$0")" && pwd)
# KUBE_VERSION from the environment (or make's command line) wins over versions.env's
# default, so that `make cluster-up KUBE_VERSION=v1.34.4` builds and runs that version.
kube_version_asked=${KUBE_VERSION:-}
# shellcheck source=versions.env
source "$here/versions.env"
KUBE_VERSION=${kube_version_asked:-$KUBE_VERSION}

cache=${MUSTER_CACHE:-$HOME/.cache/muster}
bin="$cache/k8s/$KUBE_VERSION/bin"
work="$cache/k8s/$KUBE_VERSION/work"
logs="$cache/k8s/$KUBE_VERSION/logs"
mkdir -p "$bin" "$work" "$logs"

export GOTOOLCHAIN=local
export GOFLAGS=-mod=mod
export CGO_ENABLED=0
export GOCACHE=${GOCACHE:-$cache/go-build}
export GOMODCACHE=${GOMODCACHE:-$cache/go-mod}

started=$(date +%s)

# Runs one build step in the background, printing elapsed time every 30 s, and
# names the step and its log when it fails.
step() {
  local name=$1; shift
  local log="$logs/$name.log"
  local t0; t0=$(date +%s)
  echo "==> building $name (log: $log)"
  ("$@") >"$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    local el=$(( $(date +%s) - t0 ))
    if (( el % 30 < 5 )) && kill -0 "$pid" 2>/dev/null; then
      echo "    ... $name still building, ${el}s elapsed"
    fi
  done
  if ! wait "$pid"; then
    echo "!!! building $name failed after $(( $(date +%s) - t0 ))s; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  echo "    $name built in $(( $(date +%s) - t0 ))s"
}

# Go builds a Kubernetes release with the Go its go.mod names (`go 1.27.0` from 1.38 on):
# the local Go when it is new enough, else GO_TOOLCHAIN from versions.env, fetched by
# the go command from the module proxy. The one place a release's Go is decided.
use_toolchain_of() {
  local wanted local_go
  wanted=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$1")
  local_go=$(go env GOVERSION); local_go=${local_go#go}
  if [ "$(printf '%s\n%s\n' "$wanted" "$local_go" | sort -V | tail -n 1)" != "$local_go" ]; then
    echo "Kubernetes $KUBE_VERSION needs Go $wanted (local: $local_go): building with $GO_TOOLCHAIN"
    export GOTOOLCHAIN=$GO_TOOLCHAIN
  fi
}

# The published version of a staging module for this release: the release's own
# (v0.MINOR.PATCH), or, when the module proxy does not serve that one (it lacks
# k8s.io/endpointslice v0.32.13), the newest patch of the same minor before it, said
# on stderr. Patch releases of a staging module within a minor keep their API.
published_version() {
  local module=$1 wanted=$2
  if go mod download "$module@$wanted" 2>/dev/null; then
    echo "$wanted"; return
  fi
  local fallback="" version
  for version in $(go list -m -versions "$module" 2>/dev/null); do
    if [ "${version%.*}" = "${wanted%.*}" ] &&
      [ "$(printf '%s\n%s\n' "$version" "$wanted" | sort -V | head -n 1)" = "$version" ]; then
      fallback=$version
    fi
  done
  # None at all: the build imports nothing of it (the sample modules), so the
  # replacement never has to be fetched.
  if [ -z "$fallback" ]; then echo "$wanted"; return; fi
  echo "    $module $wanted is not served by the module proxy: using $fallback" >&2
  echo "$fallback"
}

build_kubernetes() {
  cd "$work"
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  use_toolchain_of "$gomod"
  # Every staging module the kubernetes go.mod replaces with ./staging/... must be
  # replaced by its published version instead (looked up outside the scratch module).
  local staging_version="v0.${KUBE_VERSION#v1.}" replaces="" staging
  for staging in $(sed -n 's/^[[:space:]]*\(k8s\.io\/[^ ]*\) => \.\/staging\/.*/\1/p' "$gomod"); do
    replaces+="replace $staging => $staging $(published_version "$staging" "$staging_version")"$'\n'
  done
  local mod="$work/kubernetes"
  mkdir -p "$mod"
  cd "$mod"
  printf 'module muster.local/controlplane\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\n%s' \
    "$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")" "$KUBE_VERSION" "$replaces" >go.mod
  cat >tools.go <<'EOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF
  go mod tidy -e
  local date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  local ldf=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldf+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
  done
  go build -trimpath -tags=selinux,notest -ldflags "-s -w $ldf" -o "$bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl
}

build_etcd() {
  local mod="$work/etcd"
  mkdir -p "$mod"
  cd "$mod"
  [ -f go.mod ] || go mod init muster.local/etcd
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3
}

build_kwok() {
  GOBIN="$bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  # The stage definitions ship inside the module; keep a copy beside the binary.
  local stages="$GOMODCACHE/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
  rm -rf "$bin/../stages"
  cp -r "$stages" "$bin/../stages"
  chmod -R u+w "$bin/../stages"
}

# Kueue's module has no replace directives, so `go install @version` builds it as is.
# It pins its own k8s.io libraries (not the control plane's), so little is shared
# with the Kubernetes build. The CRDs and webhook manifests ship inside the module;
# keep a copy beside the binary (hack/kueue.py installs them).
kueue_dir="$cache/kueue/$KUEUE_VERSION"
build_kueue() {
  mkdir -p "$kueue_dir/bin"
  local ldf="-X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION"
  ldf+=" -X sigs.k8s.io/kueue/pkg/version.BuildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  GOBIN="$kueue_dir/bin" go install -trimpath -ldflags "-s -w $ldf" \
    "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION"
  local config="$GOMODCACHE/sigs.k8s.io/kueue@$KUEUE_VERSION/config/components"
  rm -rf "$kueue_dir/crds"
  cp -r "$config/crd/bases" "$kueue_dir/crds"
  cp "$config/webhook/manifests.yaml" "$kueue_dir/webhooks.yaml"
  chmod -R u+w "$kueue_dir/crds" "$kueue_dir/webhooks.yaml"
}

# Helm's module builds with `go install @version` as is (no replace directives). It
# pins k8s.io libraries of its own, so little is shared with the control plane's build.
helm_bin="$cache/helm/$HELM_VERSION/bin"
build_helm() {
  mkdir -p "$helm_bin"
  local ldf="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  ldf+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  # The Kubernetes version `helm template` and `helm lint` assume, which otherwise
  # stays at 1.20 (older than the chart's kubeVersion): that of helm's client-go, as
  # helm's own Makefile sets it.
  local gomod minor
  gomod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  minor=$(sed -n 's/^[[:space:]]*k8s\.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod")
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldf+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  GOBIN="$helm_bin" go install -trimpath -ldflags "-s -w $ldf" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

# The PodGroup CRDs of the schedulers Muster adopts: scheduler-plugins ships its CRD in
# its module; Volcano's API module ships none, so controller-gen (built from the proxy)
# generates it from the module's Go types, in a scratch module that requires them.
adopted_crds="$cache/adopted-crds/$SCHEDULER_PLUGINS_VERSION-$VOLCANO_APIS_VERSION"
build_adopted_crds() {
  local tools="$cache/controller-gen/$CONTROLLER_TOOLS_VERSION"
  local scratch="$adopted_crds/volcano-module"
  mkdir -p "$tools" "$scratch"
  [ -x "$tools/controller-gen" ] || GOBIN="$tools" go install -trimpath \
    "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION"
  local plugins
  plugins=$(go mod download -json "sigs.k8s.io/scheduler-plugins@$SCHEDULER_PLUGINS_VERSION" \
    | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  cp "$plugins/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" "$adopted_crds/"
  printf 'module muster.dev/volcanocrd\n\ngo 1.23\n\nrequire volcano.sh/apis %s\n' \
    "$VOLCANO_APIS_VERSION" >"$scratch/go.mod"
  printf 'package volcanocrd\n\nimport _ "volcano.sh/apis/pkg/apis/scheduling/v1beta1"\n' \
    >"$scratch/types.go"
  (cd "$scratch" && go mod tidy && "$tools/controller-gen" crd \
    paths=volcano.sh/apis/pkg/apis/scheduling/v1beta1 output:crd:dir="$scratch/out")
  cp "$scratch/out/scheduling.volcano.sh_podgroups.yaml" "$adopted_crds/"
  chmod u+w "$adopted_crds"/*.yaml
}

# KubeRay's module has no replace directives, so `go install @version` builds it as is;
# its CRDs ship inside the module.
kuberay_dir="$cache/kuberay/$KUBERAY_VERSION"
build_kuberay() {
  mkdir -p "$kuberay_dir/bin"
  GOBIN="$kuberay_dir/bin" go install -trimpath -ldflags "-s -w" \
    "github.com/ray-project/kuberay/ray-operator@$KUBERAY_VERSION"
  local bases="$GOMODCACHE/github.com/ray-project/kuberay/ray-operator@$KUBERAY_VERSION/config/crd/bases"
  rm -rf "$kuberay_dir/crds"
  cp -r "$bases" "$kuberay_dir/crds"
  chmod -R u+w "$kuberay_dir/crds"
}

# The training-operator's module has no replace directives either; its main package is
# cmd/training-operator.v1 and its CRDs ship inside the module.
training_operator_dir="$cache/training-operator/$TRAINING_OPERATOR_VERSION"
build_training_operator() {
  mkdir -p "$training_operator_dir/bin"
  GOBIN="$training_operator_dir/bin" go install -trimpath -ldflags "-s -w" \
    "github.com/kubeflow/training-operator/cmd/training-operator.v1@$TRAINING_OPERATOR_VERSION"
  local bases="$GOMODCACHE/github.com/kubeflow/training-operator@$TRAINING_OPERATOR_VERSION"
  bases="$bases/manifests/base/crds"
  rm -rf "$training_operator_dir/crds"
  mkdir -p "$training_operator_dir/crds"
  cp "$bases"/*.yaml "$training_operator_dir/crds/"
  rm -f "$training_operator_dir/crds/kustomization.yaml"
  chmod -R u+w "$training_operator_dir/crds"
}

have() { for b in "$@"; do [ -x "$bin/$b" ] || return 1; done; }

if (( with_control_plane )); then
  if ! have kube-apiserver kube-controller-manager kube-scheduler kubectl; then
    echo "First build of Kubernetes $KUBE_VERSION on this machine (see hack/README.md for how long)."
    step kubernetes build_kubernetes
  fi
  have etcd || step etcd build_etcd
  have kwok || step kwok build_kwok
fi
if (( with_kueue )) && { [ ! -x "$kueue_dir/bin/kueue" ] || [ ! -f "$kueue_dir/webhooks.yaml" ]; }; then
  echo "First build of Kueue $KUEUE_VERSION on this machine."
  step kueue build_kueue
fi
if (( with_helm )) && [ ! -x "$helm_bin/helm" ]; then
  echo "First build of Helm $HELM_VERSION on this machine."
  step helm build_helm
fi

if (( with_adopted_crds )); then
  [ -f "$adopted_crds/scheduling.volcano.sh_podgroups.yaml" ] || step adopted-crds build_adopted_crds
  echo "adopted PodGroup CRDs ready in $adopted_crds"
fi

if (( with_kuberay )); then
  [ -x "$kuberay_dir/bin/ray-operator" ] || step kuberay build_kuberay
  echo "KubeRay ray-operator ready in $kuberay_dir"
fi

if (( with_training_operator )); then
  [ -x "$training_operator_dir/bin/training-operator.v1" ] ||
    step training-operator build_training_operator
  echo "training-operator ready in $training_operator_dir"
fi

if (( with_control_plane )); then
  echo "control plane binaries ready in $bin ($(( $(date +%s) - started ))s)"
fi
if (( with_helm )); then
  echo "helm ready in $helm_bin ($(( $(date +%s) - started ))s)"
fi
