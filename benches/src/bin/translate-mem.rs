//! Peak extra memory of the streaming rewriters against the `serde_json::Value` baseline.
//!
//! Linux only: reads VmHWM / VmRSS from /proc/self/status and resets the high-water mark
//! through /proc/self/clear_refs (a counting global allocator would need `unsafe`, which the
//! workspace forbids). Each measurement runs in a fresh process so the allocator's retained
//! pages from one run do not hide the next: `translate-mem list-stream`, `list-baseline`,
//! `watch-stream`, `watch-baseline`, or no argument to run all four as child processes.

use std::process::Command;

use paddock_benches::{
    baseline_list, baseline_watch, pod_list, pods_plan, run_rewriter, tenant_context, watch_stream,
};

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn measure(what: &str) {
    let ctx = tenant_context();
    let watch = what.starts_with("watch");
    let plan = pods_plan(&ctx, watch);
    let body = if watch {
        watch_stream(10_000)
    } else {
        pod_list(5_000)
    };
    // Baseline RSS with the input resident, high-water mark reset to it.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_kib("VmRSS:");
    let mut out_bytes = 0usize;
    match what {
        "list-stream" | "watch-stream" => {
            run_rewriter(&ctx, &plan, &body, 64 * 1024, &mut |o| out_bytes += o.len())
        }
        "list-baseline" => out_bytes = baseline_list(&body).len(),
        "watch-baseline" => out_bytes = baseline_watch(&body),
        other => panic!("unknown measurement {other}"),
    }
    let peak = status_kib("VmHWM:");
    println!(
        "{what}: input {:.1} MB, output {:.1} MB, peak extra memory {:.1} MB",
        body.len() as f64 / 1e6,
        out_bytes as f64 / 1e6,
        peak.saturating_sub(before) as f64 * 1024.0 / 1e6
    );
}

fn main() {
    match std::env::args().nth(1) {
        Some(what) => measure(&what),
        None => {
            let me = std::env::current_exe().unwrap_or_default();
            for what in [
                "list-stream",
                "list-baseline",
                "watch-stream",
                "watch-baseline",
            ] {
                let st = Command::new(&me).arg(what).status();
                if !st.is_ok_and(|s| s.success()) {
                    eprintln!("{what}: failed");
                }
            }
        }
    }
}
