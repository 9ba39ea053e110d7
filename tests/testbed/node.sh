#!/usr/bin/env bash
# The real node: containerd + runc (Debian's packages) and a kubelet and kube-proxy of the control
# plane's own release (build.sh), registered with the test bed's apiserver beside the kwok nodes.
# Called by up.sh --real-node after the control plane is up; not meant to run alone.
#
#   tests/testbed/node.sh <testbed-dir>
#
# Network: the node lives in a network namespace of its own (paddock-tb-<hash of dir>) that holds
# only its loopback, the node's address (NODE_IP, on that loopback) and the pod bridge ptb0
# (POD_CIDR, CNI bridge + host-local, no masquerade); its routes: the pod bridge and the
# Service range (to kube-proxy's rules). The namespace has no interface to the host
# and no route out: nothing a pod sends can leave it. The two ways across are unix sockets:
#   - node -> apiserver: socat on 127.0.0.1:<apiserver port> inside the namespace, carried over
#     a unix socket to the host's 127.0.0.1:<apiserver port> (the kubelet, kube-proxy);
#   - apiserver -> node (logs, exec, attach, port-forward, pods/proxy, services/proxy, webhooks
#     and aggregated APIs of pods here): the apiserver's egress guard hands CONNECTs for NODE_IP,
#     POD_CIDR and SERVICE_CIDR to a second egress guard running inside the namespace
#     (egress-proxy.py --via / --allow); a cluster IP is dialled from in there, through
#     kube-proxy's rules. paddock's tenant-webhook relay uses the same socket
#     (--cluster-egress-uds <dir>/egress-proxy.sock).
# Images: only those of images.sh, imported into containerd; every registry is sent to
# 127.0.0.1:9, where nothing listens, so a pull of anything else fails at once and locally.
# The node is labelled paddock.test/pool=real and tainted paddock.test/real-node=true:NoSchedule:
# only pods that ask land on it; the kwok nodes keep everything else.
# The tenant DNS (issue 38, docs/dns.md): build.sh's CoreDNS with the tenantview plugin, a process
# in the namespace on DNS_IP:53 (UDP and TCP; on the namespace's loopback like NODE_IP), reached
# by pods straight from their own addresses (a Service would hide them: kube-proxy masquerades
# everything here), talking to the apiserver as user paddock-tenant-dns (node-platform.yaml).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${1:?usage: node.sh <testbed-dir>}"
DIR="$(cd "$DIR" && pwd)"
# shellcheck disable=SC1091
source "$DIR/env"
# shellcheck source=versions.env
source "$HERE/versions.env"
T0=$(date +%s%N)
log() { echo "[testbed-node +$(( ($(date +%s%N) - T0) / 1000000 ))ms] $*" >&2; }
die() { echo "[testbed-node] ERROR: $*" >&2; exit 1; }

for t in containerd runc ctr socat nsenter iptables buildah; do
  command -v "$t" >/dev/null || die "$t is missing (scripts/install-node.sh installs the node's packages)"
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] \
  || die "the CNI plugins are missing (Debian package containernetworking-plugins)"
eval "$("$HERE/build.sh" --node --print-env)"
IMAGES="$("$HERE/images.sh" --print-dir)"

NODE_NAME=paddock-node-0
NODE_IP=10.243.0.2
DNS_IP=10.243.0.3
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16   # up.sh's --service-cluster-ip-range
KUBELET_PORT=10250
ID="$(echo "$DIR" | sha256sum | cut -c1-10)"
NS="paddock-tb-$ID"
CGROUP_ROOT="/paddock-tb-$ID"
N="$DIR/node"
P="$DIR/pki"
mkdir -p "$N"/{tenant-dns,containerd/root,containerd/state,containerd/certs.d/_default,cni/net.d,cni/ipam,kubelet,pod-logs,kube-proxy}
in_ns() { nsenter --net="/run/netns/$NS" "$@"; }
record() { echo "$1 $2 $(awk '{print $22}' "/proc/$2/stat" 2>/dev/null || echo 0)" >> "$DIR/pids"; }
start() { # start NAME ARGS...: a process group of its own, recorded for down.sh
  local name=$1; shift
  setsid "$@" </dev/null >"$DIR/logs/$name.log" 2>&1 &
  record "$name" $!
  printf -v "PID_${name//-/_}" '%s' "$!"
}
wait_for() { # wait_for WHAT TIMEOUT NAME cmd...
  local what=$1 timeout=$2 name=$3; shift 3
  local pid_var="PID_${name//-/_}" deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    kill -0 "${!pid_var}" 2>/dev/null || { tail -n 30 "$DIR/logs/$name.log" >&2; die "$name exited; log: $DIR/logs/$name.log"; }
    [ "$(date +%s)" -lt "$deadline" ] || { tail -n 30 "$DIR/logs/$name.log" >&2; die "timed out after ${timeout}s waiting for $what"; }
    sleep 0.3
  done
}

# ---------------------------------------------------------------------------------------------
# the namespace and its two ways across
echo "$NS" > "$N/netns"
ip netns add "$NS"
in_ns ip link set lo up
in_ns ip addr add "$NODE_IP/32" dev lo
in_ns ip addr add "$DNS_IP/32" dev lo
# kube-proxy's service rules see bridged pod-to-pod replies only with bridge netfilter on
in_ns sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
in_ns sysctl -qw net.ipv4.ip_forward=1
# Services from the node itself (a bridge to a Service's cluster IP, as a NodePort or a load
# balancer would be): the first route lookup of a connection to a cluster IP needs some route;
# kube-proxy's OUTPUT rules then send it to an endpoint on the pod bridge. Only the Service
# range, from the node's address; still no route out.
in_ns ip route add "$SERVICE_CIDR" dev lo src "$NODE_IP"
start node-api-host socat "UNIX-LISTEN:$N/apiserver.sock,fork,mode=600" "TCP:127.0.0.1:$APISERVER_PORT"
start node-api-ns nsenter --net="/run/netns/$NS" socat \
  "TCP-LISTEN:$APISERVER_PORT,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$N/apiserver.sock"
# the `kubernetes` Service's endpoint for pods on this node (kube-proxy: 10.96.0.1:443 -> here)
start node-api-svc nsenter --net="/run/netns/$NS" socat \
  "TCP-LISTEN:6443,bind=$NODE_IP,fork,reuseaddr" "UNIX-CONNECT:$N/apiserver.sock"
# Service addresses too: kube-proxy's rules in here handle what this proxy dials (paddock's relay
# calls a tenant webhook by its Service's cluster IP, as an apiserver without aggregator routing does).
start node-egress nsenter --net="/run/netns/$NS" python3 "$HERE/egress-proxy.py" "$N/egress.sock" \
  --allow "$NODE_IP/32" --allow "$POD_CIDR" --allow "$SERVICE_CIDR"
log "network namespace $NS: node $NODE_IP, pods $POD_CIDR, no route out"

# ---------------------------------------------------------------------------------------------
# certificates: the kubelet's client (Node authorizer) and serving certificates, kube-proxy's client
(
  cd "$P"
  exec 2>>"$DIR/logs/pki.log"
  leaf() { # leaf NAME SUBJECT EKU SANS
    openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
    { echo "basicConstraints=critical,CA:FALSE"; echo "keyUsage=critical,digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=$3"; [ -n "$4" ] && echo "subjectAltName=$4"; } > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -sha256 -extfile "$1.ext" -out "$1.crt"
    rm -f "$1.csr" "$1.ext"
  }
  leaf kubelet-client "/O=system:nodes/CN=system:node:$NODE_NAME" clientAuth ""
  leaf kubelet-serving "/CN=$NODE_NAME" serverAuth "DNS:$NODE_NAME,IP:$NODE_IP"
  leaf kube-proxy "/CN=system:kube-proxy" clientAuth ""
  leaf tenant-dns "/CN=paddock-tenant-dns" clientAuth ""
) || die "node PKI failed; see $DIR/logs/pki.log"
node_kubeconfig() { # FILE CERT USER
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$P/ca.crt"}
users:
- name: $3
  user: {client-certificate: "$P/$2.crt", client-key: "$P/$2.key"}
contexts:
- name: testbed
  context: {cluster: testbed, user: $3}
current-context: testbed
EOF
}
node_kubeconfig "$N/kubelet.kubeconfig" kubelet-client "system:node:$NODE_NAME"
node_kubeconfig "$N/kube-proxy.kubeconfig" kube-proxy system:kube-proxy
node_kubeconfig "$N/tenant-dns.kubeconfig" tenant-dns paddock-tenant-dns

# ---------------------------------------------------------------------------------------------
# containerd (in the namespace: the pod bridge is made there), images imported from images.sh
cat > "$N/cni/net.d/10-paddock-testbed.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "paddock-testbed", "plugins": [
  {"type": "bridge", "bridge": "ptb0", "isGateway": true, "isDefaultGateway": true,
   "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "dataDir": "$N/cni/ipam"}},
  {"type": "loopback"}
]}
EOF
cat > "$N/containerd/certs.d/_default/hosts.toml" <<'EOF'
# every registry: a loopback port where nothing listens (images come only from images.sh)
server = "https://127.0.0.1:9"
[host."https://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
EOF
cat > "$N/containerd/config.toml" <<EOF
version = 2
root = "$N/containerd/root"
state = "$N/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$N/containerd.sock"
[ttrpc]
  address = "$N/containerd.sock.ttrpc"
[debug]
  level = "warn"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "paddock.test/pause:3.10"
  # the sandbox has no CAP_SYS_RESOURCE: without this every pod sandbox fails to start
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # pod network namespaces under the state dir: down.sh unmounts everything under <dir>/node
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$N/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$N/containerd/certs.d"
EOF
start containerd nsenter --net="/run/netns/$NS" containerd --config "$N/containerd/config.toml"
wait_for "containerd's socket" 30 containerd ctr --address "$N/containerd.sock" version
for img in "$IMAGES"/*.tar; do
  ctr --address "$N/containerd.sock" -n k8s.io images import --snapshotter native "$img" >>"$DIR/logs/containerd.log" 2>&1 \
    || die "importing $img into containerd failed"
done
log "containerd up; images: $(ctr --address "$N/containerd.sock" -n k8s.io images ls -q | grep -v '^sha256:' | tr '\n' ' ')"

# ---------------------------------------------------------------------------------------------
# kubelet: its own cgroup root (several test beds may share the machine), cgroupfs
for h in /sys/fs/cgroup/*/; do
  case "$h" in */unified/) continue ;; esac
  mkdir -p "$h${CGROUP_ROOT#/}"
  if [ -f "${h}cpuset.cpus" ]; then
    cat "${h}cpuset.cpus" > "$h${CGROUP_ROOT#/}/cpuset.cpus"; cat "${h}cpuset.mems" > "$h${CGROUP_ROOT#/}/cpuset.mems"
  fi
done
echo "$CGROUP_ROOT" > "$N/cgroup-root"
# no cluster DNS for ClusterFirst pods (the platform's, here none); tenant pods get the tenant DNS
# (DNS_IP) from their own dnsConfig, which paddock's webhook sets (issue 38)
printf 'nameserver 127.0.0.1\n' > "$N/resolv.conf"
cat > "$N/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $P/kubelet-serving.crt
tlsPrivateKeyFile: $P/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
failSwapOn: false
containerRuntimeEndpoint: unix://$N/containerd.sock
podLogsDir: $N/pod-logs
resolvConf: $N/resolv.conf
clusterDomain: cluster.local
podCIDR: $POD_CIDR
maxPods: 30
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
localStorageCapacityIsolation: false
enforceNodeAllocatable: []
registerWithTaints:
- {key: paddock.test/real-node, value: "true", effect: NoSchedule}
EOF
start kubelet nsenter --net="/run/netns/$NS" "$PADDOCK_NODE_BIN/kubelet" \
  --config="$N/kubelet.yaml" --kubeconfig="$N/kubelet.kubeconfig" \
  --root-dir="$N/kubelet" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
  --node-labels=paddock.test/pool=real --v=1
K=("$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" --request-timeout=10s)
node_ready() {
  [ "$("${K[@]}" get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
wait_for "node $NODE_NAME Ready" 120 kubelet node_ready

cat > "$N/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $N/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
mode: iptables
clusterCIDR: $POD_CIDR
# leave the machine's conntrack limits alone
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
# hairpin and pod-to-service on one bridge: the reply comes back through the node's bridge address
iptables: {masqueradeAll: true}
EOF
start kube-proxy nsenter --net="/run/netns/$NS" "$PADDOCK_NODE_BIN/kube-proxy" --config="$N/kube-proxy.yaml" --v=1
wait_for "kube-proxy /healthz" 60 kube-proxy in_ns curl -sf --max-time 2 http://127.0.0.1:10256/healthz

# the platform's pods and objects for this node (node-platform.yaml says which and why)
sed -e "s/@NODE_IP@/$NODE_IP/g" -e "s/@METRICS_SERVER_VERSION@/$METRICS_SERVER_VERSION/g" "$HERE/node-platform.yaml" \
  | "${K[@]}" apply -f - >>"$DIR/logs/node-platform.log" 2>&1 || die "applying node-platform.yaml failed; see $DIR/logs/node-platform.log"
# the tenant DNS: the platform Corefile (deploy/dns/Corefile) for the test bed: bound to DNS_IP,
# health/ready/metrics on the namespace's loopback, the apiserver through the socat on
# 127.0.0.1:<apiserver port>, and no forward (the namespace has no way out; other names SERVFAIL)
cat > "$N/tenant-dns/Corefile" <<EOF
.:53 {
    bind $DNS_IP
    errors
    log . "{remote} {type} {name} {rcode} {duration}"
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
    prometheus 127.0.0.1:9153
    tenantview cluster.local {
        kubeconfig $N/tenant-dns.kubeconfig testbed
    }
    cache 30
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $N/tenant-dns.kubeconfig testbed
        pods verified
        ttl 5
    }
}
EOF
start tenant-dns nsenter --net="/run/netns/$NS" "$PADDOCK_TENANT_DNS_BIN/tenant-dns" -conf "$N/tenant-dns/Corefile"
log "tenant DNS started"
metrics_available() {
  [ "$("${K[@]}" get apiservice v1beta1.metrics.k8s.io -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}')" = True ]
}
wait_for "the tenant DNS ready on $DNS_IP:53" 60 tenant-dns in_ns curl -sf --max-time 2 http://127.0.0.1:8181/ready
log "tenant DNS ready on $DNS_IP:53 (udp, tcp)"
wait_for "metrics.k8s.io Available (metrics-server on $NODE_NAME)" 120 kubelet metrics_available

{
  printf "%s='%s'\n" REAL_NODE_NAME "$NODE_NAME"
  printf "%s='%s'\n" REAL_NODE_IP "$NODE_IP"
  printf "%s='%s'\n" REAL_NODE_DNS "$DNS_IP"
  printf "%s='%s'\n" REAL_NODE_POD_CIDR "$POD_CIDR"
  printf "%s='%s'\n" REAL_NODE_NETNS "$NS"
  printf "%s='%s'\n" REAL_NODE_CONTAINERD "$N/containerd.sock"
  printf "%s='%s'\n" PID_KUBELET "$PID_kubelet"
  printf "%s='%s'\n" PID_TENANT_DNS "$PID_tenant_dns"
} >> "$DIR/env"
log "real node $NODE_NAME Ready"
