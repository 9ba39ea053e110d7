#!/usr/bin/env bash
# HAProxy (the Debian package) for the HA test (tests/e2e/tests/ha.rs), installed only when
# missing: the test puts it in front of three paddock replicas on loopback.
set -euo pipefail
if command -v haproxy >/dev/null 2>&1; then
  exit 0
fi
echo "installing haproxy (Debian package) for the HA test"
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq haproxy >/dev/null
haproxy -v | head -1
