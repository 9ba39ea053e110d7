#!/usr/bin/env python3
"""Runs the end-to-end test binaries (tests/e2e/tests/*.rs) in lanes, two at a time by default.

Why: each binary starts its own control plane and spends most of its time waiting on it, so one
binary keeps about one of this machine's two cores busy; two side by side halve the wall time of
the suite. Binaries that assert timing bounds (replica propagation within 1 s, fault recovery
under load, fairness ratios, per-core serving) run alone after the others, so that a neighbour
never eats into a bound they measure.

Each binary's output is written to <log-dir>/<name>.log and printed whole when it ends (never
interleaved), after a `Running` line in cargo's format; the exit status is non-zero when any
binary failed. Durations go to <log-dir>/durations.json and order the next run longest first
(a lane's tail is then short); a run without that file goes in name order.

Usage: e2e-lanes.py [--lanes N] [--log-dir DIR] [--only NAME,...] [-- TEST-ARGS...]
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "paddock-e2e"

# Binaries whose assertions include a time bound or a ratio measured under load: run alone.
ALONE = {
    "fair_queue",  # per-tenant fairness ratios under load
    "fairshare",  # 429 shares and latency of a quiet tenant beside a noisy one
    "front_door",  # HTTP/2 front door under load: p99 and refused streams
    "gateway",  # a tenant and a revocation visible on a second replica within 1 s
    "ha",  # < 1 % failed requests while replicas and etcd members die
    "leader",  # the Lease taken over and a drift repaired within 20 s of a kill
    "metering",  # a restamp within 5 s
    "resync_watch",  # drift repaired within 5 s, and within 20 s of the leader's SIGKILL
    "serve_threads",  # per-core serving: throughput ratios
    "upstream_faults",  # recovery times after the apiserver freezes and restarts
}


def test_binaries():
    """(name, executable) of every integration-test binary of the e2e package, built if needed."""
    cmd = ["cargo", "test", "-p", PACKAGE, "--tests", "--no-run", "--locked",
           "--message-format=json-render-diagnostics"]
    out = subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
    found = []
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        target = msg.get("target", {})
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and target.get("kind") == ["test"] and msg.get("package_id", "").find(PACKAGE) >= 0:
            found.append((target["name"], msg["executable"]))
    return sorted(set(found))


class Runner:
    def __init__(self, log_dir, test_args):
        self.log_dir = log_dir
        self.test_args = test_args
        self.print_lock = threading.Lock()
        self.results = {}  # name -> (ok, seconds)

    def run(self, name, exe):
        log = self.log_dir / f"{name}.log"
        env = dict(os.environ, CARGO_MANIFEST_DIR=str(ROOT / "tests" / "e2e"))
        t0 = time.monotonic()
        with open(log, "w") as f:
            code = subprocess.run([exe, *self.test_args], cwd=ROOT / "tests" / "e2e", env=env,
                                  stdout=f, stderr=subprocess.STDOUT).returncode
        took = time.monotonic() - t0
        self.results[name] = (code == 0, took)
        with self.print_lock:
            print(f"     Running tests/{name}.rs ({exe}) [{took:.0f} s]", flush=True)
            sys.stdout.write(log.read_text(errors="replace"))
            if code != 0:
                print(f"error: test failed, to rerun pass `--test {name}` (exit {code})")
            sys.stdout.flush()

    def lanes(self, jobs, n):
        queue = list(jobs)
        lock = threading.Lock()

        def lane():
            while True:
                with lock:
                    if not queue:
                        return
                    name, exe = queue.pop(0)
                self.run(name, exe)

        threads = [threading.Thread(target=lane) for _ in range(max(1, n))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lanes", type=int, default=int(os.environ.get("PADDOCK_E2E_LANES", "2")))
    ap.add_argument("--log-dir", type=Path, default=ROOT / "target" / "e2e-logs")
    ap.add_argument("--only", default="", help="comma-separated binary names")
    ap.add_argument("test_args", nargs="*")
    args = ap.parse_args()

    args.log_dir.mkdir(parents=True, exist_ok=True)
    durations_file = args.log_dir / "durations.json"
    try:
        durations = json.loads(durations_file.read_text())
    except (OSError, ValueError):
        durations = {}

    binaries = test_binaries()
    if args.only:
        wanted = set(args.only.split(","))
        binaries = [b for b in binaries if b[0] in wanted]
    longest_first = sorted(binaries, key=lambda b: -durations.get(b[0], 0))
    shared = [b for b in longest_first if b[0] not in ALONE]
    alone = [b for b in longest_first if b[0] in ALONE]

    t0 = time.monotonic()
    runner = Runner(args.log_dir, args.test_args)
    runner.lanes(shared, args.lanes)
    runner.lanes(alone, 1)
    wall = time.monotonic() - t0

    durations.update({name: round(s, 1) for name, (_, s) in runner.results.items()})
    durations_file.write_text(json.dumps(durations, indent=1, sort_keys=True) + "\n")
    failed = sorted(name for name, (ok, _) in runner.results.items() if not ok)
    serial = sum(s for _, s in runner.results.values())
    print(f"\ne2e: {len(runner.results)} binaries in {wall:.0f} s wall "
          f"({serial:.0f} s one after another; {args.lanes} lanes, {len(alone)} alone)"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
