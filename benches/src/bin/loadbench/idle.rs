//! The idle part: paddock's memory with many idle watches open.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Result;

use crate::client::{Api, Cred, Proto};
use crate::load::Procs;
use crate::procstat;
use crate::{Args, Report, scale};

pub(crate) async fn idle_bench(
    args: &Args,
    tenant: &Cred,
    procs: Procs,
    report: &mut Report,
) -> Result<()> {
    let limit = procstat::nofile_limit() as usize;
    // paddock holds one upstream connection per watch (the long-running pool is HTTP/1.1)
    // plus the client connections; leave room for everything else.
    let fits = limit.saturating_sub(500);
    let warm = Api::new(tenant, Proto::H2)?;
    for _ in 0..20 {
        warm.get_drain(
            "/api/v1/namespaces/bench/configmaps/small",
            "application/json",
        )
        .await?;
    }
    let base = scale::settled_rss(procs.paddock, Duration::from_secs(10)).await;
    eprintln!("  paddock RSS before: {:.1} MiB", base as f64 / 1024.0);
    let mut watches = scale::IdleWatches::new(100);
    let mut rows = Vec::new();
    for &target in &args.idle_watches {
        if target > fits {
            let n = format!(
                "{target} idle watches need about {target} file descriptors in paddock; the limit is {limit} (raise `ulimit -n`)"
            );
            eprintln!("  skipped: {n}");
            report.notes.push(n);
            continue;
        }
        let took = watches.open_to(tenant, "watch", target, 64).await?;
        let rss = scale::settled_rss(procs.paddock, Duration::from_secs(20)).await;
        let per = (rss.saturating_sub(base)) as f64 * 1024.0 / target as f64;
        eprintln!(
            "  {} watches open (in {:.1} s): paddock RSS {:.1} MiB, {:.1} KiB per watch, {} fds",
            watches.len(),
            took.as_secs_f64(),
            rss as f64 / 1024.0,
            per / 1024.0,
            procs.paddock.fds()
        );
        rows.push((target, rss, per, procs.paddock.fds()));
    }
    if let Some((n, _, per, _)) = rows.last() {
        report.goal(
            "paddock RSS per idle watch",
            "<= 32 KB",
            format!(
                "{:.1} KiB at {n} watches{}",
                per / 1024.0,
                rows.iter()
                    .rev()
                    .skip(1)
                    .map(|(n, _, per, _)| format!(" ({:.1} KiB at {n})", per / 1024.0))
                    .collect::<String>()
            ),
            Some(*per <= 32.0 * 1024.0),
        );
    }
    let d = &mut report.details;
    let _ = writeln!(
        d,
        "### Idle watches through one replica (HTTP/2 clients, 100 watches per connection)\n"
    );
    let _ = writeln!(
        d,
        "paddock RSS before the watches: {:.1} MiB\n\n| open watches | paddock RSS | per watch | paddock fds |\n|---|---|---|---|",
        base as f64 / 1024.0
    );
    for (n, rss, per, fds) in &rows {
        let _ = writeln!(
            d,
            "| {n} | {:.1} MiB | {:.1} KiB | {fds} |",
            *rss as f64 / 1024.0,
            per / 1024.0
        );
    }
    let _ = writeln!(d);
    drop(watches);
    Ok(())
}
