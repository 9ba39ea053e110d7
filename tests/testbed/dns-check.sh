#!/usr/bin/env bash
# A check by hand of the tenant DNS on the real node (issue 38, docs/dns.md), as the cluster admin
# straight at the apiserver (no paddock): two tenants' namespaces as paddock makes them, Services
# of the same name in both, a headless Service with a StatefulSet, and client pods on the real
# node whose resolv.conf is what paddock's webhook injects (nameserver $REAL_NODE_DNS, search
# <ns>.svc.cluster.local svc.cluster.local cluster.local, ndots:5). busybox's nslookup asks (its
# own resolver: it applies the search path only to names without a dot, and sends exactly the
# name it is given); names that need the search path with ndots (web.shop, web.shop.svc) are
# resolved by a real stub resolver: Go's, in kubectl of paddock.test/kubectl:1.33 (the address it
# dials shows in its error).
#
#   tests/testbed/dns-check.sh <testbed-dir> [--keep]      (a test bed of up.sh --real-node)
#
# Prints every question and answer; exits 1 if any check fails. Removes its namespaces at the end
# (not with --keep).
set -uo pipefail
DIR="${1:?usage: dns-check.sh <testbed-dir> [--keep]}"
KEEP="${2:-}"
# shellcheck disable=SC1091
source "$DIR/env"
[ -n "${REAL_NODE_DNS:-}" ] || { echo "dns-check: $DIR has no real node (up.sh --real-node)" >&2; exit 2; }
K=("$KUBECTL" --kubeconfig="$ADMIN_KUBECONFIG" --request-timeout=30s)
FAILED=0
NSS=(abcdef-shop abcdef-web zyxwvu-shop zyxwvu-web dnscheck-plain)
[ "$KEEP" = --keep ] || trap '"${K[@]}" delete ns "${NSS[@]}" --wait=false >/dev/null 2>&1' EXIT

client() { # client NAMESPACE VIEWNS: a kubectl (+ busybox) pod on the real node with the tenant DNS
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: $1}
spec:
  nodeSelector: {paddock.test/pool: real}
  tolerations: [{key: paddock.test/real-node, operator: Exists, effect: NoSchedule}]
  terminationGracePeriodSeconds: 0
  dnsPolicy: None
  dnsConfig:
    nameservers: ["$REAL_NODE_DNS"]
    searches: [$2.svc.cluster.local, svc.cluster.local, cluster.local]
    options: [{name: ndots, value: "5"}]
  containers:
  - {name: c, image: "paddock.test/kubectl:1.33", imagePullPolicy: Never, command: [sleep, "3600"]}
---
YAML
}
service() { # service NAMESPACE NAME [headless]
  cat <<YAML
apiVersion: v1
kind: Service
metadata: {name: $2, namespace: $1}
spec:
  $( [ "${3:-}" = headless ] && echo "clusterIP: None" || echo "type: ClusterIP" )
  selector: {app: $2}
  ports: [{name: http, port: 80, protocol: TCP}]
---
YAML
}
{
  for ns in abcdef-shop abcdef-web; do echo "{apiVersion: v1, kind: Namespace, metadata: {name: $ns, labels: {paddock.io/tenant: abcdef}}}"; echo ---; done
  for ns in zyxwvu-shop zyxwvu-web; do echo "{apiVersion: v1, kind: Namespace, metadata: {name: $ns, labels: {paddock.io/tenant: zyxwvu}}}"; echo ---; done
  echo "{apiVersion: v1, kind: Namespace, metadata: {name: dnscheck-plain}}"; echo ---
  service abcdef-shop web; service zyxwvu-shop web; service abcdef-web api
  service abcdef-shop db headless
  cat <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: abcdef-shop}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {paddock.test/pool: real}
      tolerations: [{key: paddock.test/real-node, operator: Exists, effect: NoSchedule}]
      terminationGracePeriodSeconds: 0
      containers:
      - {name: c, image: "paddock.test/busybox:1.35", imagePullPolicy: Never, command: [sleep, "3600"]}
---
YAML
  client abcdef-web web; client zyxwvu-web web; client dnscheck-plain plain
} | "${K[@]}" apply -f - >/dev/null || { echo "dns-check: creating the objects failed" >&2; exit 1; }
"${K[@]}" -n abcdef-shop rollout status statefulset/db --timeout=90s >/dev/null
for ns in abcdef-web zyxwvu-web dnscheck-plain; do "${K[@]}" -n "$ns" wait pod/client --for=condition=Ready --timeout=90s >/dev/null; done
WEB_A="$("${K[@]}" -n abcdef-shop get svc web -o jsonpath='{.spec.clusterIP}')"
WEB_Z="$("${K[@]}" -n zyxwvu-shop get svc web -o jsonpath='{.spec.clusterIP}')"
API_A="$("${K[@]}" -n abcdef-web get svc api -o jsonpath='{.spec.clusterIP}')"
DB0="$("${K[@]}" -n abcdef-shop get pod db-0 -o jsonpath='{.status.podIP}')"
echo "abcdef-shop/web $WEB_A, zyxwvu-shop/web $WEB_Z, abcdef-web/api $API_A, abcdef-shop/db-0 $DB0"

# check NS EXPECT-REGEX cmd...: the output of cmd in NS's client (on one line) must match
check() {
  local ns=$1 want=$2 out; shift 2
  out="$("${K[@]}" -n "$ns" exec client -- "$@" 2>&1)"
  if tr '\n' ' ' <<<"$out" | grep -Eq -- "$want"; then echo "PASS [$ns] $* ~ /$want/"
  else echo "FAIL [$ns] $* !~ /$want/"; FAILED=1; fi
  sed -e '/^Server:/d' -e '/^Address:.*:53$/d' -e '/^$/d' -e '/^command terminated/d' -e '/websocket.go.*Unknown stream id/d' \
      -e '/round_trippers\|loader.go\|The connection to the server/d' -e 's/^I[0-9. :]*helpers.go:[0-9]*\] //' -e 's/^/    /' <<<"$out"
}
esc() { sed 's/\./\\./g' <<<"$1"; }
ptr() { awk -F. '{print $4"."$3"."$2"."$1".in-addr.arpa"}' <<<"$1"; }
# Go's resolver (kubectl): the address a name resolves to, as kubectl dials it (nothing listens)
dial() { echo kubectl -v=6 --request-timeout=3s -s "http://$1:80" get --raw /; }
echo "--- tenant abcdef (pod abcdef-web/client: its view is namespaces shop and web)"
check abcdef-web "Name:[[:space:]]+web\.shop\.svc\.cluster\.local Address: $(esc "$WEB_A")" nslookup -type=a web.shop.svc.cluster.local
check abcdef-web "dial tcp $(esc "$WEB_A"):80" $(dial web.shop.svc)
check abcdef-web "dial tcp $(esc "$WEB_A"):80" $(dial web.shop)
check abcdef-web "dial tcp $(esc "$API_A"):80" $(dial api)
check abcdef-web "Name:[[:space:]]+api\.web\.svc\.cluster\.local Address: $(esc "$API_A")" nslookup -type=a api
check abcdef-web "Name:[[:space:]]+db-0\.db\.shop\.svc\.cluster\.local Address: $(esc "$DB0")" nslookup -type=a db-0.db.shop.svc.cluster.local
check abcdef-web "Address: $(esc "$DB0")" nslookup -type=a db.shop.svc.cluster.local
check abcdef-web "dial tcp $(esc "$DB0"):80" $(dial db-0.db.shop)
check abcdef-web "db-0\.db\.shop\.svc\.cluster\.local" nslookup -type=srv _http._tcp.db.shop.svc.cluster.local
check abcdef-web "name = web\.shop\.svc\.cluster\.local" nslookup -type=ptr "$(ptr "$WEB_A")"
check abcdef-web "name = db-0\.db\.shop\.svc\.cluster\.local" nslookup -type=ptr "$(ptr "$DB0")"
check abcdef-web "Address: $(esc "$DB0")" nslookup -type=a "${DB0//./-}.shop.pod.cluster.local"
check abcdef-web "NXDOMAIN" nslookup -type=a web.zyxwvu-shop.svc.cluster.local
check abcdef-web "NXDOMAIN" nslookup -type=a web.abcdef-shop.svc.cluster.local
check abcdef-web "NXDOMAIN" nslookup -type=a kubernetes.default.svc.cluster.local
check abcdef-web "NXDOMAIN" nslookup -type=a metrics-server.kube-system.svc.cluster.local
check abcdef-web "NXDOMAIN" nslookup -type=a web.web.svc.cluster.local
check abcdef-web "NXDOMAIN" nslookup -type=a "web.*.svc.cluster.local"
check abcdef-web "NXDOMAIN" nslookup -type=a web.any.svc.cluster.local
check abcdef-web "NXDOMAIN" nslookup -type=ptr "$(ptr "$WEB_Z")"
check abcdef-web "NXDOMAIN" nslookup -type=ptr "$(ptr 10.96.0.1)"
# Go's resolver tries the search path (all NXDOMAIN), then the name itself, outside the zone: the
# test bed has no upstream (SERVFAIL, "server misbehaving"); on a platform forward answers it
check abcdef-web "lookup web.zyxwvu-shop on $(esc "$REAL_NODE_DNS"):53: (no such host|server misbehaving)" $(dial web.zyxwvu-shop)
echo "--- tenant zyxwvu (pod zyxwvu-web/client): the same name is its own Service"
check zyxwvu-web "Name:[[:space:]]+web\.shop\.svc\.cluster\.local Address: $(esc "$WEB_Z")" nslookup -type=a web.shop.svc.cluster.local
check zyxwvu-web "dial tcp $(esc "$WEB_Z"):80" $(dial web.shop)
check zyxwvu-web "NXDOMAIN" nslookup -type=a db-0.db.shop.svc.cluster.local
check zyxwvu-web "NXDOMAIN" nslookup -type=ptr "$(ptr "$WEB_A")"
echo "--- a pod in a namespace of no tenant (dnscheck-plain/client)"
check dnscheck-plain "REFUSED" nslookup -type=a web.abcdef-shop.svc.cluster.local
check dnscheck-plain "REFUSED" nslookup -type=a kubernetes.default.svc.cluster.local
check dnscheck-plain "REFUSED" nslookup -type=ptr "$(ptr "$WEB_A")"
echo "--- the tenant DNS's log (last lines)"
tail -n 5 "$DIR/logs/tenant-dns.log" | sed 's/^/    /'
[ "$FAILED" = 0 ] && echo "dns-check: all checks passed" || echo "dns-check: FAILED"
exit "$FAILED"
