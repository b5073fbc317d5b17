#!/usr/bin/env bash
# Installs Debian packages with apt-get, unless every command they give is on PATH
# already; needs root (or sudo) otherwise. Usage:
#   hack/debian-install.sh WHAT-FOR PACKAGE[=COMMAND]...
# where COMMAND is the command that tells the package is there (the package's own
# name when not given).
set -euo pipefail

what_for=$1
shift
missing=()
for wanted in "$@"; do
  package=${wanted%%=*}
  command=${wanted#*=}
  command -v "$command" >/dev/null || missing+=("$package")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "==> installing ${missing[*]} (Debian packages) for $what_for"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
