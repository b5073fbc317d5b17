#!/usr/bin/env bash
# Builds the operator image from the repository's Dockerfile with no registry and no
# container daemon: the base images' root file systems are made from Debian's
# packages by mmdebstrap and imported into podman's store, and `podman build` runs the
# Dockerfile's steps in a chroot. The result is tagged muster:<version> in podman's
# store and exported to dist/muster-<version>.oci.tar, which
#   skopeo copy oci-archive:dist/muster-<version>.oci.tar docker://REGISTRY/muster:<version>
# pushes. Arguments go to `podman build`.
#
# Reproducible: every time in the image (its creation, its history, each file's mtime)
# is that of the last commit that changed what the image is built from
# (SOURCE_DATE_EPOCH); the bases are cached under
# ~/.cache/muster/image by suite, packages and UTC day (Debian's mirror moves, so a
# day's builds share one; MUSTER_BASE_DAY=YYYY-MM-DD takes a cached day's), and made
# with that day's midnight as their time. Two builds from one commit on one base give
# the same image digest and the same archive.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

SUITE=bookworm
MIRROR=${MUSTER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The runtime base holds only what `muster run` needs (numpy's and re2's wheels need
# libstdc++); the build stage's adds what makes a virtualenv (Debian's ensurepip,
# whose pip never reaches the final image).
RUNTIME_PACKAGES=python3,ca-certificates,libstdc++6
BUILD_PACKAGES=$RUNTIME_PACKAGES,python3-venv
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml)
IMAGE=localhost/muster:$VERSION
ARCHIVE=dist/muster-$VERSION.oci.tar
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/muster/image
DAY=${MUSTER_BASE_DAY:-$(date -u +%Y-%m-%d)}
PIP=${PIP:-.venv/bin/pip}
# The image's inputs: the time of the last commit that changed one dates the image.
INPUTS=(Dockerfile .dockerignore pyproject.toml README.md requirements/runtime.txt src hack/image.sh)
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct -- "${INPUTS[@]}")
export SOURCE_DATE_EPOCH

# The base image named for `packages`, made and imported unless podman has it.
base() {
  local packages=$1 key tarball epoch
  key=$SUITE-$DAY-$(printf '%s' "$MIRROR $packages" | sha256sum | cut -c1-12)
  if podman image exists "localhost/muster-base:$key"; then
    echo "localhost/muster-base:$key"
    return
  fi
  tarball=$CACHE/$key.tar
  epoch=$(date -u -d "$DAY" +%s)
  if [ ! -f "$tarball" ]; then
    echo "==> making the base $key ($packages) with mmdebstrap" >&2
    mkdir -p "$CACHE"
    # Documentation and translations are left out; each package's copyright stays.
    SOURCE_DATE_EPOCH=$epoch nice mmdebstrap --quiet --variant=essential --format=tar \
      --include="$packages" \
      --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' \
      "$SUITE" "$tarball.part" "$MIRROR" >&2
    mv "$tarball.part" "$tarball"
  fi
  # podman import dates the image by the file's mtime.
  touch -d "@$epoch" "$tarball"
  podman import --quiet "$tarball" "localhost/muster-base:$key" >/dev/null
  echo "localhost/muster-base:$key"
}

# The lock's wheels, for Debian's Python 3.11 on this architecture, downloaded (and
# checked) here once per lock: the build itself reaches no index.
wheels() {
  local cache arch platforms=() minor
  arch=$(uname -m)
  # Debian bookworm's glibc is 2.36: every manylinux tag up to it fits.
  for minor in $(seq 5 36); do
    platforms+=(--platform "manylinux_2_${minor}_$arch")
  done
  platforms+=(--platform "manylinux1_$arch" --platform "manylinux2010_$arch")
  platforms+=(--platform "manylinux2014_$arch" --platform any)
  cache=$CACHE/wheels-$(sha256sum requirements/runtime.txt | cut -c1-12)
  if [ ! -f "$cache/.complete" ]; then
    echo "==> downloading the wheels of requirements/runtime.txt" >&2
    nice "$PIP" download --quiet --require-hashes --no-deps --only-binary :all: \
      --implementation cp --python-version 3.11 --abi cp311 --abi abi3 --abi none \
      "${platforms[@]}" \
      --dest "$cache" -r requirements/runtime.txt >&2
    touch "$cache/.complete"
  fi
  rm -rf build/image
  mkdir -p build/image
  cp -r "$cache" build/image/wheels
}

# mmdebstrap makes the bases, podman and buildah build, skopeo exports, runc runs.
hack/debian-install.sh "the image build" mmdebstrap podman buildah skopeo runc
wheels
runtime_base=$(base "$RUNTIME_PACKAGES")
build_base=$(base "$BUILD_PACKAGES")

echo "==> building $IMAGE (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)"
# runc: crun refuses some hosts' cgroup layouts; the ulimits: podman's defaults may be
# above the host's hard limits. Every step runs afresh: podman's layer cache knows
# neither --timestamp nor a LABEL's value, so a step it kept from a build of another
# date would keep that date's file times.
nice podman build --quiet --no-cache --pull=never --isolation chroot --network host --runtime runc \
  --ulimit nofile=16384:16384 --ulimit nproc=1024:1024 \
  --timestamp "$SOURCE_DATE_EPOCH" \
  --build-arg "BASE=$runtime_base" --build-arg "BUILD_BASE=$build_base" \
  --build-arg "SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH" \
  --build-arg "CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)" \
  --tag "$IMAGE" "$@" . >/dev/null

# The OCI layout, then tarred with its times, owners and order fixed: skopeo's own
# oci-archive would date its entries by the clock.
rm -rf build/image/oci "$ARCHIVE"
skopeo copy --quiet "containers-storage:$IMAGE" "oci:build/image/oci:muster:$VERSION"
mkdir -p dist
tar --create --file "$ARCHIVE" --directory build/image/oci --format=gnu --sort=name \
  --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner .
echo "==> $IMAGE $(podman image inspect --format '{{.Id}}' "$IMAGE")"
echo "==> $ARCHIVE $(skopeo inspect --format '{{.Digest}}' "oci-archive:$ARCHIVE")"
