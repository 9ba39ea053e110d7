#!/usr/bin/env bash
# Start a local Kubernetes control plane on loopback, everything under one directory:
#   etcd (upstream store), kube-apiserver, kube-controller-manager, kube-scheduler,
#   kwok with two untainted simulated nodes, and a second etcd for paddock's own store.
# kwok also serves the kubelet API (TLS, on loopback) so that logs, exec, attach and port-forward
# work against its pods; what they do is simulated locally (see "streams" below). The apiserver
# reaches it only through the egress guard (egress-proxy.py), which tunnels loopback only.
#
#   tests/testbed/up.sh <dir> [--owner-pid PID] [--real-node]
#
# <dir> must not exist or be empty. Writes <dir>/env (shell assignments) and
# <dir>/admin.kubeconfig; logs of each component go to <dir>/logs/. Every server listens
# on 127.0.0.1 only, on free ports chosen at start. Every process is recorded by PID in
# <dir>/pids; tests/testbed/down.sh <dir> stops them and removes <dir>.
# With --owner-pid, a small reaper runs down.sh as soon as PID exits (test run killed).
# With --real-node, node.sh then adds a real node (kubelet + containerd) beside the kwok nodes.
# Binaries: $PADDOCK_K8S_BIN, $PADDOCK_ETCD_BIN, $PADDOCK_KWOK_BIN, else build.sh --print-env.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
T0=$(date +%s%N)

DIR=""; OWNER=""; REAL_NODE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --owner-pid) OWNER="${2:?--owner-pid needs a PID}"; shift 2 ;;
    --owner-pid=*) OWNER="${1#*=}"; shift ;;
    --real-node) REAL_NODE=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "up.sh: unknown flag $1" >&2; exit 2 ;;
    *) [ -z "$DIR" ] || { echo "up.sh: more than one directory given" >&2; exit 2; }; DIR="$1"; shift ;;
  esac
done
[ -n "$DIR" ] || { echo "usage: up.sh <dir> [--owner-pid PID]" >&2; exit 2; }
if [ -n "$OWNER" ] && ! kill -0 "$OWNER" 2>/dev/null; then
  echo "up.sh: owner pid $OWNER is not running" >&2; exit 2
fi

# No component may reach anything but loopback: drop any proxy settings of the environment, so
# that nothing is sent to an egress proxy either (Go honours HTTPS_PROXY for non-loopback hosts).
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

log() { echo "[testbed-up +$(( ($(date +%s%N) - T0) / 1000000 ))ms] $*" >&2; }
die() { echo "[testbed-up] ERROR: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# binaries
if [ -z "${PADDOCK_K8S_BIN:-}" ] || [ -z "${PADDOCK_ETCD_BIN:-}" ] || [ -z "${PADDOCK_KWOK_BIN:-}" ]; then
  eval "$("$HERE/build.sh" --print-env)"
fi
for b in "$PADDOCK_K8S_BIN/kube-apiserver" "$PADDOCK_K8S_BIN/kube-controller-manager" \
         "$PADDOCK_K8S_BIN/kube-scheduler" "$PADDOCK_ETCD_BIN/etcd" "$PADDOCK_KWOK_BIN/kwok"; do
  [ -x "$b" ] || die "missing binary $b (run tests/testbed/build.sh)"
done
KUBECTL="${KUBECTL:-}"
if [ -z "$KUBECTL" ]; then
  k="$(command -v kubectl || true)"
  if [ -n "$k" ] && [ -x "$(dirname "$(readlink -f "$k")")/kubectl.1.33" ]; then
    KUBECTL="$(dirname "$(readlink -f "$k")")/kubectl.1.33"
  else
    KUBECTL="$k"
  fi
fi
[ -n "$KUBECTL" ] && [ -x "$KUBECTL" ] || die "kubectl not found (set KUBECTL=...)"

# ---------------------------------------------------------------------------------------------
# directory, pid bookkeeping, reaper
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
[ -z "$(ls -A "$DIR")" ] || die "$DIR is not empty"
mkdir -p "$DIR/logs" "$DIR/pki"
touch "$DIR/.paddock-testbed"          # down.sh removes only directories carrying this marker
: > "$DIR/pids"

starttime() { # field 22 of /proc/PID/stat (after the parenthesised comm, which may hold spaces)
  local s; s="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  s="${s##*) }"; echo "$s" | awk '{print $20}'
}
record() { # record NAME PID
  echo "$1 $2 $(starttime "$2" || echo 0)" >> "$DIR/pids"
}
record up.sh $$

OK=0
cleanup() {
  local rc=$?
  if [ "$OK" != 1 ]; then
    echo "[testbed-up] startup failed (rc=$rc); tearing down $DIR" >&2
    for f in "$DIR"/logs/*.log; do
      [ -f "$f" ] && [ "$(basename "$f")" != pki.log ] || continue
      echo "----- tail of $f" >&2; tail -n 15 "$f" >&2
    done
    [ "${PADDOCK_TESTBED_KEEP_ON_FAILURE:-0}" = 1 ] || "$HERE/down.sh" "$DIR" >&2 || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

if [ -n "$OWNER" ]; then
  OWNER_START="$(starttime "$OWNER")"
  # The reaper gets its own session so that a Ctrl-C or kill of the test run's group does not
  # take it down with the owner; it tears everything down once the owner is gone.
  setsid bash "$HERE/reaper.sh" "$OWNER" "$OWNER_START" "$DIR" </dev/null >>"$DIR/logs/reaper.log" 2>&1 &
  record reaper $!
fi

alive_or_die() { # alive_or_die NAME PID
  kill -0 "$2" 2>/dev/null || { tail -n 40 "$DIR/logs/$1.log" >&2 || true; die "$1 (pid $2) exited during startup; log: $DIR/logs/$1.log"; }
}
start() { # start NAME BINARY ARGS... ; sets PID_<NAME>
  local name=$1; shift
  [ -f "$DIR/.paddock-testbed" ] || die "$DIR was torn down during startup"
  # setsid: every component leads its own process group, recorded by PID; down.sh signals the group.
  setsid "$@" </dev/null >"$DIR/logs/$name.log" 2>&1 &
  local pid=$!
  record "$name" "$pid"
  printf -v "PID_${name//-/_}" '%s' "$pid"
}
wait_for() { # wait_for DESCRIPTION TIMEOUT_S PROCNAME PID cmd...
  local what=$1 timeout=$2 name=$3 pid=$4; shift 4
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    alive_or_die "$name" "$pid"
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${timeout}s waiting for $what; log: $DIR/logs/$name.log"
    sleep 0.2
  done
}

# ---------------------------------------------------------------------------------------------
# free ports on 127.0.0.1 (all bound at once, then released)
read -r P_ETCD P_ETCD_PEER P_PETCD P_PETCD_PEER P_API P_KCM P_SCHED P_KWOK P_WEB < <(python3 - <<'PY'
import socket
socks = []
for _ in range(9):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()
PY
)
[ -n "$P_WEB" ] || die "could not pick free ports"

# ---------------------------------------------------------------------------------------------
# PKI (openssl): cluster CA, front-proxy CA, serving cert, client certs, service-account keys
P="$DIR/pki"
(
  cd "$P"
  exec 2>"$DIR/logs/pki.log"
  ca() { openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.crt" -days 3650 -subj "/CN=$2" \
           -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"; }
  leaf() { # leaf NAME CA CN ORG EKU SANS
    local n=$1 ca=$2 cn=$3 o=$4 eku=$5 sans=$6 subj="/CN=$3"
    [ -n "$o" ] && subj="/O=$o/CN=$cn"
    openssl req -newkey rsa:2048 -nodes -keyout "$n.key" -out "$n.csr" -subj "$subj"
    { echo "basicConstraints=critical,CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=$eku"; [ -n "$sans" ] && echo "subjectAltName=$sans"; } > "$n.ext"
    openssl x509 -req -in "$n.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days 3650 -sha256 \
      -extfile "$n.ext" -out "$n.crt"
    rm -f "$n.csr" "$n.ext"
  }
  ca ca testbed-ca
  ca front-proxy-ca testbed-front-proxy-ca
  leaf apiserver ca kube-apiserver "" serverAuth \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1"
  leaf admin ca admin system:masters clientAuth ""                       # cluster-admin
  leaf kube-controller-manager ca system:kube-controller-manager "" clientAuth ""
  # the apiserver's identity towards kubelets (the real node checks it; kwok does not ask)
  leaf apiserver-kubelet-client ca kube-apiserver-kubelet-client system:masters clientAuth ""
  leaf kube-scheduler ca system:kube-scheduler "" clientAuth ""
  leaf front-proxy-client front-proxy-ca front-proxy-client "" clientAuth ""
  # kwok's kubelet endpoint; the apiserver checks it against ca.crt (--kubelet-certificate-authority)
  leaf kwok-kubelet ca kwok-kubelet "" serverAuth "DNS:localhost,DNS:kwok-node-0,DNS:kwok-node-1,IP:127.0.0.1"
  openssl genrsa -out sa.key 2048 && openssl rsa -in sa.key -pubout -out sa.pub
  # The client certificate the apiserver presents to admission webhooks (paddock's only
  # accepts this one): its own CA, so no other client certificate of the cluster passes.
  ca admission-client-ca testbed-admission-client-ca
  leaf admission-client admission-client-ca kube-apiserver-admission "" clientAuth ""
) || die "PKI generation failed; see $DIR/logs/pki.log"
log "PKI generated"

APISERVER_URL="https://127.0.0.1:$P_API"
kubeconfig() { # kubeconfig FILE CERTNAME USER
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster:
    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 "$P/ca.crt")
users:
- name: $3
  user:
    client-certificate-data: $(base64 -w0 "$P/$2.crt")
    client-key-data: $(base64 -w0 "$P/$2.key")
contexts:
- name: testbed
  context: {cluster: testbed, user: $3}
current-context: testbed
EOF
  chmod 600 "$1"
}
kubeconfig "$DIR/admin.kubeconfig" admin admin
kubeconfig "$DIR/kube-controller-manager.kubeconfig" kube-controller-manager system:kube-controller-manager
kubeconfig "$DIR/kube-scheduler.kubeconfig" kube-scheduler system:kube-scheduler
K=("$KUBECTL" --kubeconfig="$DIR/admin.kubeconfig" --request-timeout=10s)

# ---------------------------------------------------------------------------------------------
# etcd x2: the upstream's store and paddock's own store
etcd_start() { # etcd_start NAME CLIENT_PORT PEER_PORT
  start "$1" "$PADDOCK_ETCD_BIN/etcd" --name="$1" --data-dir="$DIR/$1" \
    --listen-client-urls="http://127.0.0.1:$2" --advertise-client-urls="http://127.0.0.1:$2" \
    --listen-peer-urls="http://127.0.0.1:$3" --initial-advertise-peer-urls="http://127.0.0.1:$3" \
    --initial-cluster="$1=http://127.0.0.1:$3" --initial-cluster-state=new \
    --initial-cluster-token="$1-$(basename "$DIR")" \
    --auto-compaction-mode=periodic --auto-compaction-retention=5m --quota-backend-bytes=2147483648 \
    --unsafe-no-fsync --log-level=warn
}
etcd_start etcd "$P_ETCD" "$P_ETCD_PEER"
etcd_start paddock-etcd "$P_PETCD" "$P_PETCD_PEER"
wait_for "etcd /health" 30 etcd "$PID_etcd" curl -sf --max-time 2 "http://127.0.0.1:$P_ETCD/health"
log "etcd ready on 127.0.0.1:$P_ETCD"

# ---------------------------------------------------------------------------------------------
# kube-apiserver
# Egress guard: every connection the apiserver would open to the "cluster" (webhooks and
# aggregated APIs by Service, kubelets for logs/exec/attach/port-forward, i.e. pod, service and
# node IPs) or to a "controlplane" URL (webhooks by URL, authn/authz/audit webhooks) goes through
# a konnectivity-style HTTP CONNECT proxy on a unix socket: tests/testbed/egress-proxy.py, which
# tunnels only to literal loopback addresses (kwok's kubelet endpoint on 127.0.0.1) and answers
# anything else (other IPs, host names such as svc.cluster.local) with 403 at once, logged in
# logs/egress-proxy.log. Only etcd is dialled directly.
EGRESS_SOCK="$DIR/egress-proxy.sock"
# The real node's addresses (node.sh) exist only inside its network namespace: CONNECTs to them
# are handed to the egress guard running in there. That covers the node (10.243.0.0/16), its
# pods (10.244.0.0/16) and the Service range (10.96.0.0/16, --service-cluster-ip-range below):
# a Service's cluster IP is dialled from inside the node's namespace, where kube-proxy's rules
# send it to an endpoint. paddock's tenant-webhook relay dials a tenant's webhook Service so
# (--cluster-egress-uds, this socket); the apiserver itself, run with --enable-aggregator-routing
# with a real node (below), resolves a webhook's or an aggregated API's Service to an endpoint
# and dials the pod's address. Without a real node there is nothing in there: those CONNECTs
# are refused (403) like any other.
VIA=()
if [ "$REAL_NODE" = 1 ]; then
  for net in 10.243.0.0/16 10.244.0.0/16 10.96.0.0/16; do VIA+=(--via "$net=$DIR/node/egress.sock"); done
fi
start egress-proxy python3 "$HERE/egress-proxy.py" "$EGRESS_SOCK" "${VIA[@]}"
wait_for "the egress proxy's socket" 15 egress-proxy "$PID_egress_proxy" test -S "$EGRESS_SOCK"
cat > "$DIR/egress-selector.yaml" <<EOF
apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport: {uds: {udsName: $EGRESS_SOCK}}
- name: controlplane
  connection:
    proxyProtocol: HTTPConnect
    transport: {uds: {udsName: $EGRESS_SOCK}}
- name: etcd
  connection: {proxyProtocol: Direct}
EOF
# Admission webhooks: the apiserver authenticates to them with the admission-client
# certificate (AdmissionConfiguration kubeConfigFile). "*" matches every webhook: the test bed's
# paddock replicas pick their admission ports at start; a production cluster names the
# webhook's host:port instead (docs/operations.md "Admission webhook").
cat > "$DIR/admission-webhook.kubeconfig" <<EOF
apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: $P/admission-client.crt
    client-key: $P/admission-client.key
EOF
cat > "$DIR/admission-config.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $DIR/admission-webhook.kubeconfig
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $DIR/admission-webhook.kubeconfig
EOF
start kube-apiserver "$PADDOCK_K8S_BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$P_ETCD" \
  --bind-address=127.0.0.1 --secure-port="$P_API" \
  --advertise-address=127.0.0.1 --endpoint-reconciler-type=none \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 \
  --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NodeRestriction \
  --admission-control-config-file="$DIR/admission-config.yaml" \
  --allow-privileged=true \
  --requestheader-client-ca-file="$P/front-proxy-ca.crt" \
  --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User \
  --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$P/front-proxy-client.crt" --proxy-client-key-file="$P/front-proxy-client.key" \
  --kubelet-preferred-address-types=InternalIP --kubelet-certificate-authority="$P/ca.crt" \
  --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
  --egress-selector-config-file="$DIR/egress-selector.yaml" \
  $( [ "$REAL_NODE" = 1 ] && echo --enable-aggregator-routing=true ) \
  --v=1
wait_for "kube-apiserver /readyz" 90 kube-apiserver "$PID_kube_apiserver" \
  curl -sf --max-time 3 --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" "$APISERVER_URL/readyz"
log "kube-apiserver ready at $APISERVER_URL"

# ---------------------------------------------------------------------------------------------
# paddock's etcd should be up by now
wait_for "paddock-etcd /health" 30 paddock-etcd "$PID_paddock_etcd" curl -sf --max-time 2 "http://127.0.0.1:$P_PETCD/health"

# kube-controller-manager, kube-scheduler, kwok
start kube-controller-manager "$PADDOCK_K8S_BIN/kube-controller-manager" \
  --kubeconfig="$DIR/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig="$DIR/kube-controller-manager.kubeconfig" \
  --authorization-kubeconfig="$DIR/kube-controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$P_KCM" --leader-elect=false \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --use-service-account-credentials=true --controllers='*' --v=1
start kube-scheduler "$PADDOCK_K8S_BIN/kube-scheduler" \
  --kubeconfig="$DIR/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig="$DIR/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig="$DIR/kube-scheduler.kubeconfig" \
  --bind-address=127.0.0.1 --secure-port="$P_SCHED" --leader-elect=false --v=1
# Streams: kwok serves the kubelet API on 127.0.0.1:$P_KWOK (TLS, kwok-kubelet cert) and the
# nodes advertise that port (--node-port) and InternalIP 127.0.0.1. What the "containers" do is
# configured statically below (no kwok CRDs in the apiserver), the same for every pod:
#   logs         the CRI-format file streams/pod.log (tests append lines to see logs -f/attach)
#   attach       follows the same file from its end
#   exec         runs the command ON THIS MACHINE, in streams/exec (working dir), with kwok's PATH
#                limited to streams/bin (echo cat true false pwd); tests run only those. Only
#                for containers named pause (kubectl create deployment --image=.../pause), web
#                or app; any other container gets kwok's "no exec found for container X in pod
#                NS/NAME" on the error channel (names upstream: paddock must rewrite it).
#                Not a sandbox: an absolute path runs anything kwok's user may run.
#   port-forward pod ports 80 and 8080 go to a loopback web server (python3 http.server on
#                127.0.0.1:$P_WEB serving streams/www); other ports fail.
S="$DIR/streams"
mkdir -p "$S/exec" "$S/bin" "$S/www"
for c in echo cat true false pwd; do
  ln -s "$(type -P "$c")" "$S/bin/$c" || die "$c not found for kwok's exec PATH"
done
printf 'hello from the exec dir\n' > "$S/exec/hello.txt"
printf 'paddock-testbed port-forward target\n' > "$S/www/index.html"
{
  echo "2026-01-01T00:00:00.000000000Z stdout F kwok log line 1"
  echo "2026-01-01T00:00:01.000000000Z stdout F kwok log line 2"
  echo "2026-01-01T00:00:02.000000000Z stderr F kwok log line 3 (stderr)"
} > "$S/pod.log"
start pf-target python3 -m http.server --bind 127.0.0.1 --directory "$S/www" "$P_WEB"
cat > "$DIR/kwok.yaml" <<EOF
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options: {}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata: {name: testbed-logs}
spec:
  logs:
  - logsFile: $S/pod.log
    follow: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterAttach
metadata: {name: testbed-attach}
spec:
  attaches:
  - logsFile: $S/pod.log
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata: {name: testbed-exec}
spec:
  execs:
  - containers: [pause, web, app]
    local:
      workDir: $S/exec
      envs: [{name: PADDOCK_TESTBED_EXEC, value: "1"}]
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterPortForward
metadata: {name: testbed-port-forward}
spec:
  forwards:
  - ports: [80, 8080]
    target: {address: 127.0.0.1, port: $P_WEB}
EOF
# The pod stages: kwok's defaults, except that a Job's pod running `sleep N` completes after N s
# (kwok-pod-stages.yaml says why).
cat "$HERE/kwok-pod-stages.yaml" >> "$DIR/kwok.yaml"
# kwok manages every node but the real one (node.sh labels it paddock.test/pool=real).
start kwok env PATH="$S/bin" "$PADDOCK_KWOK_BIN/kwok" \
  --config="$DIR/kwok.yaml" --kubeconfig="$DIR/admin.kubeconfig" \
  --manage-nodes-with-label-selector='!paddock.test/pool' --node-ip=127.0.0.1 --cidr=10.0.0.1/24 --node-lease-duration-seconds=40 \
  --server-address="127.0.0.1:$P_KWOK" --node-port="$P_KWOK" \
  --tls-cert-file="$P/kwok-kubelet.crt" --tls-private-key-file="$P/kwok-kubelet.key"

for i in 0 1; do
  cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  capacity: {cpu: "32", memory: 256Gi, pods: "110"}
  allocatable: {cpu: "32", memory: 256Gi, pods: "110"}
EOF
done > "$DIR/nodes.yaml"
"${K[@]}" create -f "$DIR/nodes.yaml" >/dev/null || die "creating the kwok nodes failed"
nodes_ready() {
  [ "$("${K[@]}" get nodes -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' \
        | grep -c '^True$')" = 2 ]
}
wait_for "2 Ready kwok nodes" 60 kwok "$PID_kwok" nodes_ready
nodes_advertise_kwok() {
  [ "$("${K[@]}" get nodes -o 'jsonpath={range .items[*]}{.status.daemonEndpoints.kubeletEndpoint.Port}/{.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' \
        | grep -c "^$P_KWOK/127.0.0.1\$")" = 2 ]
}
wait_for "nodes advertising kwok's kubelet endpoint 127.0.0.1:$P_KWOK" 30 kwok "$PID_kwok" nodes_advertise_kwok
wait_for "kwok's kubelet endpoint" 30 kwok "$PID_kwok" \
  curl -sf --max-time 2 --cacert "$P/ca.crt" "https://127.0.0.1:$P_KWOK/healthz"
alive_or_die pf-target "$PID_pf_target"
alive_or_die kube-controller-manager "$PID_kube_controller_manager"
alive_or_die kube-scheduler "$PID_kube_scheduler"
# The namespace 'default' needs its ServiceAccount (made by the controller manager) before pods.
wait_for "serviceaccount default/default" 60 kube-controller-manager "$PID_kube_controller_manager" \
  "${K[@]}" -n default get serviceaccount default
log "kwok nodes Ready"

# ---------------------------------------------------------------------------------------------
q() { printf "%s='%s'\n" "$1" "$2"; }
{
  q TESTBED_DIR "$DIR"
  q ADMIN_KUBECONFIG "$DIR/admin.kubeconfig"
  q APISERVER_URL "$APISERVER_URL"
  q APISERVER_PORT "$P_API"
  q APISERVER_CA "$P/ca.crt"
  q ETCD_ENDPOINTS "http://127.0.0.1:$P_ETCD"
  q ETCD_DATA_DIR "$DIR/etcd"
  q PADDOCK_ETCD_ENDPOINTS "http://127.0.0.1:$P_PETCD"
  q PADDOCK_ETCD_DATA_DIR "$DIR/paddock-etcd"
  q KCM_PORT "$P_KCM"
  q SCHEDULER_PORT "$P_SCHED"
  q FRONT_PROXY_CA "$P/front-proxy-ca.crt"
  q ADMISSION_CLIENT_CA "$P/admission-client-ca.crt"
  q ADMISSION_CLIENT_CERT "$P/admission-client.crt"
  q ADMISSION_CLIENT_KEY "$P/admission-client.key"
  q ADMISSION_CLIENT_NAME "kube-apiserver-admission"
  q FRONT_PROXY_CLIENT_CERT "$P/front-proxy-client.crt"
  q FRONT_PROXY_CLIENT_KEY "$P/front-proxy-client.key"
  q KUBECTL "$KUBECTL"
  q PID_ETCD "$PID_etcd"
  q PID_PADDOCK_ETCD "$PID_paddock_etcd"
  q PID_KUBE_APISERVER "$PID_kube_apiserver"
  q PID_KUBE_CONTROLLER_MANAGER "$PID_kube_controller_manager"
  q PID_KUBE_SCHEDULER "$PID_kube_scheduler"
  q PID_KWOK "$PID_kwok"
  q PID_EGRESS_PROXY "$PID_egress_proxy"
  q EGRESS_PROXY_SOCKET "$EGRESS_SOCK"
  q KWOK_KUBELET_PORT "$P_KWOK"
  q STREAMS_DIR "$S"
  q POD_LOG_FILE "$S/pod.log"
  q PORT_FORWARD_TARGET_PORT "$P_WEB"
  q OWNER_PID "$OWNER"
  q STARTUP_MS "$(( ($(date +%s%N) - T0) / 1000000 ))"
} > "$DIR/env"
if [ "$REAL_NODE" = 1 ]; then
  "$HERE/node.sh" "$DIR" || die "the real node did not come up (logs in $DIR/logs)"
fi
OK=1
log "control plane up in $DIR (env: $DIR/env)"
