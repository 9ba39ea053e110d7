//! The watch part: event latency with many watchers, directly and through paddock.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::Method;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::client::{Api, Cred, Proto};
use crate::load::Procs;
use crate::objects::{put_configmap, rv_of};
use crate::setup::sides;
use crate::stats::{median, ms, pct};
use crate::{Args, Report, TENANT, short};

pub(crate) async fn watch_bench(
    args: &Args,
    admin: &Cred,
    tenant: &Cred,
    procs: Procs,
    report: &mut Report,
) -> Result<()> {
    let writer = Api::new(admin, Proto::H2)?;
    let writer_ns = format!("{TENANT}-watch");
    let gap = Duration::from_millis(20);
    let mut rows = Vec::new();
    let mut added_all = Vec::new();
    for proto in args.protos()? {
        let (direct, paddock) = sides(admin, tenant, proto)?;
        eprintln!(
            "== watch fan-out · {} · {} watchers × {} events × {} pairs",
            proto.name(),
            args.watchers,
            args.events,
            args.reps
        );
        let mut added = Vec::new();
        let mut pairs = Vec::new();
        for rep in 0..args.reps {
            let order = if rep % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            let mut d = None;
            let mut pd = None;
            for is_direct in order {
                let side = if is_direct { &direct } else { &paddock };
                let r = watch_fanout(
                    &side.api,
                    &side.ns("watch"),
                    &writer,
                    &writer_ns,
                    args.watchers,
                    args.events,
                    gap,
                    procs,
                )
                .await?;
                if let Some(e) = &r.error {
                    eprintln!("    error: {e}");
                }
                if is_direct {
                    d = Some(r);
                } else {
                    pd = Some(r);
                }
            }
            let (Some(d), Some(pd)) = (d, pd) else {
                continue;
            };
            eprintln!(
                "    pair {rep}: direct p50 {:.2} p99 {:.2} ms (missing {}) | paddock p50 {:.2} p99 {:.2} ms (missing {}) | added p99 {:.2} ms",
                d.p50(),
                d.p99(),
                d.missing,
                pd.p50(),
                pd.p99(),
                pd.missing,
                pd.p99() - d.p99()
            );
            added.push(pd.p99() - d.p99());
            pairs.push((d, pd));
        }
        let m = median(&added);
        if proto == Proto::H2 {
            report.watch_added_h2 = Some(m);
        }
        added_all.push((proto, m));
        rows.push((proto, pairs, added));
    }
    report.goal(
        "watch event delivery, p99 added latency",
        "<= 2 ms",
        added_all
            .iter()
            .map(|(p, x)| format!("{} {} ms", short(*p), ms(*x)))
            .collect::<Vec<_>>()
            .join(" · "),
        Some(added_all.iter().all(|(_, x)| *x <= 2.0)),
    );
    let d = &mut report.details;
    let _ = writeln!(
        d,
        "### Watch fan-out: {} watchers, {} events each ({} ms apart), written directly; latency from the write's response to the event's arrival\n",
        args.watchers,
        args.events,
        gap.as_millis()
    );
    let _ = writeln!(
        d,
        "| proto | direct p50 | direct p99 | paddock p50 | paddock p99 | added p99 (median of pairs) | pairs (added p99) | events missing | paddock CPU s per 1,000 events delivered |"
    );
    let _ = writeln!(d, "|---|---|---|---|---|---|---|---|---|");
    for (proto, pairs, added) in &rows {
        let med = |f: &dyn Fn(&(WatchRun, WatchRun)) -> f64| {
            median(&pairs.iter().map(f).collect::<Vec<_>>())
        };
        let missing: usize = pairs.iter().map(|(a, b)| a.missing + b.missing).sum();
        let _ = writeln!(
            d,
            "| {} | {} | {} | {} | {} | {} | {} | {missing} | {:.3} |",
            short(*proto),
            ms(med(&|p| p.0.p50())),
            ms(med(&|p| p.0.p99())),
            ms(med(&|p| p.1.p50())),
            ms(med(&|p| p.1.p99())),
            ms(median(added)),
            added.iter().map(|x| ms(*x)).collect::<Vec<_>>().join(", "),
            med(&|p| p.1.paddock_cpu_s / (p.1.lat_ms.len().max(1)) as f64 * 1000.0),
        );
    }
    let _ = writeln!(d);
    Ok(())
}

// ---- one watch fan-out run -----------------------------------------------------------------

/// One watch fan-out run: `watchers` watches of the ConfigMaps of namespace `watch`, then
/// `events` updates of one ConfigMap written directly (the same writer either way), `gap`
/// apart. Latency of an event at a watcher = arrival - the moment the write's response came
/// back (negative when the event overtakes the response).
#[derive(Debug, Clone, Default)]
pub struct WatchRun {
    pub lat_ms: Vec<f64>,
    pub expected: usize,
    pub missing: usize,
    pub error: Option<String>,
    pub paddock_cpu_s: f64,
}

impl WatchRun {
    pub fn p50(&self) -> f64 {
        pct(&self.lat_ms, 50.0)
    }
    pub fn p99(&self) -> f64 {
        pct(&self.lat_ms, 99.0)
    }
}

#[allow(clippy::too_many_arguments)]
pub async fn watch_fanout(
    watchers: &Api,
    watch_ns: &str,
    writer: &Api,
    writer_ns: &str,
    n_watchers: usize,
    events: usize,
    gap: Duration,
    procs: Procs,
) -> Result<WatchRun> {
    // Start after the current state: no initial events.
    let rv = put_configmap(writer, writer_ns, "ticker", json!({"n": "0"})).await?;
    let cpu0 = procs.paddock.cpu_mark();
    let path = format!(
        "/api/v1/namespaces/{watch_ns}/configmaps?watch=1&resourceVersion={rv}&fieldSelector=metadata.name%3Dticker&timeoutSeconds=300"
    );
    let mut tasks = JoinSet::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(n_watchers.max(1));
    for _ in 0..n_watchers {
        let api = watchers.clone();
        let path = path.clone();
        let ready = ready_tx.clone();
        tasks.spawn(async move {
            let resp = api
                .send(
                    Method::GET,
                    &path,
                    None,
                    "application/json",
                    "application/json",
                )
                .await?;
            if !resp.status().is_success() {
                let s = resp.status();
                let b = resp.into_body().collect().await?.to_bytes();
                bail!("watch: {s}: {}", String::from_utf8_lossy(&b));
            }
            let _ = ready.send(()).await;
            let mut body = resp.into_body();
            let mut buf: Vec<u8> = Vec::new();
            let mut got: Vec<(u64, Instant)> = Vec::with_capacity(events);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
            while got.len() < events {
                let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                    Ok(Some(f)) => f.context("watch body")?,
                    Ok(None) | Err(_) => break,
                };
                let at = Instant::now();
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                buf.extend_from_slice(&data);
                while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=nl).collect();
                    let v: Value = serde_json::from_slice(&line).context("a watch event")?;
                    if let Some(rv) = v["object"]["metadata"]["resourceVersion"]
                        .as_str()
                        .and_then(|s| s.parse().ok())
                    {
                        got.push((rv, at));
                    }
                }
            }
            Ok::<_, anyhow::Error>(got)
        });
    }
    drop(ready_tx);
    let mut ready = 0;
    while ready < n_watchers {
        match tokio::time::timeout(Duration::from_secs(60), ready_rx.recv()).await {
            Ok(Some(())) => ready += 1,
            _ => break,
        }
    }
    if ready < n_watchers {
        // Some watch failed: collect the error.
        while let Some(r) = tasks.join_next().await {
            if let Ok(Err(e)) = r {
                return Err(e);
            }
        }
        bail!("only {ready} of {n_watchers} watches started");
    }
    // Headers are out before the apiserver registers the watcher in every case; a short pause
    // keeps the first event from racing the registration.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut written: HashMap<u64, Instant> = HashMap::new();
    let patch_path = format!("/api/v1/namespaces/{writer_ns}/configmaps/ticker");
    for j in 1..=events {
        let body = json!({"data": {"n": j.to_string()}}).to_string();
        let resp = writer
            .send(
                Method::PATCH,
                &patch_path,
                Some(Bytes::from(body)),
                "application/merge-patch+json",
                "application/json",
            )
            .await?;
        let status = resp.status();
        let b = resp.into_body().collect().await?.to_bytes();
        let at = Instant::now();
        if !status.is_success() {
            bail!("patch: {status}: {}", String::from_utf8_lossy(&b));
        }
        let rv: u64 = rv_of(&b)?.parse().context("resourceVersion")?;
        written.insert(rv, at);
        tokio::time::sleep(gap).await;
    }
    let mut run = WatchRun {
        expected: n_watchers * events,
        ..WatchRun::default()
    };
    while let Some(r) = tasks.join_next().await {
        match r {
            Ok(Ok(got)) => {
                for (rv, at) in got {
                    if let Some(w) = written.get(&rv) {
                        let d = if at >= *w {
                            (at - *w).as_secs_f64()
                        } else {
                            -(*w - at).as_secs_f64()
                        };
                        run.lat_ms.push(d * 1000.0);
                    }
                }
            }
            Ok(Err(e)) => {
                run.error.get_or_insert_with(|| format!("{e:#}"));
            }
            Err(e) => {
                run.error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    run.missing = run.expected.saturating_sub(run.lat_ms.len());
    run.paddock_cpu_s = procs.paddock.cpu_secs_since(&cpu0);
    Ok(run)
}
