#!/usr/bin/env bash
# Build (or reuse from cache) client tools used by tests, from the Go module proxy:
#   helm   (helm.sh/helm/v3/cmd/helm@$HELM_VERSION)
#   k9s    (github.com/derailed/k9s@$K9S_VERSION; `go install` of it fails at the proxy, so the
#           module is downloaded and built in a copy: see /work/shared/research/clients.md)
#   h2spec (github.com/summerwind/h2spec/cmd/h2spec@$H2SPEC_VERSION, HTTP/2 conformance; the
#           module has no go.mod, so it is built from a small wrapper module that pins its
#           dependencies, H2SPEC_*_VERSION in versions.env)
#   kubelogin (github.com/int128/kubelogin@$KUBELOGIN_VERSION as kubectl-oidc_login, the
#           `kubectl oidc-login` plugin: downloaded and built in a copy, like k9s)
# Usage: tools.sh helm|pyprom|k9s|h2spec|kubelogin  -> prints the absolute path of the binary on stdout.
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

# h2spec v2.2.1 predates modules (a Gopkg.lock, no go.mod: `+incompatible` at the proxy), so a
# plain `go install pkg@version` resolves its imports at whatever is newest that day. Instead a
# throwaway wrapper module requires h2spec and its three direct dependencies at the versions of
# versions.env (their own go.mod files pin the rest) and builds the command from there.
build_h2spec() {
  local dir="$CACHE/h2spec-$H2SPEC_VERSION/bin"
  local stamp="$H2SPEC_VERSION x/net@$H2SPEC_XNET_VERSION cobra@$H2SPEC_COBRA_VERSION color@$H2SPEC_COLOR_VERSION"
  if [ ! -x "$dir/h2spec" ] || [ "$(cat "$dir/.built-from" 2>/dev/null)" != "$stamp" ]; then
    mkdir -p "$dir"
    log "building h2spec $H2SPEC_VERSION from the Go module proxy"
    (
      flock 9
      if [ ! -x "$dir/h2spec" ] || [ "$(cat "$dir/.built-from" 2>/dev/null)" != "$stamp" ]; then
        local work
        work="$(mktemp -d)"
        trap 'rm -rf "$work"' EXIT
        (
          cd "$work"
          export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false -mod=mod"
          go mod init local.test/paddock-h2spec >/dev/null 2>&1
          go get "github.com/summerwind/h2spec@$H2SPEC_VERSION" \
            "golang.org/x/net@$H2SPEC_XNET_VERSION" \
            "github.com/spf13/cobra@$H2SPEC_COBRA_VERSION" \
            "github.com/fatih/color@$H2SPEC_COLOR_VERSION" >&2
          go build -o "$dir/h2spec.tmp" github.com/summerwind/h2spec/cmd/h2spec >&2
        )
        mv "$dir/h2spec.tmp" "$dir/h2spec"
        echo "$stamp" >"$dir/.built-from"
      fi
    ) 9>"$CACHE/.h2spec.lock"
  fi
  echo "$dir/h2spec"
}

build_kubelogin() {
  local dir="$CACHE/kubelogin-$KUBELOGIN_VERSION/bin"
  if [ ! -x "$dir/kubectl-oidc_login" ]; then
    mkdir -p "$dir"
    log "building kubelogin $KUBELOGIN_VERSION from the Go module proxy"
    (
      flock 9
      if [ ! -x "$dir/kubectl-oidc_login" ]; then
        local src work info
        info="$(GOTOOLCHAIN=local GONOSUMDB=github.com/int128/kubelogin GOFLAGS=-mod=mod \
          go mod download -json "github.com/int128/kubelogin@$KUBELOGIN_VERSION")"
        src="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$info")"
        [ -d "$src" ] || { log "go mod download gave no directory for kubelogin"; exit 1; }
        grep -qF "\"Sum\": \"$KUBELOGIN_SUM\"" <<<"$info" \
          || { log "kubelogin $KUBELOGIN_VERSION does not have the pinned hash $KUBELOGIN_SUM"; exit 1; }
        work="$(mktemp -d)"
        cp -r "$src/." "$work/"
        chmod -R u+w "$work"
        (cd "$work" && GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false" \
          go build -o "$dir/kubectl-oidc_login.tmp" . >&2)
        mv "$dir/kubectl-oidc_login.tmp" "$dir/kubectl-oidc_login"
        rm -rf "$work"
      fi
    ) 9>"$CACHE/.kubelogin.lock"
  fi
  echo "$dir/kubectl-oidc_login"
}

case "${1:-}" in
  helm) build_helm ;;
  pyprom) build_pyprom ;;
  k9s) build_k9s ;;
  h2spec) build_h2spec ;;
  kubelogin) build_kubelogin ;;
  *) echo "usage: tools.sh helm|pyprom|k9s|h2spec|kubelogin" >&2; exit 2 ;;
esac
