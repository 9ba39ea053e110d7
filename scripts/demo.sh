#!/usr/bin/env bash
# paddock's main job, for a newcomer: build paddock, bring up a local Kubernetes control plane
# (unless PADDOCK_UPSTREAM_KUBECONFIG or --upstream-kubeconfig points at a real cluster), start
# paddock with the embedded store, create tenant demo01 and print the kubectl line to use it.
# paddock keeps serving until Ctrl-C; then everything this script started is stopped.
#   scripts/demo.sh [--upstream-kubeconfig FILE] [--port 8443] [--tenant demo01]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
UPSTREAM="${PADDOCK_UPSTREAM_KUBECONFIG:-}"
PORT="${PADDOCK_DEMO_PORT:-8443}"
TENANT="demo01"
while [ $# -gt 0 ]; do
  case "$1" in
    --upstream-kubeconfig) UPSTREAM="$2"; shift 2 ;;
    --port) PORT="$2"; shift 2 ;;
    --tenant) TENANT="$2"; shift 2 ;;
    *) echo "demo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
STATE="$ROOT/.paddock"
mkdir -p "$STATE"
say() { echo "[paddock-demo] $*" >&2; }

say "building paddock"
if ! command -v protoc >/dev/null 2>&1; then
  say "installing protoc (needed by etcd-client's build)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler libprotobuf-dev >/dev/null
fi
cargo build --release -p paddock
PADDOCK="$ROOT/target/release/paddock"

PIDS=()
TESTBED=""
ADMISSION_ARGS=()
cleanup() {
  say "stopping"
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  [ -n "$TESTBED" ] && bash tests/testbed/down.sh "$TESTBED" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$UPSTREAM" ]; then
  say "no upstream kubeconfig given: starting a local control plane (first run builds it, ~6-25 min)"
  TESTBED="$STATE/testbed"
  [ -d "$TESTBED" ] && bash tests/testbed/down.sh "$TESTBED" >/dev/null 2>&1 || true
  rm -rf "$TESTBED"
  bash tests/testbed/up.sh "$TESTBED" --owner-pid $$
  UPSTREAM="$TESTBED/admin.kubeconfig"
  # The test bed's apiserver calls paddock's admission webhook with its own client certificate:
  # tenant policies (docs/security.md "Tenant policy") are enforced upstream.
  ADMISSION_ARGS=(--admission-listen 127.0.0.1:0 --admission-client-ca "$TESTBED/pki/admission-client-ca.crt"
                  --admission-client-name kube-apiserver-admission)
fi

CERTS="$STATE/certs"
if [ ! -f "$CERTS/ca.crt" ]; then
  "$PADDOCK" ca init --dir "$CERTS" --server-url "https://127.0.0.1:$PORT"
fi
rm -rf "$STATE/data"
say "starting paddock on https://127.0.0.1:$PORT (log: $STATE/paddock.log)"
"$PADDOCK" serve --listen "127.0.0.1:$PORT" --certs-dir "$CERTS" --upstream-kubeconfig "$UPSTREAM" \
  --store embedded --data-dir "$STATE/data" --public-url "https://127.0.0.1:$PORT" --log-format text \
  "${ADMISSION_ARGS[@]}" \
  >"$STATE/paddock.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 120); do
  if curl -sk --max-time 2 "https://127.0.0.1:$PORT/readyz" 2>/dev/null | grep -q ok; then break; fi
  kill -0 "${PIDS[0]}" 2>/dev/null || { tail -20 "$STATE/paddock.log" >&2; say "paddock exited"; exit 1; }
  sleep 0.5
done
curl -sk --max-time 2 "https://127.0.0.1:$PORT/readyz" | grep -q ok || { tail -20 "$STATE/paddock.log" >&2; exit 1; }

export PADDOCK_ADMIN_KUBECONFIG="$CERTS/admin.kubeconfig"
"$PADDOCK" tenant create "$TENANT" > "$STATE/$TENANT.kubeconfig"
chmod 600 "$STATE/$TENANT.kubeconfig"
echo
echo "paddock is serving tenant $TENANT. In another terminal:"
echo
echo "    kubectl --kubeconfig $STATE/$TENANT.kubeconfig get ns"
echo
echo "Admin CLI: PADDOCK_ADMIN_KUBECONFIG=$CERTS/admin.kubeconfig $PADDOCK tenant list"
echo "Press Ctrl-C to stop paddock and the local control plane."
wait "${PIDS[0]}"
