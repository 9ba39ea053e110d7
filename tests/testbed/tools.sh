#!/usr/bin/env bash
# Build (or reuse from cache) client tools used by tests, from the Go module proxy:
#   helm   (helm.sh/helm/v3/cmd/helm@$HELM_VERSION)
# Usage: tools.sh helm      -> prints the absolute path of the helm binary on stdout.
# The cache lives outside the repo: ${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}/<tool>-<version>/bin
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"
CACHE="${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}"
log() { echo "[tools] $*" >&2; }

build_helm() {
  local dir="$CACHE/helm-$HELM_VERSION/bin"
  if [ ! -x "$dir/helm" ]; then
    mkdir -p "$dir"
    log "building helm $HELM_VERSION from the Go module proxy"
    # A lock so that parallel test binaries build it once.
    (
      flock 9
      [ -x "$dir/helm" ] || GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false" \
        GOBIN="$dir" go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
    ) 9>"$CACHE/.helm.lock"
  fi
  echo "$dir/helm"
}

case "${1:-}" in
  helm) build_helm ;;
  *) echo "usage: tools.sh helm" >&2; exit 2 ;;
esac
