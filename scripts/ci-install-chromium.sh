#!/usr/bin/env bash
# Installs Debian's chromium for the headless browser test (tests/oauth/browser.test.ts).
# Idempotent: does nothing when /usr/bin/chromium is already there. CI runs as root.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium
/usr/bin/chromium --version || true
