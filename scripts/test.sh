#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit tests, fuzz corpora as regression tests, and the
# end-to-end suite against a real control plane. Installs or builds what it needs (cache-aware):
#   - protoc (Debian package, for etcd-client's build) when missing
#   - haproxy (Debian package, the load balancer of the HA test, tests/e2e/tests/ha.rs) when missing
#   - python3-venv (Debian package) when missing: the client suite (tests/e2e/tests/clients.rs)
#     makes a venv with the `kubernetes` Python client from PyPI under target/
#   - the real node's Debian packages (scripts/install-node.sh): containerd, runc, CNI plugins,
#     iptables, socat, buildah, busybox-static
#   - the control plane and real node binaries (tests/testbed/build.sh --node --e2e), the node's
#     images (tests/testbed/images.sh) and the tests' tools (tests/testbed/tools.sh: helm,
#     h2spec, pyprom); cached outside the repo, built in the background while Rust builds
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
step() { echo; echo "=== $* ($((SECONDS - t0)) s)"; }

step "prerequisites"
if ! command -v protoc >/dev/null 2>&1 || [ ! -f /usr/include/google/protobuf/descriptor.proto ]; then
  echo "installing protoc (protobuf-compiler, libprotobuf-dev) for etcd-client's build"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq protobuf-compiler libprotobuf-dev >/dev/null
fi
bash scripts/install-haproxy.sh
bash scripts/install-node.sh
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  echo "installing python3-venv for the Python client of tests/e2e/tests/clients.rs"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
fi
command -v go >/dev/null 2>&1 || { echo "Go is required to build the test control plane" >&2; exit 1; }

step "control plane, node, images and test tools: built in the background while Rust builds (cached in ${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed})"
# On a new machine these Go builds spend much of their time fetching modules from the proxy
# (about a third of two cores busy): overlapping them with the Rust build below takes most of
# their wall time off a cold run. With warm caches every step is a quick cache hit. The tests
# would build the same tools on first use (each build holds a lock: no double work).
mkdir -p target
go_log=target/testbed-build.log
# A session of its own, so that the whole tree (go build and all) stops if this script ends first.
# The tools build beside the control plane (their module downloads overlap too); the images
# need build.sh's metrics-server.
setsid bash -c '
  set -e
  ( for tool in helm h2spec pyprom; do bash tests/testbed/tools.sh "$tool" >/dev/null; done ) &
  tools=$!
  bash tests/testbed/build.sh --node --e2e
  bash tests/testbed/images.sh
  wait "$tools"
' >"$go_log" 2>&1 </dev/null &
go_builds=$!
trap 'kill -- -"$go_builds" 2>/dev/null || true' EXIT

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "no module cycles inside a crate"
python3 scripts/module-cycles.py

step "build"
cargo build --workspace --all-targets --locked

step "waiting for the background builds (log: $go_log)"
if ! wait "$go_builds"; then
  tail -n 60 "$go_log" >&2
  echo "the test bed's builds failed; the whole log: $go_log" >&2
  exit 1
fi
grep -E 'took|cached|built' "$go_log" | tail -n 20 || true

step "tests (unit, property, fuzz corpora, end-to-end)"
# The etcd store tests must not skip in CI.
export PADDOCK_REQUIRE_ETCD=1
# anyhow errors without a backtrace: CI shows only the tail of a failing test, and a test's
# own failure list must be in it (panics keep RUST_BACKTRACE).
export RUST_LIB_BACKTRACE=0
set +e
cargo test --workspace --locked --no-fail-fast 2>&1 | tee target/test-output.txt
status=${PIPESTATUS[0]}
set -e
passed=$(grep -Eo '^test result: .* ([0-9]+) passed' target/test-output.txt | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(grep -E '^test result: ' target/test-output.txt | grep -Eo '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
echo
echo "paddock: $passed passed, $failed failed"
echo "total wall time: $((SECONDS - t0)) s"
exit "$status"
