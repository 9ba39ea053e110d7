#!/usr/bin/env bash
# By hand, what issue 38's acceptance check 2 asks (docs/operators.md): on a test bed started with
# `tests/testbed/up.sh DIR --real-node`, paddock with the in-cluster path (as
# tests/e2e/tests/inside_view.rs starts it), then tenants installing cert-manager and
# external-dns with their own charts (tests/testbed/operators.sh) through paddock.
#
#   tests/testbed/operators-try.sh DIR images               import operators.sh's images into the node's containerd
#   tests/testbed/operators-try.sh DIR paddock              start paddock (in-cluster path) + the bridge into the node
#   tests/testbed/operators-try.sh DIR tenant TID           create tenant TID (pool: the real node)
#   tests/testbed/operators-try.sh DIR cert-manager TID     helm install cert-manager as TID, time to Ready
#   tests/testbed/operators-try.sh DIR certificate TID      self-signed Issuer + Certificate, wait for the Secret
#   tests/testbed/operators-try.sh DIR external-dns TID     helm install external-dns (inmemory) as TID + a Service
#
# Everything is recorded in DIR/pids (down.sh stops it); paddock logs to DIR/logs/paddock.log;
# tenant kubeconfigs land in DIR/paddock/tenants/TID.kubeconfig.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DIR="$(cd "$1" && pwd)"; shift
STEP="$1"; shift
# shellcheck disable=SC1091
. "$DIR/env"
PADDOCK="${PADDOCK_BIN:-$ROOT/target/debug/paddock}"
TB_CACHE="${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}"
STORE_ENDPOINTS="$PADDOCK_ETCD_ENDPOINTS"
# paddock reads PADDOCK_* variables as its settings; the env file has some (the e2e harness
# removes them too).
for v in $(compgen -e | grep '^PADDOCK_' || true); do unset "$v"; done
log() { echo "[operators-try $(date -u +%T)] $*" >&2; }
die() { echo "[operators-try] ERROR: $*" >&2; exit 1; }
HELM="$(ls "$TB_CACHE"/helm-*/bin/helm | tail -1)"
PD="$DIR/paddock"; mkdir -p "$PD/tenants"
POD_PORT=8443
API_HOST=kubernetes.default.svc.cluster.local

record() { # record NAME PID
  echo "$1 $2 $(awk '{print $22}' "/proc/$2/stat")" >> "$DIR/pids"
}
kt() { "$KUBECTL" --kubeconfig "$PD/tenants/$1.kubeconfig" "${@:2}"; }
ka() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }
wait_for() { # wait_for SECONDS WHAT cmd...
  local end=$((SECONDS + $1)) what="$2"; shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || die "timed out waiting for $what"
    sleep 0.5
  done
}

case "$STEP" in
images)
  OPS="$(PADDOCK_TESTBED_CACHE="$TB_CACHE" "$HERE/operators.sh" --print-dir)"
  for a in "$OPS"/images/*.tar; do
    ctr --address "$REAL_NODE_CONTAINERD" -n k8s.io images import --snapshotter native "$a" >/dev/null
    log "imported $(basename "$a")"
  done
  ;;
paddock)
  PORT="$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')"
  echo "$PORT" > "$PD/port"
  "$PADDOCK" ca init --dir "$PD/certs" --server-url "https://127.0.0.1:$PORT" >/dev/null
  # the tenant-webhook relay's way to a tenant's webhook Service: the apiserver's egress guard
  EGRESS=()
  if "$PADDOCK" serve --help | grep -q -- --cluster-egress-uds; then EGRESS=(--cluster-egress-uds "$DIR/egress-proxy.sock"); fi
  RUST_LOG="${RUST_LOG:-info}" setsid "$PADDOCK" serve --listen "127.0.0.1:$PORT" --certs-dir "$PD/certs" \
    --public-url "https://127.0.0.1:$PORT" --log-format json \
    --store etcd --etcd-endpoints "$STORE_ENDPOINTS" --etcd-prefix /paddock-operators \
    --upstream-kubeconfig "$ADMIN_KUBECONFIG" --shutdown-delay 0s \
    --leader-name paddock-leader-operators --leader-identity operators-try \
    --admission-listen 127.0.0.1:0 --admission-client-ca "$ADMISSION_CLIENT_CA" \
    --admission-client-name "$ADMISSION_CLIENT_NAME" \
    --in-cluster-host "$API_HOST" --in-cluster-endpoint "$REAL_NODE_IP:$POD_PORT" \
    --tenant-dns "$REAL_NODE_DNS" "${EGRESS[@]}" \
    </dev/null >>"$DIR/logs/paddock.log" 2>&1 &
  record paddock $!
  wait_for 60 "paddock's /readyz" sh -c "curl -sS --max-time 3 --cacert '$PD/certs/ca.crt' --cert '$PD/certs/admin.crt' --key '$PD/certs/admin.key' https://127.0.0.1:$PORT/readyz | grep -q '^ok'"
  log "paddock ready on 127.0.0.1:$PORT"
  # RealNode::bridge_in: the node's address, port 8443 -> paddock on the host's loopback
  SOCK="$DIR/node/bridge-in-paddock.sock"
  setsid socat "UNIX-LISTEN:$SOCK,fork,mode=600" "TCP:127.0.0.1:$PORT" </dev/null >/dev/null 2>"$DIR/logs/bridge-in-paddock-host.log" &
  record bridge-in-paddock-host $!
  wait_for 10 "$SOCK" test -S "$SOCK"
  setsid nsenter "--net=/run/netns/$REAL_NODE_NETNS" socat "TCP-LISTEN:$POD_PORT,bind=$REAL_NODE_IP,fork,reuseaddr" "UNIX-CONNECT:$SOCK" </dev/null >/dev/null 2>"$DIR/logs/bridge-in-paddock-node.log" &
  record bridge-in-paddock-node $!
  wait_for 10 "the bridge on $REAL_NODE_IP:$POD_PORT" sh -c "ip netns exec '$REAL_NODE_NETNS' ss -Hltn | grep -q '$REAL_NODE_IP:$POD_PORT '"
  wait_for 60 "paddock's webhook upstream" ka get mutatingwebhookconfiguration paddock-tenant-policy
  log "bridge and webhook up"
  ;;
tenant)
  TID="$1"
  "$PADDOCK" tenant create "$TID" --kubeconfig "$PD/certs/admin.kubeconfig" > "$PD/tenants/$TID.kubeconfig"
  pool='"scheduling":{"nodeSelector":{"paddock.test/pool":"real"},"tolerations":[{"key":"paddock.test/real-node","operator":"Exists","effect":"NoSchedule"}]}'
  "$PADDOCK" tenant policy "$TID" --patch "{$pool}" --kubeconfig "$PD/certs/admin.kubeconfig" >/dev/null
  log "tenant $TID: $PD/tenants/$TID.kubeconfig"
  ;;
cert-manager)
  TID="$1"; OPS="$(PADDOCK_TESTBED_CACHE="$TB_CACHE" "$HERE/operators.sh" --print-dir)"
  t0=$(date +%s.%N)
  "$HELM" --kubeconfig "$PD/tenants/$TID.kubeconfig" install cert-manager "$OPS/charts/cert-manager" \
    --namespace cert-manager --create-namespace --set installCRDs=true \
    -f "$OPS/values/cert-manager.yaml" --wait --wait-for-jobs --timeout "${TIMEOUT:-5m}" ${HELM_ARGS:-}
  log "cert-manager as $TID: helm install --wait took $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
  ;;
certificate)
  TID="$1"
  kt "$TID" create namespace app --dry-run=client -o yaml | kt "$TID" apply -f - >/dev/null
  t0=$(date +%s.%N)
  kt "$TID" apply -f - <<'YAML'
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {name: selfsigned, namespace: app}
spec: {selfSigned: {}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: app}
spec:
  secretName: web-tls
  commonName: web.app.svc.cluster.local
  dnsNames: [web.app.svc.cluster.local, web.app.svc]
  issuerRef: {name: selfsigned, kind: Issuer}
YAML
  wait_for "${WAIT:-120}" "Secret app/web-tls of $TID" kt "$TID" -n app get secret web-tls
  kt "$TID" -n app wait certificate/web --for=condition=Ready --timeout=60s
  log "certificate of $TID Ready, Secret app/web-tls there after $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
  kt "$TID" -n app get secret web-tls -o jsonpath='{.data.tls\.crt}' | base64 -d | openssl x509 -noout -subject -ext subjectAltName
  ;;
external-dns)
  TID="$1"; OPS="$(PADDOCK_TESTBED_CACHE="$TB_CACHE" "$HERE/operators.sh" --print-dir)"
  t0=$(date +%s.%N)
  "$HELM" --kubeconfig "$PD/tenants/$TID.kubeconfig" upgrade --install external-dns "$OPS/charts/external-dns" \
    --namespace external-dns --create-namespace -f "$OPS/values/external-dns.yaml" \
    --set provider.name=inmemory --set policy=sync --set txtOwnerId="$TID" \
    --set logLevel=debug --set interval=10s \
    --set 'extraArgs={--inmemory-zone=example.test,--publish-internal-services}' \
    --wait --timeout "${TIMEOUT:-5m}" ${HELM_ARGS:-}
  log "external-dns as $TID: helm install --wait took $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
  kt "$TID" create namespace web --dry-run=client -o yaml | kt "$TID" apply -f - >/dev/null
  kt "$TID" apply -f - <<'YAML'
apiVersion: v1
kind: Service
metadata:
  name: shop
  namespace: web
  annotations: {external-dns.alpha.kubernetes.io/hostname: shop.example.test}
spec:
  selector: {app: shop}
  ports: [{port: 80}]
YAML
  ;;
*) die "unknown step $STEP" ;;
esac
