#!/usr/bin/env bash
# Installs the browser the dashboard's e2e tests drive: Debian's headless Chromium and
# its chromedriver (Selenium, from the lock, drives them; nothing downloads a browser
# of its own). Does nothing when both are on PATH; needs root (or sudo) otherwise.
set -euo pipefail

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "==> installing chromium and chromium-driver (Debian packages) for the browser tests"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
