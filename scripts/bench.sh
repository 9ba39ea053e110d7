#!/usr/bin/env bash
# The benchmark set (docs/performance.md): builds paddock and the load harness in release mode,
# starts a local control plane and paddock on 127.0.0.1, runs the end-to-end load benchmark
# (directly vs through paddock, alternating) and the scale benchmarks, and prints the goals
# table with the measured values (also written to target/bench/report.md). The load part
# also runs each workload through the floor, HAProxy as a bare TLS-terminating L7 hop
# (benches/src/bin/loadbench/floor.rs; `--no-floor` leaves it out): the report opens with
# direct, HAProxy and paddock side by side (issue 19).
#
#   scripts/bench.sh                 # everything (about 25-35 min on 2 cores)
#   scripts/bench.sh --quick         # small counts, to try the harness (a few minutes)
#   scripts/bench.sh --only load,watch --reps 5
#   BENCH_TRANSLATE=1 scripts/bench.sh   # also the criterion translation benchmark
#
# Other flags: target/release/loadbench --help. These are measurements, not tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# 10,000 idle watches need about 10,000 file descriptors in paddock (and in the apiserver).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "open files limit: $(ulimit -n); load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

target="${CARGO_TARGET_DIR:-target}"
cargo build --release --locked -p paddock --bin paddock -p paddock-benches --bin loadbench >&2

if [ "${BENCH_TRANSLATE:-0}" = 1 ]; then
  cargo bench --locked -p paddock-benches --bench translate >&2
fi

export PADDOCK_BIN="$PWD/$target/release/paddock"
case "$target" in /*) PADDOCK_BIN="$target/release/paddock" ;; esac
exec "${PADDOCK_BIN%/paddock}/loadbench" "$@"
