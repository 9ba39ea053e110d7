#!/usr/bin/env bash
# Build (or reuse from cache) the binaries of the local control plane:
#   kube-apiserver, kube-controller-manager, kube-scheduler  (k8s.io/kubernetes via a wrapper module)
#   etcd                                                       (go.etcd.io/etcd/server/v3 via a wrapper module)
#   kwok                                                       (sigs.k8s.io/kwok, go install)
#   kubelet, kube-proxy (only with --node)                   (the real node, node.sh)
#   metrics-server (only with --node)                         (sigs.k8s.io/metrics-server via a wrapper module)
#   tenant-dns (only with --node)                             (deploy/dns: CoreDNS + tenantview, docs/dns.md)
#   e2e-apimachinery.test (only with --e2e)                    (slim conformance binary)
#   e2e-conformance.test (only with --e2e-full)                (every sig's [Conformance] tests)
# Everything comes from the Go module proxy. The cache lives outside the repo:
#   ${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}/<component>-<version>/bin
# Only missing parts are rebuilt. Prints the bin directories as shell assignments on stdout
# when called with --print-env.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"
CACHE="${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}"
WANT_E2E=0; WANT_E2E_FULL=0; WANT_NODE=0; PRINT_ENV=0
for a in "$@"; do
  case "$a" in
    --e2e) WANT_E2E=1 ;;
    --node) WANT_NODE=1 ;;
    --e2e-full) WANT_E2E=1; WANT_E2E_FULL=1 ;;
    --print-env) PRINT_ENV=1 ;;
    *) echo "build.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
log() { echo "[testbed-build] $*" >&2; }
die() { echo "[testbed-build] ERROR: $*" >&2; exit 1; }

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
K8S_DIR="$CACHE/k8s-$K8S_VERSION"; ETCD_DIR="$CACHE/etcd-$ETCD_VERSION"; KWOK_DIR="$CACHE/kwok-$KWOK_VERSION"
E2E_DIR="$CACHE/e2e-$K8S_VERSION"

need_go() {
  command -v go >/dev/null 2>&1 || die "the Go toolchain is not on PATH; install Go >= 1.24 (needed to build the test control plane)"
  if ! go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" >/dev/null 2>"$CACHE/.proxy-check.err"; then
    cat "$CACHE/.proxy-check.err" >&2
    die "the Go module proxy ($(go env GOPROXY)) is not reachable; cannot build the control plane"
  fi
}

timed() { # timed LABEL cmd...
  local t0=$SECONDS; "${@:2}"; log "$1 took $((SECONDS - t0)) s"
}

# The wrapper module: k8s.io/kubernetes cannot be consumed as a dependency without a replace line
# for every staging module it requires at v0.0.0 (its own replaces point into its tree and are
# ignored for dependencies); each maps to the published tag v0.<minor>.<patch> of the release.
k8s_wrapper_gomod() { # k8s_wrapper_gomod MODULE_NAME   (in the current directory)
  local stg kmod m
  stg="v0.${K8S_VERSION#v1.}"
  cat > go.mod <<GOMOD
module $1

go 1.24.0

godebug default=go1.24

require k8s.io/kubernetes $K8S_VERSION
GOMOD
  kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | python3 -c 'import json,sys;print(json.load(sys.stdin)["GoMod"])')
  for m in $(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$kmod"); do
    go mod edit -replace="$m=$m@$stg"
  done
}
# Version stamps as upstream's hack/lib/version.sh sets them: /version must say v1.33.z with
# major/minor (kubectl's version dispatch and the "server version" conformance test need them).
k8s_ldflags() {
  local minor ldf="-s -w" p
  minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
  done
  echo "$ldf"
}

# build_k8s_commands DIR MODULE CMD...: the release's k8s.io/kubernetes/cmd/<CMD> binaries into
# DIR/bin, through a wrapper module in DIR/src (tools.go imports each command's app package, so
# that `go mod tidy` records what they need). Built into bin.tmp and moved into place: bin/ only
# ever holds complete binaries.
build_k8s_commands() {
  local dir=$1 module=$2 c
  shift 2
  mkdir -p "$dir/src" "$dir/bin"; cd "$dir/src"
  k8s_wrapper_gomod "$module"
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s/app"\n' "$c"; done
    printf ')\n'
  } > tools.go
  go mod tidy
  rm -rf "$dir/bin.tmp"; mkdir -p "$dir/bin.tmp"
  go build -tags=selinux,notest,grpcnotrace -ldflags "$(k8s_ldflags)" -o "$dir/bin.tmp/" "${@/#/k8s.io/kubernetes/cmd/}"
  "$dir/bin.tmp/$1" --version >&2
  mv -f "$dir/bin.tmp/"* "$dir/bin/" && rmdir "$dir/bin.tmp"
}

build_k8s() {
  [ -x "$K8S_DIR/bin/kube-apiserver" ] && [ -x "$K8S_DIR/bin/kube-controller-manager" ] && [ -x "$K8S_DIR/bin/kube-scheduler" ] && return 0
  log "building kube-apiserver, kube-controller-manager, kube-scheduler $K8S_VERSION into $K8S_DIR (cold: ~15-25 min on 2 cores)"
  build_k8s_commands "$K8S_DIR" local.test/paddock-testbed kube-apiserver kube-controller-manager kube-scheduler
}

# The real node (issue 35): kubelet and kube-proxy of the same release as the control plane, in a
# wrapper module of their own (the servers' go.mod stays as is; the module cache is shared).
NODE_DIR="$CACHE/node-$K8S_VERSION"
build_node() {
  [ -x "$NODE_DIR/bin/kubelet" ] && [ -x "$NODE_DIR/bin/kube-proxy" ] && return 0
  log "building kubelet, kube-proxy $K8S_VERSION into $NODE_DIR (cold: ~5-10 min after the control plane)"
  build_k8s_commands "$NODE_DIR" local.test/paddock-node kubelet kube-proxy
}

# metrics-server in a wrapper module whose k8s.io staging modules are the control plane's own
# release (not the v0.33.2 its go.mod names): the packages are then the ones the control plane's
# build already compiled, found in the Go build cache (a cold machine builds them once).
METRICS_DIR="$CACHE/metrics-server-$METRICS_SERVER_VERSION-k8s-$K8S_VERSION"
build_metrics_server() {
  [ -x "$METRICS_DIR/bin/metrics-server" ] && return 0
  log "building metrics-server $METRICS_SERVER_VERSION (k8s.io staging $K8S_VERSION) into $METRICS_DIR"
  mkdir -p "$METRICS_DIR/src" "$METRICS_DIR/bin"; cd "$METRICS_DIR/src"
  k8s_wrapper_gomod local.test/paddock-metrics-server
  go mod edit -droprequire=k8s.io/kubernetes -require="sigs.k8s.io/metrics-server@$METRICS_SERVER_VERSION"
  cat > main.go <<'GOSRC'
// The metrics-server command (its cmd/metrics-server/metrics-server.go), built here so that the
// k8s.io modules are the control plane's release.
package main

import (
	"os"
	"runtime"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"

	"sigs.k8s.io/metrics-server/cmd/metrics-server/app"
)

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()
	if len(os.Getenv("GOMAXPROCS")) == 0 {
		runtime.GOMAXPROCS(runtime.NumCPU())
	}
	cmd := app.NewMetricsServerCommand(genericapiserver.SetupSignalHandler())
	if err := cmd.Execute(); err != nil {
		panic(err)
	}
}
GOSRC
  go mod tidy
  go build -ldflags "-s -w" -o "$METRICS_DIR/bin/metrics-server.tmp" .
  "$METRICS_DIR/bin/metrics-server.tmp" --help >/dev/null
  mv -f "$METRICS_DIR/bin/metrics-server.tmp" "$METRICS_DIR/bin/metrics-server"
}

# The tenant DNS (issue 38, docs/dns.md): deploy/dns, a module of this repository (CoreDNS with
# the tenantview plugin, k8s.io modules at the control plane's release), cached under a key of
# its sources (go.mod, go.sum, every non-test .go file), so an edit rebuilds and nothing else does.
ROOT="$(cd "$HERE/../.." && pwd)"
dns_key() {
  (cd "$ROOT/deploy/dns" && find . -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) \
     | LC_ALL=C sort | while read -r f; do echo "$f"; cat "$f"; done) | sha256sum | cut -c1-16
}
DNS_DIR="$CACHE/tenant-dns-$(dns_key)"
build_tenant_dns() {
  [ -x "$DNS_DIR/bin/tenant-dns" ] && return 0
  log "building the tenant DNS (deploy/dns) into $DNS_DIR"
  mkdir -p "$DNS_DIR/bin"; cd "$ROOT/deploy/dns"
  go build -mod=readonly -ldflags "-s -w" -o "$DNS_DIR/bin/tenant-dns.tmp" .
  "$DNS_DIR/bin/tenant-dns.tmp" -version >&2
  "$DNS_DIR/bin/tenant-dns.tmp" -plugins | grep -qx 'tenantview' || die "the tenant DNS binary lacks the tenantview plugin"
  mv -f "$DNS_DIR/bin/tenant-dns.tmp" "$DNS_DIR/bin/tenant-dns"
}

build_etcd() {
  [ -x "$ETCD_DIR/bin/etcd" ] && return 0
  log "building etcd $ETCD_VERSION into $ETCD_DIR"
  mkdir -p "$ETCD_DIR/src" "$ETCD_DIR/bin"; cd "$ETCD_DIR/src"
  cat > go.mod <<GOMOD
module local.test/paddock-etcd

go 1.23.0

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
GOMOD
  cat > main.go <<'GOSRC'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GOSRC
  go mod tidy
  go build -ldflags "-s -w" -o "$ETCD_DIR/bin/etcd.tmp" .
  "$ETCD_DIR/bin/etcd.tmp" --version >&2
  mv -f "$ETCD_DIR/bin/etcd.tmp" "$ETCD_DIR/bin/etcd"
}

build_kwok() {
  [ -x "$KWOK_DIR/bin/kwok" ] && return 0
  log "building kwok $KWOK_VERSION into $KWOK_DIR"
  mkdir -p "$KWOK_DIR/bin"
  rm -rf "$KWOK_DIR/bin.tmp"
  GOBIN="$KWOK_DIR/bin.tmp" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  "$KWOK_DIR/bin.tmp/kwok" --version >&2
  mv -f "$KWOK_DIR/bin.tmp/kwok" "$KWOK_DIR/bin/kwok" && rmdir "$KWOK_DIR/bin.tmp"
}

build_e2e() {
  [ -x "$E2E_DIR/bin/e2e-apimachinery.test" ] && return 0
  log "building the slim api-machinery conformance binary $K8S_VERSION into $E2E_DIR (cold: ~10-20 min on 2 cores)"
  # A module of its own (same replaces as the server build), so the servers' go.mod stays as is.
  mkdir -p "$E2E_DIR/src/e2e" "$E2E_DIR/bin"; cd "$E2E_DIR/src"
  k8s_wrapper_gomod local.test/paddock-e2e
  # see versions.env: the matching sample-apiserver tag is not served by the proxy
  if ! go mod download "k8s.io/sample-apiserver@v0.${K8S_VERSION#v1.}" >/dev/null 2>&1; then
    log "k8s.io/sample-apiserver@v0.${K8S_VERSION#v1.} is not available from the proxy; pinning $E2E_SAMPLE_APISERVER_VERSION"
    go mod edit -replace="k8s.io/sample-apiserver=k8s.io/sample-apiserver@$E2E_SAMPLE_APISERVER_VERSION"
  fi
  cp "$HERE/e2e_main_test.go" e2e/e2e_test.go
  printf '// Package e2e holds only the conformance suite entry point (e2e_test.go).\npackage e2e\n' > e2e/doc.go
  go mod tidy
  go test -c -vet=off -tags=selinux,notest -ldflags "$(k8s_ldflags)" -o "$E2E_DIR/bin/e2e-apimachinery.test.tmp" ./e2e
  "$E2E_DIR/bin/e2e-apimachinery.test.tmp" --version >&2
  mv -f "$E2E_DIR/bin/e2e-apimachinery.test.tmp" "$E2E_DIR/bin/e2e-apimachinery.test"
}

# The wide binary (make conformance-full): the same entry point plus every test package that holds
# [Conformance] tests (e2e_full_imports.go); a package of its own in the same wrapper module.
# The wide binary is rebuilt when its sources here change (a checksum beside it).
e2e_full_sum() { cat "$HERE/e2e_main_test.go" "$HERE/e2e_full_imports.go" | sha256sum | cut -d' ' -f1; }
e2e_full_current() {
  [ -x "$E2E_DIR/bin/e2e-conformance.test" ] && [ "$(cat "$E2E_DIR/bin/e2e-conformance.sum" 2>/dev/null)" = "$(e2e_full_sum)" ]
}
build_e2e_full() {
  e2e_full_current && return 0
  build_e2e
  log "building the wide conformance binary $K8S_VERSION into $E2E_DIR (cold: ~20-40 min on 2 cores)"
  cd "$E2E_DIR/src"; mkdir -p e2efull
  cp "$HERE/e2e_main_test.go" e2efull/e2e_test.go
  cp "$HERE/e2e_full_imports.go" e2efull/imports_test.go
  printf '// Package e2e holds only the conformance suite entry point (e2e_test.go).\npackage e2e\n' > e2efull/doc.go
  go mod tidy
  go test -c -vet=off -tags=selinux,notest -ldflags "$(k8s_ldflags)" -o "$E2E_DIR/bin/e2e-conformance.test.tmp" ./e2efull
  "$E2E_DIR/bin/e2e-conformance.test.tmp" --version >&2
  # The ginkgo CLI of the same module version: it runs the precompiled binary in parallel
  # processes (--procs); the binary alone has no parallel mode.
  go build -o "$E2E_DIR/bin/ginkgo.tmp" github.com/onsi/ginkgo/v2/ginkgo
  mv -f "$E2E_DIR/bin/ginkgo.tmp" "$E2E_DIR/bin/ginkgo"
  mv -f "$E2E_DIR/bin/e2e-conformance.test.tmp" "$E2E_DIR/bin/e2e-conformance.test"
  e2e_full_sum > "$E2E_DIR/bin/e2e-conformance.sum"
}

print_env() {
  echo "PADDOCK_K8S_BIN=$K8S_DIR/bin"
  echo "PADDOCK_ETCD_BIN=$ETCD_DIR/bin"
  echo "PADDOCK_KWOK_BIN=$KWOK_DIR/bin"
  if [ "$WANT_E2E" = 1 ]; then echo "PADDOCK_E2E_BIN=$E2E_DIR/bin"; fi
  if [ "$WANT_NODE" = 1 ]; then
    echo "PADDOCK_NODE_BIN=$NODE_DIR/bin"; echo "PADDOCK_METRICS_SERVER_BIN=$METRICS_DIR/bin"
    echo "PADDOCK_TENANT_DNS_BIN=$DNS_DIR/bin"
  fi
}
all_present() {
  [ -x "$K8S_DIR/bin/kube-apiserver" ] && [ -x "$K8S_DIR/bin/kube-controller-manager" ] \
    && [ -x "$K8S_DIR/bin/kube-scheduler" ] && [ -x "$ETCD_DIR/bin/etcd" ] && [ -x "$KWOK_DIR/bin/kwok" ] \
    && { [ "$WANT_E2E" = 0 ] || [ -x "$E2E_DIR/bin/e2e-apimachinery.test" ]; } \
    && { [ "$WANT_NODE" = 0 ] || { [ -x "$NODE_DIR/bin/kube-proxy" ] && [ -x "$METRICS_DIR/bin/metrics-server" ] && [ -x "$DNS_DIR/bin/tenant-dns" ]; }; } \
    && { [ "$WANT_E2E_FULL" = 0 ] || e2e_full_current; }
}
# Fast path: everything asked for is cached (binaries are moved into place only when complete),
# so there is no need to wait for the lock of a build of something else.
if all_present; then
  [ "$PRINT_ENV" = 1 ] && print_env
  log "all binaries cached in $CACHE"
  exit 0
fi

mkdir -p "$CACHE"
if [ ! -x "$K8S_DIR/bin/kube-apiserver" ] || [ ! -x "$ETCD_DIR/bin/etcd" ] || [ ! -x "$KWOK_DIR/bin/kwok" ] \
   || { [ "$WANT_E2E" = 1 ] && [ ! -x "$E2E_DIR/bin/e2e-apimachinery.test" ]; } \
   || { [ "$WANT_NODE" = 1 ] && { [ ! -x "$NODE_DIR/bin/kube-proxy" ] || [ ! -x "$METRICS_DIR/bin/metrics-server" ] || [ ! -x "$DNS_DIR/bin/tenant-dns" ]; }; } \
   || { [ "$WANT_E2E_FULL" = 1 ] && ! e2e_full_current; }; then
  need_go
fi
# Serialise concurrent builders (two test runs on one machine) on one lock.
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
  log "another build holds $CACHE/.build.lock; waiting for it (up to 90 min)"
  flock -w 5400 9 || die "timed out waiting for the build lock $CACHE/.build.lock"
fi
timed etcd build_etcd
timed kwok build_kwok
timed kubernetes build_k8s
[ "$WANT_NODE" = 1 ] && timed node build_node
[ "$WANT_NODE" = 1 ] && timed metrics-server build_metrics_server
[ "$WANT_NODE" = 1 ] && timed tenant-dns build_tenant_dns
[ "$WANT_E2E" = 1 ] && timed e2e build_e2e
[ "$WANT_E2E_FULL" = 1 ] && timed e2e-full build_e2e_full
if [ "$PRINT_ENV" = 1 ]; then print_env; fi
log "cache: $(du -sh "$CACHE" 2>/dev/null | cut -f1) in $CACHE"
