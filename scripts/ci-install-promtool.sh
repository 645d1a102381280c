#!/usr/bin/env bash
# Installs promtool (Debian's prometheus package) for the alert-rule test (tests/operations/alerts.test.ts).
# Idempotent: does nothing when promtool is already on PATH. CI runs as root.
# Only promtool is wanted, but Debian ships it in the server's package, which enables its service:
# in a CI container (no init, or Docker's policy-rc.d) nothing starts it; on a host with systemd,
# `systemctl disable --now prometheus` afterwards if you do not want a server on :9090.
set -euo pipefail
if command -v promtool >/dev/null 2>&1; then
  echo "promtool already installed: $(promtool --version 2>&1 | head -n 1)"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# The package lists are usually fresh on a CI image; refresh them only when the install needs it.
if ! $SUDO apt-get install -y --no-install-recommends prometheus; then
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends prometheus
fi
if ! command -v promtool >/dev/null 2>&1; then
  echo "promtool still missing after installing the prometheus package" >&2
  exit 1
fi
promtool --version 2>&1 | head -n 1
