//! Before/after in one run (`--paddock-before BIN`): a second paddock replica, started from
//! an older build with the same certificates, store and tenants, measured in the same rounds
//! as the current paddock (load.rs places it next to paddock in every pair), so both see the
//! same moment of a shared machine's load. The figures to read are each side's CPU per
//! request (its own process) and throughput against direct in the same pair.

use std::fmt::Write as _;

use crate::floor::LoadResult;
use crate::load::{Pair, Run};
use crate::stats::{median, ratio};

fn med(pairs: &[Pair], f: impl Fn(&Pair, &Run) -> f64) -> f64 {
    median(
        &pairs
            .iter()
            .filter_map(|p| p.before.as_ref().map(|b| f(p, b)))
            .collect::<Vec<_>>(),
    )
}

fn med_after(pairs: &[Pair], f: impl Fn(&Pair) -> f64) -> f64 {
    median(
        &pairs
            .iter()
            .filter(|p| p.before.is_some())
            .map(f)
            .collect::<Vec<_>>(),
    )
}

/// The before/after table, or nothing when no pair measured the "before" paddock.
pub fn table(results: &[LoadResult], before_bin: &str) -> String {
    let mut out = String::new();
    let rows: Vec<&LoadResult> = results
        .iter()
        .filter(|(_, _, _, s)| s.pairs.iter().any(|p| p.before.is_some()))
        .collect();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "## Before/after in the same rounds (before: `{before_bin}`; medians over pairs)\n"
    );
    let _ = writeln!(
        out,
        "| workload | proto | conc | paddock CPU µs/req before → after | req/s vs direct before → after | p50 added ms before → after | apiserver CPU µs/req before → after |\n|---|---|---|---|---|---|---|"
    );
    for (w, proto, c, s) in rows {
        let cpu_b = med(&s.pairs, |_, b| b.paddock_cpu_per_k() * 1000.0);
        let cpu_a = med_after(&s.pairs, |p| p.paddock.paddock_cpu_per_k() * 1000.0);
        let rps_b = med(&s.pairs, |p, b| b.rps() / p.direct.rps());
        let rps_a = med_after(&s.pairs, |p| p.paddock.rps() / p.direct.rps());
        let p50_b = med(&s.pairs, |p, b| b.p50() - p.direct.p50());
        let p50_a = med_after(&s.pairs, |p| p.paddock.p50() - p.direct.p50());
        let api_b = med(&s.pairs, |_, b| b.apiserver_cpu_per_k() * 1000.0);
        let api_a = med_after(&s.pairs, |p| p.paddock.apiserver_cpu_per_k() * 1000.0);
        let _ = writeln!(
            out,
            "| {} | {} | {c} | {cpu_b:.0} → {cpu_a:.0} | {} → {} | {p50_b:+.2} → {p50_a:+.2} | {api_b:.0} → {api_a:.0} |",
            w.name(),
            proto.name(),
            ratio(rps_b),
            ratio(rps_a),
        );
    }
    let _ = writeln!(out);
    out
}

/// The flags of `args` an older `bin` accepts (`serve --help` names them), with their values:
/// an older build lacks the flags added since (`--template-sync-interval` before the
/// templates), and the comparison should still run. Every flag is `--name value`.
pub fn accepted_args(bin: &std::path::Path, args: &[String]) -> anyhow::Result<Vec<String>> {
    let help = std::process::Command::new(bin)
        .args(["serve", "--help"])
        .output()?;
    let help = String::from_utf8_lossy(&help.stdout);
    let mut kept = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next();
        let known = help
            .split(|c: char| c.is_whitespace() || c == ',' || c == '=' || c == '[')
            .any(|w| w == flag);
        if known {
            kept.push(flag.clone());
            kept.extend(value.cloned());
        } else {
            eprintln!("  before: {} does not know {flag}: left out", bin.display());
        }
    }
    Ok(kept)
}
