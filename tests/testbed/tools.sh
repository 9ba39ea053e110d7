#!/usr/bin/env bash
# Build (or reuse from cache) client tools used by tests, from the Go module proxy:
#   helm   (helm.sh/helm/v3/cmd/helm@$HELM_VERSION)
#   k9s    (github.com/derailed/k9s@$K9S_VERSION; `go install` of it fails at the proxy, so the
#           module is downloaded and built in a copy: see /work/shared/research/clients.md)
# Usage: tools.sh helm|k9s  -> prints the absolute path of the binary on stdout.
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

# A Python venv with prometheus_client from PyPI (the metering test's exposition parser).
build_pyprom() {
  local dir="$CACHE/pyprom-$PROMETHEUS_CLIENT_PY_VERSION"
  if [ ! -x "$dir/bin/python3" ] || ! "$dir/bin/python3" -c 'import prometheus_client' 2>/dev/null; then
    mkdir -p "$CACHE"
    log "installing prometheus_client $PROMETHEUS_CLIENT_PY_VERSION from PyPI into a venv"
    (
      flock 9
      if ! "$dir/bin/python3" -c 'import prometheus_client' 2>/dev/null; then
        rm -rf "$dir"
        python3 -m venv "$dir" >&2
        "$dir/bin/pip" install --quiet "prometheus_client==$PROMETHEUS_CLIENT_PY_VERSION" >&2
      fi
    ) 9>"$CACHE/.pyprom.lock"
  fi
  echo "$dir/bin/python3"
}

build_k9s() {
  local dir="$CACHE/k9s-$K9S_VERSION/bin"
  if [ ! -x "$dir/k9s" ]; then
    mkdir -p "$dir"
    log "building k9s $K9S_VERSION from the Go module proxy (a few minutes)"
    (
      flock 9
      if [ ! -x "$dir/k9s" ]; then
        local src work
        src="$(GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "github.com/derailed/k9s@$K9S_VERSION" \
          | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
        [ -d "$src" ] || { log "go mod download gave no directory for k9s"; exit 1; }
        work="$(mktemp -d)"
        cp -r "$src/." "$work/"
        chmod -R u+w "$work"
        (cd "$work" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false" \
          go build -o "$dir/k9s.tmp" . >&2)
        mv "$dir/k9s.tmp" "$dir/k9s"
        rm -rf "$work"
      fi
    ) 9>"$CACHE/.k9s.lock"
  fi
  echo "$dir/k9s"
}

case "${1:-}" in
  helm) build_helm ;;
  pyprom) build_pyprom ;;
  k9s) build_k9s ;;
  *) echo "usage: tools.sh helm|pyprom|k9s" >&2; exit 2 ;;
esac
