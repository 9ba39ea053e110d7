#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit tests, fuzz corpora as regression tests, and the
# end-to-end suite against a real control plane. Installs or builds what it needs (cache-aware):
#   - protoc (Debian package, for etcd-client's build) when missing
#   - haproxy (Debian package, the load balancer of the HA test, tests/e2e/tests/ha.rs) when missing
#   - python3-venv (Debian package) when missing: the client suite (tests/e2e/tests/clients.rs)
#     makes a venv with the `kubernetes` Python client from PyPI under target/
#   - the real node's Debian packages (scripts/install-node.sh): containerd, runc, CNI plugins,
#     iptables, socat, buildah, busybox-static
#   - the control plane and real node binaries (tests/testbed/build.sh --node) and the node's
#     images (tests/testbed/images.sh); cached outside the repo
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

step "control plane binaries (cached in ${PADDOCK_TESTBED_CACHE:-$HOME/.cache/paddock-testbed})"
bash tests/testbed/build.sh --node
bash tests/testbed/images.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "no module cycles inside a crate"
python3 scripts/module-cycles.py

step "build"
cargo build --workspace --all-targets --locked

step "tests (unit, property, fuzz corpora, end-to-end)"
# The etcd store tests must not skip in CI.
export PADDOCK_REQUIRE_ETCD=1
# anyhow errors without a backtrace: CI shows only the tail of a failing test, and a test's
# own failure list must be in it (panics keep RUST_BACKTRACE).
export RUST_LIB_BACKTRACE=0
set +e
# Unit, property, fuzz-corpus and doc tests of every crate (and the e2e crate's own), then the
# end-to-end binaries two at a time (scripts/e2e-lanes.py: those that measure a time bound run
# alone; each binary's output printed whole).
cargo test --workspace --exclude paddock-e2e --locked --no-fail-fast 2>&1 | tee target/test-output.txt
status=${PIPESTATUS[0]}
cargo test -p paddock-e2e --lib --locked 2>&1 | tee -a target/test-output.txt
[ "${PIPESTATUS[0]}" = 0 ] || status=1
cargo test -p paddock-e2e --doc --locked 2>&1 | tee -a target/test-output.txt
[ "${PIPESTATUS[0]}" = 0 ] || status=1
# The tenant DNS's plugin (deploy/dns, Go; its modules are those build.sh --node fetched).
(cd deploy/dns && GOTOOLCHAIN=local go test ./...) 2>&1 | tee -a target/test-output.txt
[ "${PIPESTATUS[0]}" = 0 ] || status=1
step "end-to-end binaries (${PADDOCK_E2E_LANES:-2} lanes)"
python3 scripts/e2e-lanes.py 2>&1 | tee -a target/test-output.txt
[ "${PIPESTATUS[0]}" = 0 ] || status=1
set -e
passed=$(grep -Eo '^test result: .* ([0-9]+) passed' target/test-output.txt | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
failed=$(grep -E '^test result: ' target/test-output.txt | grep -Eo '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
echo
echo "paddock: $passed passed, $failed failed"
echo "total wall time: $((SECONDS - t0)) s"
exit "$status"
