#!/usr/bin/env bash
# Kubernetes conformance for paddock: the node-free [sig-api-machinery] [Conformance] tests of the
# pinned release, run twice against one local control plane —
#   direct:  with the upstream admin kubeconfig (the baseline), then
#   paddock: through a real `paddock serve` (etcd store) as a tenant (`paddock tenant create`),
# and a report of both pass counts and of the tests that pass directly but fail through paddock.
#
#   tests/testbed/conformance.sh [--mode both|direct|paddock] [--fast] [--focus RE] [--skip RE]
#                                [--report FILE] [--keep] [--tenant-setup FILE]
#   tests/testbed/conformance.sh --full [--procs N] [--refresh-baseline] [--mode ...] ...
#                                [--direct-log FILE]
#
# --fast     a handful of quick, focused tests (a few minutes) instead of all of them
# --report   default target/conformance/report.md (JSON reports and logs are copied beside it)
# --keep     keep the control plane running afterwards (prints the directory; stop with down.sh)
# --tenant-setup FILE  a diagnostic aid: `kubectl apply -f FILE` as the tenant before the paddock
#            run (e.g. to see what else fails once a missing object exists). The report says so;
#            official counts are taken without it.
# --full     every [Conformance] test of the release (all sigs; binary e2e-conformance.test,
#            build.sh --e2e-full), run by the ginkgo CLI in --procs parallel processes (default
#            3). The direct run's pass list is cached ($CACHE/conformance-full-direct-<ver>.txt);
#            with a cache, mode both skips the direct run and runs through paddock only what
#            passed directly. --refresh-baseline runs the direct run again. While the direct
#            run goes, its passes so far are written every minute to $CACHE/...-<ver>.partial.txt
#            (a stopped run is not lost); without a complete cache, --mode both|paddock takes
#            that partial list. --direct-log FILE: the pass list of a (partial) direct run's
#            ginkgo log instead (e.g. target/conformance/logs/e2e-direct.log). With --full, an
#            explicit --focus selects among the direct passes (an extended regexp on their names);
#            a direct run with one updates the cached list for the tests it ran only.
# Exit status: 0 if every test that passes directly also passes through paddock (mode both), or
# if every test passed (single mode); 1 otherwise; 2 on usage or setup errors.
# Skipped always: AdmissionWebhook, CustomResourceConversionWebhook, CustomResourceFieldSelectors,
# Aggregator, [Slow], [Disruptive] — they make the apiserver dial pod or service IPs, which never
# happens here (up.sh also blocks all such egress of the apiserver).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

MODE=both; FAST=0; KEEP=0; TENANT_SETUP=""; FULL=0; PROCS=3; REFRESH=0; DIRECT_LOG=""
FOCUS='\[sig-api-machinery\].*\[Conformance\]'
# CustomResourceFieldSelectors deploys a conversion webhook too (crd_selectable_fields.go).
SKIP_ALWAYS='AdmissionWebhook|CustomResourceConversionWebhook|CustomResourceFieldSelectors|Aggregator|\[Slow\]|\[Disruptive\]'
SKIP_EXTRA=""
REPORT="$ROOT/target/conformance/report.md"
# The fast subset: one or two quick tests of each kind of API use (plain CRUD, discovery,
# chunked lists, watches, CRDs, field validation, quota, table output). About 1-3 minutes a run.
FAST_FOCUS='\[sig-api-machinery\] (server version should find the server version|Discovery should validate PreferredVersion|Servers with support for API chunking should return chunks|Servers with support for Table transformation should return a 406|Watchers should observe add, update, and delete watch notifications on configmaps|Watchers should be able to start watching from a specific resource version|CustomResourceDefinition resources .*creating/deleting custom resource definition objects works|FieldValidation should detect unknown and duplicate fields of a typed object|ResourceQuota should create a ResourceQuota and capture the life of a configMap).*\[Conformance\]'

while [ $# -gt 0 ]; do
  case "$1" in
    --mode) MODE="${2:?}"; shift 2 ;;
    --fast) FAST=1; shift ;;
    --full) FULL=1; shift ;;
    --procs) PROCS="${2:?}"; shift 2 ;;
    --refresh-baseline) REFRESH=1; shift ;;
    --direct-log) DIRECT_LOG="$(cd "$(dirname "${2:?}")" && pwd)/$(basename "$2")"; shift 2 ;;
    --focus) FOCUS="${2:?}"; shift 2 ;;
    --skip) SKIP_EXTRA="${2:?}"; shift 2 ;;
    --report) REPORT="${2:?}"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --tenant-setup) TENANT_SETUP="$(cd "$(dirname "${2:?}")" && pwd)/$(basename "$2")"; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "conformance.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$MODE" in both|direct|paddock) ;; *) echo "conformance.sh: --mode both|direct|paddock" >&2; exit 2 ;; esac
[ "$FAST" = 1 ] && FOCUS="$FAST_FOCUS"
# The whole suite: only what makes the apiserver dial pod or Service IPs is skipped — webhooks
# and aggregated APIs served by pods (as above), the apiserver's proxy to pods and services
# (sig-network Proxy, kubectl proxy), and streams to containers that kwok does not run
# (kubectl logs filtering, websocket exec/logs). [Slow] and [Serial] tests run ([Serial] ones
# alone, at the end, as ginkgo does); [Disruptive] ones (none are conformance tests) do not.
SKIP_FULL='AdmissionWebhook|CustomResourceConversionWebhook|CustomResourceFieldSelectors|Aggregator|\[sig-network\] Proxy version v1|Kubectl client Proxy server|\[sig-cli\] Kubectl logs|over websockets|\[Disruptive\]'
if [ "$FULL" = 1 ]; then
  [ "$FOCUS" = '\[sig-api-machinery\].*\[Conformance\]' ] && FOCUS='\[Conformance\]'
  SKIP_ALWAYS="$SKIP_FULL"
  [ "$REPORT" = "$ROOT/target/conformance/report.md" ] && REPORT="$ROOT/target/conformance/full.md"
fi
SKIP="$SKIP_ALWAYS${SKIP_EXTRA:+|$SKIP_EXTRA}"
# The platform grants of the full run's tenant: every kind paddock can grant.
PLATFORM_KINDS='"ingressclasses.networking.k8s.io","servicecidrs.networking.k8s.io","ipaddresses.networking.k8s.io","storageclasses.storage.k8s.io","csinodes.storage.k8s.io","csidrivers.storage.k8s.io","volumeattachments.storage.k8s.io","runtimeclasses.node.k8s.io","certificatesigningrequests.certificates.k8s.io","nodes.","priorityclasses.scheduling.k8s.io"'
log() { echo "[conformance $(date -u +%H:%M:%S)] $*" >&2; }
die() { echo "[conformance] ERROR: $*" >&2; exit 2; }
T0=$SECONDS

if [ "$FULL" = 1 ]; then
  eval "$("$HERE/build.sh" --e2e-full --print-env)"
  E2E="$PADDOCK_E2E_BIN/e2e-conformance.test"; GINKGO="$PADDOCK_E2E_BIN/ginkgo"
  [ -x "$GINKGO" ] || die "missing $GINKGO"
  BASELINE="${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed}/conformance-full-direct-$(. "$HERE/versions.env"; echo "$K8S_VERSION").txt"
  PARTIAL="${BASELINE%.txt}.partial.txt"
else
  eval "$("$HERE/build.sh" --e2e --print-env)"
  E2E="$PADDOCK_E2E_BIN/e2e-apimachinery.test"
fi
export PADDOCK_K8S_BIN PADDOCK_ETCD_BIN PADDOCK_KWOK_BIN
[ -x "$E2E" ] || die "missing $E2E"

TB="$(mktemp -d "${TMPDIR:-/tmp}/paddock-conformance-XXXXXX")"
cleanup() {
  if [ "$KEEP" = 1 ]; then
    log "control plane kept in $TB (stop it with tests/testbed/down.sh $TB)"
  else
    "$HERE/down.sh" "$TB" || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
if [ "$KEEP" = 1 ]; then "$HERE/up.sh" "$TB"; else "$HERE/up.sh" "$TB" --owner-pid $$; fi
# shellcheck disable=SC1091
. "$TB/env"
mkdir -p "$TB/home" "$TB/reports"

run_suite() { # run_suite NAME KUBECONFIG [FOCUS]
  local name=$1 kc=$2 focus=${3:-$FOCUS} t0=$SECONDS rc=0
  if [ "$FULL" = 1 ]; then run_suite_parallel "$name" "$kc" "$focus"; return; fi
  log "running the conformance tests ($name) — log: $TB/logs/e2e-$name.log"
  # HOME of its own: kubectl (used by some tests) keeps its discovery cache there.
  HOME="$TB/home" timeout 9000 "$E2E" \
    --kubeconfig="$kc" --provider=skeleton --kubectl-path="$KUBECTL" \
    --ginkgo.focus="$focus" --ginkgo.skip="$SKIP" \
    --ginkgo.timeout=2h --ginkgo.no-color --ginkgo.v \
    --ginkgo.json-report="$TB/reports/$name.json" --report-dir="$TB/reports/$name" \
    >"$TB/logs/e2e-$name.log" 2>&1 || rc=$?
  log "$name: e2e exited $rc after $((SECONDS - t0)) s; $(grep -E '^(Ran|FAIL!|SUCCESS!)' "$TB/logs/e2e-$name.log" | tr '\n' ' ')"
  echo "$((SECONDS - t0))" > "$TB/reports/$name.seconds"
}

# The ginkgo CLI runs the precompiled binary in $PROCS processes and merges their reports.
run_suite_parallel() { # run_suite_parallel NAME KUBECONFIG FOCUS
  local name=$1 kc=$2 focus=$3 t0=$SECONDS rc=0
  log "running the conformance tests ($name, $PROCS processes) — log: $TB/logs/e2e-$name.log"
  mkdir -p "$TB/reports/$name"
  local progress=""
  if [ "$name" = direct ]; then
    # The passes so far, every minute: a run stopped before its end still leaves its list.
    ( while sleep 60; do write_partial "$TB/logs/e2e-$name.log"; done ) &
    progress=$!
  fi
  HOME="$TB/home" PADDOCK_E2E_POD_START="${PADDOCK_E2E_POD_START:-90s}" timeout 10800 nice -n 5 "$GINKGO" --procs="$PROCS" --timeout=3h --no-color -v \
    --focus="$focus" --skip="$SKIP" --json-report="$TB/reports/$name.json" \
    "$E2E" -- --kubeconfig="$kc" --provider=skeleton --kubectl-path="$KUBECTL" \
    --report-dir="$TB/reports/$name" >"$TB/logs/e2e-$name.log" 2>&1 || rc=$?
  if [ -n "$progress" ]; then kill "$progress" 2>/dev/null || true; write_partial "$TB/logs/e2e-$name.log"; fi
  log "$name: ginkgo exited $rc after $((SECONDS - t0)) s; $(grep -E '^(Ran|FAIL!|SUCCESS!)' "$TB/logs/e2e-$name.log" | tr '\n' ' ')"
  echo "$((SECONDS - t0))" > "$TB/reports/$name.seconds"
}

# The names of the tests that passed in a JSON report, one a line (the baseline cache); with
# --ran, the names of every test that ran (passed or not).
passed_names() { # passed_names REPORT.json [--ran]
  python3 - "$1" "${2:-}" <<'PY'
import json, sys
ran = sys.argv[2] == "--ran"
for suite in json.load(open(sys.argv[1])):
    for sp in suite.get("SpecReports") or []:
        if sp.get("LeafNodeType") == "It" and (sp.get("State") == "passed" or (ran and sp.get("State") != "skipped")):
            print((" ".join(sp.get("ContainerHierarchyTexts") or []) + " " + sp.get("LeafNodeText", "")).strip())
PY
}

# A direct run of part of the suite (an explicit --focus or --skip) updates the complete
# baseline for the tests it ran only: their old entries go, their passes come in; the others
# keep theirs. Without a complete baseline it writes none (a part is not the whole).
update_baseline() { # update_baseline REPORT.json
  [ -s "$BASELINE" ] || { log "direct run of a part of the suite: no complete baseline to update"; return 0; }
  passed_names "$1" --ran > "$TB/reports/direct.ran"
  { echo "# direct passes of conformance.sh --full; updated $(date -u '+%Y-%m-%d %H:%M UTC') by a run of $(wc -l < "$TB/reports/direct.ran") tests (focus $FOCUS, skip $SKIP)"
    grep -v '^#' "$BASELINE" | grep -vxF -f "$TB/reports/direct.ran"
    passed_names "$1"; } > "$BASELINE.tmp" && mv -f "$BASELINE.tmp" "$BASELINE"
  log "direct run of a part of the suite: baseline updated for the $(wc -l < "$TB/reports/direct.ran") tests it ran ($(grep -vc '^#' "$BASELINE") passes in all)"
}

# The names of the tests a ginkgo -v log shows passed so far, one a line: each finished spec
# is a line `• [12.3 seconds]` (`• [FAILED] ...` otherwise), then its full text with `[It] `
# after the containers and its labels in brackets at the end.
passed_names_log() { # passed_names_log LOG
  python3 - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
for i, l in enumerate(lines[:-1]):
    if re.fullmatch(r"• \[[0-9.]+ seconds\]", l):
        name = re.sub(r" \[[^\[\]]*\]$", "", lines[i + 1]).replace(" [It] ", " ", 1)
        print(name.strip())
PY
}

# The direct passes so far, to $PARTIAL (written whole, then moved: never half a list).
write_partial() { # write_partial LOG
  [ -s "$1" ] || return 0
  { echo "# direct passes so far of conformance.sh --full (a run under way or stopped), $(date -u '+%Y-%m-%d %H:%M UTC'), focus $FOCUS, skip $SKIP"
    passed_names_log "$1"; } > "$PARTIAL.tmp" && mv -f "$PARTIAL.tmp" "$PARTIAL"
}

# A focus that selects exactly the named tests (regexp-quoted, one alternation).
focus_of_names() { # focus_of_names FILE
  # Go regexp (RE2) syntax: only its metacharacters are escaped (Python's re.escape would also
  # escape spaces, which RE2 refuses).
  python3 -c 'import re,sys; q=lambda s: re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", s); print("|".join(q(l.strip()) for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")))' "$1"
}

start_paddock() {
  local bin port url certs pid deadline
  if [ -n "${PADDOCK_BIN:-}" ]; then
    bin="$PADDOCK_BIN"
  else
    log "building paddock (cargo build -p paddock)"
    (cd "$ROOT" && cargo build -q -p paddock --bin paddock) || die "cargo build -p paddock failed"
    bin="${CARGO_TARGET_DIR:-$ROOT/target}/debug/paddock"
  fi
  [ -x "$bin" ] || die "no paddock binary at $bin"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  url="https://127.0.0.1:$port"; certs="$TB/paddock/certs"; mkdir -p "$TB/paddock"
  # paddock's admission webhook (the per-tenant policy; docs/security.md "Tenant policy") with
  # the test bed's apiserver client certificate (up.sh).
  ADMISSION_ARGS=()
  if [ -n "${ADMISSION_CLIENT_CA:-}" ]; then
    ADMISSION_ARGS=(--admission-listen 127.0.0.1:0 --admission-client-ca "$ADMISSION_CLIENT_CA"
      --admission-client-name "$ADMISSION_CLIENT_NAME")
  fi
  "$bin" ca init --dir "$certs" --server-url "$url" >"$TB/logs/paddock-ca-init.log" 2>&1 \
    || { cat "$TB/logs/paddock-ca-init.log" >&2; die "paddock ca init failed"; }
  setsid env -u PADDOCK_ETCD_ENDPOINTS "$bin" serve --listen "127.0.0.1:$port" --certs-dir "$certs" \
    --upstream-kubeconfig "$ADMIN_KUBECONFIG" --store etcd --etcd-endpoints "$PADDOCK_ETCD_ENDPOINTS" \
    --etcd-prefix /paddock-conformance --public-url "$url" --log-format json "${ADMISSION_ARGS[@]}" \
    </dev/null >"$TB/logs/paddock.log" 2>&1 &
  pid=$!
  echo "paddock $pid $(awk '{sub(/.*\) /,""); print $20}' "/proc/$pid/stat")" >> "$TB/pids"  # down.sh stops it
  deadline=$((SECONDS + 60))
  until [ "$(curl -s --max-time 3 --cacert "$certs/ca.crt" --cert "$certs/admin.crt" --key "$certs/admin.key" "$url/readyz" 2>/dev/null)" = ok ]; do
    kill -0 "$pid" 2>/dev/null || { tail -n 40 "$TB/logs/paddock.log" >&2; die "paddock exited during startup"; }
    [ $SECONDS -lt $deadline ] || { tail -n 40 "$TB/logs/paddock.log" >&2; die "paddock not ready after 60 s"; }
    sleep 0.2
  done
  log "paddock ready at $url"
  "$bin" tenant create confor --kubeconfig "$certs/admin.kubeconfig" >"$TB/tenant.kubeconfig" 2>"$TB/logs/paddock-tenant-create.log" \
    || { cat "$TB/logs/paddock-tenant-create.log" >&2; die "paddock tenant create confor failed"; }
  # The platform settings a conformance tenant needs, each lifting one isolation default
  # (docs/testing.md "Conformance"): NodePort and LoadBalancer Services (ResourceQuota "capture
  # the life of a service"), Endpoints and EndpointSlices written by the tenant (the full
  # suite's sig-network tests), and with --full the platform grants of the shared built-in
  # kinds the suite writes (docs/security.md "Platform grants").
  local patch='{"services":{"allowNodePort":true,"allowLoadBalancer":true,"endpoints":"Unrestricted"}'
  [ ${#ADMISSION_ARGS[@]} -gt 0 ] || patch='{'
  if [ "$FULL" = 1 ]; then
    [ "$patch" = '{' ] || patch="$patch,"
    # and every priority class (SchedulerPreemption's critical pod names system-cluster-critical),
    # and namespaces labelled privileged (SchedulerPredicates' hostPort pods; docs/security.md
    # "Pod security")
    patch="$patch\"platformKinds\":[$PLATFORM_KINDS],\"scheduling\":{\"allowedPriorityClasses\":[\"*\"]},\"podSecurity\":\"privileged\""
  fi
  patch="$patch}"
  if [ "$patch" != '{}' ]; then
    "$bin" tenant policy confor --kubeconfig "$certs/admin.kubeconfig" \
      --patch "$patch" >"$TB/logs/paddock-tenant-policy.log" 2>&1 \
      || { cat "$TB/logs/paddock-tenant-policy.log" >&2; die "paddock tenant policy confor failed"; }
  fi
}

log "focus: $FOCUS"
log "skip:  $SKIP"
PADDOCK_FOCUS="$FOCUS"
if [ "$FULL" = 1 ] && [ "$MODE" != direct ] && [ -n "$DIRECT_LOG" ]; then
  passed_names_log "$DIRECT_LOG" > "$TB/reports/direct.passed"
  log "direct run: the passes in $DIRECT_LOG ($(wc -l < "$TB/reports/direct.passed") tests; a partial list)"
elif [ "$FULL" = 1 ] && [ "$MODE" != direct ] && [ "$REFRESH" = 0 ] && [ -s "$BASELINE" ]; then
  log "direct run: the cached baseline $BASELINE ($(grep -vc '^#' "$BASELINE") tests passed; --refresh-baseline to rerun)"
  grep -v '^#' "$BASELINE" > "$TB/reports/direct.passed"
elif [ "$FULL" = 1 ] && [ "$MODE" != direct ] && [ "$REFRESH" = 0 ] && [ -s "$PARTIAL" ]; then
  log "direct run: no complete baseline; the partial one $PARTIAL ($(grep -vc '^#' "$PARTIAL") tests passed so far)"
  grep -v '^#' "$PARTIAL" > "$TB/reports/direct.passed"
elif [ "$MODE" != paddock ]; then
  run_suite direct "$ADMIN_KUBECONFIG"
  if [ "$FULL" = 1 ] && [ -s "$TB/reports/direct.json" ] && { [ "$FOCUS" != '\[Conformance\]' ] || [ -n "$SKIP_EXTRA" ]; }; then
    update_baseline "$TB/reports/direct.json"
    if [ -s "$BASELINE" ]; then grep -v '^#' "$BASELINE" > "$TB/reports/direct.passed"
    else passed_names "$TB/reports/direct.json" > "$TB/reports/direct.passed"; fi
  elif [ "$FULL" = 1 ] && [ -s "$TB/reports/direct.json" ]; then
    { echo "# direct passes of conformance.sh --full, $(date -u '+%Y-%m-%d %H:%M UTC'), focus $FOCUS, skip $SKIP"
      passed_names "$TB/reports/direct.json"; } > "$BASELINE.tmp" && mv -f "$BASELINE.tmp" "$BASELINE"
    rm -f "$PARTIAL"
    grep -v '^#' "$BASELINE" > "$TB/reports/direct.passed"
  fi
fi
# Through paddock, the full run takes only what passed directly (the rest cannot pass anyway).
if [ "$FULL" = 1 ] && [ -s "$TB/reports/direct.passed" ]; then
  if [ "$FOCUS" != '\[Conformance\]' ]; then
    # An explicit --focus picks among the direct passes (e.g. `--focus '\[Serial\]'`).
    grep -E -- "$FOCUS" "$TB/reports/direct.passed" > "$TB/reports/direct.focused" || true
    mv -f "$TB/reports/direct.focused" "$TB/reports/direct.passed"
    log "--focus: $(wc -l < "$TB/reports/direct.passed") of the direct passes match"
  fi
  PADDOCK_FOCUS="$(focus_of_names "$TB/reports/direct.passed")"
fi
if [ "$MODE" != direct ]; then
  # A subshell: if paddock does not come up, the report still gets the direct results.
  if ( start_paddock ); then
    if [ -n "$TENANT_SETUP" ]; then
      log "applying $TENANT_SETUP as the tenant (--tenant-setup)"
      "$KUBECTL" --kubeconfig "$TB/tenant.kubeconfig" apply -f "$TENANT_SETUP" >&2 || log "tenant setup failed"
    fi
    run_suite paddock "$TB/tenant.kubeconfig" "$PADDOCK_FOCUS"
  else
    log "paddock did not start (log: $TB/logs/paddock.log); no run through paddock"
  fi
fi

mkdir -p "$(dirname "$REPORT")"
rdir="$(dirname "$REPORT")"
cp "$TB"/reports/*.json "$rdir/" 2>/dev/null || true
mkdir -p "$rdir/logs"; cp "$TB"/logs/*.log "$rdir/logs/" 2>/dev/null || true
rc=0
python3 - "$TB/reports" "$REPORT" "$MODE" "$FOCUS" "$SKIP" "$((SECONDS - T0))" "$TENANT_SETUP" <<'PY' || rc=$?
import json, os, sys, datetime
rdir, report, mode, focus, skip, total, setup = sys.argv[1:8]
def load(name):
    p = os.path.join(rdir, name + ".json")
    cached = os.path.join(rdir, name + ".passed")
    if not os.path.exists(p) and os.path.exists(cached):
        # the cached baseline of --full: only the names of what passed directly
        return {l.strip(): "passed" for l in open(cached) if l.strip()}
    if not os.path.exists(p):
        return None
    res = {}
    for suite in json.load(open(p)):
        for sp in suite.get("SpecReports") or []:
            if sp.get("LeafNodeType") != "It":
                # a failed BeforeSuite fails the whole run: report it as such
                if sp.get("State") not in ("passed", "skipped", None):
                    res["[" + sp.get("LeafNodeType", "?") + "]"] = sp.get("State")
                continue
            name = " ".join(sp.get("ContainerHierarchyTexts") or []) + " " + sp.get("LeafNodeText", "")
            if sp.get("State") == "skipped":
                continue
            res[name.strip()] = sp.get("State")
    return res
def secs(name):
    try: return int(open(os.path.join(rdir, name + ".seconds")).read())
    except Exception: return None
runs = {n: load(n) for n in ("direct", "paddock")}
out = ["# Conformance report", "",
       f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
       f"- mode: {mode}; total wall time {total} s",
       f"- focus: `{focus}`", f"- skip: `{skip}`"]
if setup:
    out.append(f"- **diagnostic run**: `{setup}` was applied as the tenant before the paddock run")
out.append("")
for n, r in runs.items():
    if r is None:
        out.append(f"## {n}: not run" if mode in ("both", n) else f"## {n}: not requested")
        out.append("")
        continue
    passed = sorted(k for k, v in r.items() if v == "passed")
    failed = sorted(k for k, v in r.items() if v != "passed")
    out.append(f"## {n}: {len(passed)} passed of {len(r)} run ({secs(n)} s)")
    out.append("")
    if failed:
        out.append("Not passed:")
        out += [f"- {k} — {r[k]}" for k in failed]
        out.append("")
status = 0
d, p = runs["direct"], runs["paddock"]
if d is not None and p is not None:
    diff = sorted(k for k, v in d.items() if v == "passed" and p.get(k) != "passed")
    out.append(f"## Pass directly, fail through paddock: {len(diff)}")
    out.append("")
    out += [f"- {k} — {p.get(k, 'not run')}" for k in diff] or ["(none)"]
    out.append("")
    status = 1 if diff else 0
elif mode == "both":
    status = 1
else:
    r = d if d is not None else p
    status = 0 if r and all(v == "passed" for v in r.values()) else 1
open(report, "w").write("\n".join(out))
print("\n".join(out))
sys.exit(status)
PY
log "report: $REPORT (exit $rc)"
exit "$rc"
