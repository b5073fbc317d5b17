#!/usr/bin/env bash
# Installs the browser the dashboard's e2e tests drive: Debian's headless Chromium and
# its chromedriver (Selenium, from the lock, drives them; nothing downloads a browser
# of its own). Does nothing when both are on PATH.
exec "$(dirname "$0")/debian-install.sh" "the browser tests" \
  chromium chromium-driver=chromedriver
