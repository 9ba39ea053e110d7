#!/usr/bin/env bash
# The HA and upstream-fault end-to-end tests alone (they are also part of `make test`):
# three replicas on a three-member TLS etcd behind HAProxy under load (replica SIGKILL, rolling
# restart, etcd members down, propagation within 1 s), and the apiserver frozen, killed and
# restarted under load; and GOAWAYs from an apiserver with --goaway-chance. About 6 min. Installs haproxy when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-haproxy.sh
bash tests/testbed/build.sh
cargo test -p paddock-e2e --locked --test ha --test upstream_faults --test upstream_goaway -- --nocapture
