#!/usr/bin/env bash
# Installs what `make image` builds with: Debian's mmdebstrap (the base image's root
# file system, from Debian's packages), podman and buildah (the build, without a
# daemon), skopeo (the OCI archive, and pushing it) and runc (podman's runtime here).
# Does nothing when all are on PATH; needs root (or sudo) otherwise.
set -euo pipefail

missing=()
for tool in mmdebstrap podman buildah skopeo runc; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "==> installing ${missing[*]} (Debian packages) for the image build"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
