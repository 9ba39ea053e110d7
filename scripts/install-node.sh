#!/usr/bin/env bash
# The real node's packages (tests/testbed/node.sh, docs/testing.md "The real node"), installed
# only when missing, all from Debian: containerd and runc (the runtime), the CNI plugins (the pod
# bridge), iptables (kube-proxy's rules, inside the node's network namespace only), socat (the
# unix-socket bridge to the apiserver), buildah and busybox-static (images built FROM scratch).
set -euo pipefail
missing=()
for pair in containerd:containerd runc:runc buildah:buildah socat:socat iptables:iptables \
            /usr/lib/cni/bridge:containernetworking-plugins /bin/busybox:busybox-static; do
  probe="${pair%%:*}" pkg="${pair#*:}"
  case "$probe" in
    /*) [ -x "$probe" ] || missing+=("$pkg") ;;
    *) command -v "$probe" >/dev/null 2>&1 || missing+=("$pkg") ;;
  esac
done
[ "${#missing[@]}" = 0 ] && exit 0
echo "installing the real node's packages (Debian): ${missing[*]}"
if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
$SUDO apt-get update -qq
# policy-rc.d: a package's service is never started here (node.sh starts its own containerd)
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null && $SUDO chmod +x /usr/sbin/policy-rc.d
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
