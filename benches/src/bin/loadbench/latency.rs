//! The load part: every workload, protocol and concurrency, directly and through paddock.

use std::fmt::Write as _;

use anyhow::Result;

use crate::client::{Api, Cred, Proto};
use crate::load::{self, PairStats, Procs, Side, Work};
use crate::setup::{count_for, sides};
use crate::stats::{ms, ratio};
use crate::{Args, NOT_RUN, Report, TENANT, floor, list, short, truncate};

pub(crate) async fn load_bench(
    args: &Args,
    admin: &Cred,
    tenant: &Cred,
    floor: Option<&floor::Floor>,
    procs: Procs,
    peak_hwm: &mut u64,
    report: &mut Report,
) -> Result<()> {
    let min_list = args.pods * 1000;
    let mut results: Vec<(Work, Proto, usize, PairStats)> = Vec::new();
    for proto in args.protos()? {
        let (direct, paddock) = sides(admin, tenant, proto)?;
        let floor_side = floor
            .map(|f| {
                Ok::<_, anyhow::Error>(Side {
                    api: Api::new(&f.cred, proto)?,
                    prefix: format!("{TENANT}-"),
                })
            })
            .transpose()?;
        for work in [Work::Get, Work::CreateDelete, Work::Table, Work::List] {
            let key = match work {
                Work::Get => "get",
                Work::CreateDelete => "create",
                Work::Table => "table",
                Work::List => "list",
            };
            if !args.works.iter().any(|w| w == key) {
                continue;
            }
            let levels = if work == Work::List {
                &args.list_concurrency
            } else {
                &args.concurrency
            };
            for &conc in levels {
                let n = count_for(work, conc, args.quick);
                eprintln!(
                    "== {} · {} · concurrency {conc} · {n} requests × {} pairs",
                    work.name(),
                    proto.name(),
                    args.reps
                );
                let tag = format!("{}{}{conc}", proto as u8, work as u8);
                let st = load::pairs(
                    work,
                    &direct,
                    &paddock,
                    floor_side.as_ref(),
                    conc,
                    n,
                    args.reps,
                    procs,
                    min_list,
                    peak_hwm,
                    &tag,
                )
                .await;
                results.push((work, proto, conc, st));
            }
        }
    }

    // Goals.
    let pick = |w: Work, c: usize| -> Vec<(Proto, &PairStats)> {
        results
            .iter()
            .filter(|(rw, _, rc, _)| *rw == w && *rc == c)
            .map(|(_, p, _, s)| (*p, s))
            .collect()
    };
    let fmt = |v: &[(Proto, f64)]| -> String {
        if v.is_empty() {
            return NOT_RUN.to_owned();
        }
        v.iter()
            .map(|(p, x)| format!("{} {}", short(*p), ratio(*x)))
            .collect::<Vec<_>>()
            .join(" · ")
    };
    // A goal no run measured is neither met nor missed.
    let met = |v: &[(Proto, f64)], ok: fn(f64) -> bool| -> Option<bool> {
        (!v.is_empty()).then(|| v.iter().all(|(_, x)| ok(*x)))
    };
    let lowest = *args.concurrency.iter().min().unwrap_or(&1);
    let highest = *args.concurrency.iter().max().unwrap_or(&64);
    let get1 = pick(Work::Get, lowest);
    let v: Vec<(Proto, f64)> = get1.iter().map(|(p, s)| (*p, s.p50_ratio())).collect();
    report.goal(
        "small GET, p50 latency ratio (concurrency 1)",
        "<= 1.15",
        fmt(&v),
        met(&v, |x| x <= 1.15),
    );
    let v: Vec<(Proto, f64)> = get1.iter().map(|(p, s)| (*p, s.p99_ratio())).collect();
    report.goal(
        "small GET, p99 latency ratio (concurrency 1)",
        "<= 1.30",
        fmt(&v),
        met(&v, |x| x <= 1.30),
    );
    let v: Vec<(Proto, f64)> = pick(Work::Get, highest)
        .iter()
        .map(|(p, s)| (*p, s.rps_ratio()))
        .collect();
    report.goal(
        "requests per second at 64 concurrent (small GET), vs direct",
        ">= 0.85",
        fmt(&v),
        met(&v, |x| x >= 0.85),
    );
    for (w, label) in [
        (
            Work::CreateDelete,
            "requests per second at 64 concurrent (CREATE+DELETE)",
        ),
        (Work::Table, "requests per second at 64 concurrent (Table)"),
    ] {
        let v: Vec<(Proto, f64)> = pick(w, highest)
            .iter()
            .map(|(p, s)| (*p, s.rps_ratio()))
            .collect();
        report.goal(label, ">= 0.85", fmt(&v), met(&v, |x| x >= 0.85));
    }
    let list1 = pick(
        Work::List,
        *args.list_concurrency.iter().min().unwrap_or(&1),
    );
    let v: Vec<(Proto, f64)> = list1.iter().map(|(p, s)| (*p, s.mean_ratio())).collect();
    report.goal(
        "LIST 5,000 pods, wall time ratio (concurrency 1)",
        "<= 1.10",
        fmt(&v),
        met(&v, |x| x <= 1.10),
    );
    let extra = list1
        .iter()
        .filter_map(|(_, s)| s.max_extra_rss_kib())
        .max();
    report.goal(
        "LIST 5,000 pods, paddock's extra RSS during the request",
        "<= 8 MB",
        extra.map_or_else(
            || NOT_RUN.to_owned(),
            |kib| {
                format!(
                    "{:.1} MiB (largest of all runs at concurrency 1)",
                    kib as f64 / 1024.0
                )
            },
        ),
        extra.map(|kib| (kib as f64) * 1024.0 <= 8e6),
    );
    let cpu_get: Vec<(Proto, f64)> = pick(Work::Get, highest)
        .iter()
        .map(|(p, s)| (*p, s.paddock_cpu_per_k()))
        .collect();
    report.goal(
        "paddock CPU seconds per 1,000 small GETs (concurrency 64)",
        "(reported)",
        cpu_get
            .iter()
            .map(|(p, x)| format!("{} {:.3}", short(*p), x))
            .collect::<Vec<_>>()
            .join(" · "),
        None,
    );

    // Details.
    let d = &mut report.details;
    let _ = writeln!(
        d,
        "### Load: direct (admin) vs through paddock (tenant), medians of {} alternating pairs\n",
        args.reps
    );
    let _ = writeln!(
        d,
        "Latencies in ms; ratios are medians of the per-pair ratios (pair values in brackets). CPU: seconds per 1,000 requests.\n"
    );
    let _ = writeln!(
        d,
        "| workload | proto | conc | direct p50 | paddock p50 | p50 ratio | direct p99 | paddock p99 | p99 ratio | direct req/s | paddock req/s | req/s ratio | paddock CPU | apiserver CPU direct / via paddock | errors |"
    );
    let _ = writeln!(
        d,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for (w, p, c, s) in &results {
        let (errs, first) = s.errors();
        let _ = writeln!(
            d,
            "| {} | {} | {c} | {} | {} | {} {} | {} | {} | {} {} | {:.0} | {:.0} | {} {} | {:.3} | {:.3} / {:.3} | {}{} |",
            w.name(),
            short(*p),
            ms(s.direct_p50()),
            ms(s.paddock_p50()),
            ratio(s.p50_ratio()),
            list(&s.p50_ratios()),
            ms(s.direct_p99()),
            ms(s.paddock_p99()),
            ratio(s.p99_ratio()),
            list(&s.p99_ratios()),
            s.direct_rps(),
            s.paddock_rps(),
            ratio(s.rps_ratio()),
            list(&s.rps_ratios()),
            s.paddock_cpu_per_k(),
            s.apiserver_cpu_per_k_direct(),
            s.apiserver_cpu_per_k_paddock(),
            errs,
            first
                .map(|e| format!(" ({})", truncate(&e, 120)))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(d);
    let mut rss_lines = Vec::new();
    for (w, p, c, s) in &results {
        if *w == Work::List
            && let Some(k) = s.max_extra_rss_kib()
        {
            rss_lines.push(format!(
                "{} concurrency {c}: {:.1} MiB",
                short(*p),
                k as f64 / 1024.0
            ));
        }
    }
    if !rss_lines.is_empty() {
        let _ = writeln!(
            d,
            "paddock's extra RSS during LIST runs (peak VmHWM minus VmRSS before the run): {}\n",
            rss_lines.join("; ")
        );
    }
    floor::details(d, &results);
    report.load = results;
    Ok(())
}
