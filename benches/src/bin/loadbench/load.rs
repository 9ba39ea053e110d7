//! The load benchmark: the same workload directly against the apiserver (as the upstream admin)
//! and through paddock (as a tenant), alternating, with per-pair ratios.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use bytes::Bytes;
use http::Method;
use serde_json::json;
use tokio::task::JoinSet;

use crate::client::{Api, TABLE_ACCEPT};
use crate::procstat::Proc;
use crate::stats::{median, pct};

/// Which way a run goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    Direct,
    Paddock,
    /// Through the floor: HAProxy as a bare L7 hop (floor.rs).
    Floor,
    /// Through a second paddock replica running an older build (`--paddock-before`): the
    /// "before" of a before/after comparison in the same rounds (ab.rs).
    Before,
}

/// A client and how it names the tenant's namespaces (`foofoo-web` directly, `web` through
/// paddock).
#[derive(Clone)]
pub struct Side {
    pub api: Api,
    pub prefix: String,
}

impl Side {
    pub fn ns(&self, ns: &str) -> String {
        format!("{}{ns}", self.prefix)
    }
}

/// The processes whose CPU and memory are recorded.
#[derive(Clone, Copy)]
pub struct Procs {
    pub paddock: Proc,
    pub apiserver: Proc,
    /// HAProxy, when the floor is measured.
    pub floor: Option<Proc>,
    /// The "before" paddock replica, when `--paddock-before` is given.
    pub before: Option<Proc>,
}

/// One run: `ok` requests at a fixed concurrency.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub lat_ms: Vec<f64>,
    pub wall_s: f64,
    pub ok: usize,
    pub errors: usize,
    pub first_error: Option<String>,
    pub paddock_cpu_s: f64,
    pub apiserver_cpu_s: f64,
    /// HAProxy's CPU during the run (0 when the floor is not running).
    pub floor_cpu_s: f64,
    /// Paddock's peak RSS during the run minus its RSS before it (KiB), where measured.
    pub paddock_extra_rss_kib: Option<u64>,
}

impl Run {
    pub fn p50(&self) -> f64 {
        pct(&self.lat_ms, 50.0)
    }
    pub fn p99(&self) -> f64 {
        pct(&self.lat_ms, 99.0)
    }
    pub fn rps(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.ok as f64 / self.wall_s
        } else {
            f64::NAN
        }
    }
    pub fn mean_ms(&self) -> f64 {
        if self.lat_ms.is_empty() {
            f64::NAN
        } else {
            self.lat_ms.iter().sum::<f64>() / self.lat_ms.len() as f64
        }
    }
    /// CPU seconds per 1,000 requests.
    pub fn paddock_cpu_per_k(&self) -> f64 {
        per_k(self.paddock_cpu_s, self.ok)
    }
    pub fn apiserver_cpu_per_k(&self) -> f64 {
        per_k(self.apiserver_cpu_s, self.ok)
    }
    pub fn floor_cpu_per_k(&self) -> f64 {
        per_k(self.floor_cpu_s, self.ok)
    }
}

fn per_k(cpu: f64, n: usize) -> f64 {
    if n == 0 {
        f64::NAN
    } else {
        cpu / n as f64 * 1000.0
    }
}

/// Runs `f(0..n)` with `conc` workers (at most `limit` long); records latency of each call.
pub async fn run_load<F, Fut>(n: usize, conc: usize, limit: Duration, procs: Procs, f: F) -> Run
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let f = Arc::new(f);
    let next = Arc::new(AtomicUsize::new(0));
    let cpu0 = (
        procs.paddock.cpu_mark(),
        procs.apiserver.cpu_mark(),
        procs.floor.map(|p| p.cpu_mark()),
    );
    let start = Instant::now();
    let deadline = start + limit;
    let mut tasks = JoinSet::new();
    for _ in 0..conc.max(1) {
        let f = f.clone();
        let next = next.clone();
        tasks.spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0usize;
            let mut first = None;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n || Instant::now() > deadline {
                    break;
                }
                let t = Instant::now();
                match f(i).await {
                    Ok(()) => lat.push(t.elapsed().as_secs_f64() * 1000.0),
                    Err(e) => {
                        errors += 1;
                        if first.is_none() {
                            first = Some(format!("{e:#}"));
                        }
                    }
                }
            }
            (lat, errors, first)
        });
    }
    let mut run = Run::default();
    while let Some(r) = tasks.join_next().await {
        match r {
            Ok((lat, errors, first)) => {
                run.lat_ms.extend(lat);
                run.errors += errors;
                if run.first_error.is_none() {
                    run.first_error = first;
                }
            }
            Err(e) => {
                run.errors += 1;
                run.first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    run.wall_s = start.elapsed().as_secs_f64();
    run.ok = run.lat_ms.len();
    run.paddock_cpu_s = procs.paddock.cpu_secs_since(&cpu0.0);
    run.apiserver_cpu_s = procs.apiserver.cpu_secs_since(&cpu0.1);
    run.floor_cpu_s = procs
        .floor
        .zip(cpu0.2.as_ref())
        .map_or(0.0, |(p, mark)| p.cpu_secs_since(mark));
    run
}

/// The request workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Work {
    /// GET of a small ConfigMap.
    Get,
    /// LIST of the 5,000 pods.
    List,
    /// POST then DELETE of a ConfigMap (one sample = both).
    CreateDelete,
    /// `kubectl get pods`: a Table, first page of 500.
    Table,
}

impl Work {
    pub fn name(self) -> &'static str {
        match self {
            Work::Get => "GET small object",
            Work::List => "LIST 5,000 pods",
            Work::CreateDelete => "CREATE+DELETE ConfigMap",
            Work::Table => "kubectl get (Table, 500 rows)",
        }
    }

    /// One request (or pair of requests).
    pub async fn once(self, side: &Side, run_id: &str, i: usize, min_list: usize) -> Result<()> {
        match self {
            Work::Get => {
                let path = format!("/api/v1/namespaces/{}/configmaps/small", side.ns("bench"));
                side.api.get_drain(&path, "application/json").await?;
            }
            Work::List => {
                let path = format!("/api/v1/namespaces/{}/pods", side.ns("default"));
                let n = side.api.get_drain(&path, "application/json").await?;
                if n < min_list {
                    bail!("the list has {n} bytes, fewer than {min_list}");
                }
            }
            Work::Table => {
                let path = format!("/api/v1/namespaces/{}/pods?limit=500", side.ns("default"));
                side.api.get_drain(&path, TABLE_ACCEPT).await?;
            }
            Work::CreateDelete => {
                let ns = side.ns("bench");
                let name = format!("lb-{run_id}-{i}");
                let body = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": {"app": "loadbench"}},
                    "data": {"key": "value", "index": i.to_string()}
                });
                side.api
                    .ok(
                        Method::POST,
                        &format!("/api/v1/namespaces/{ns}/configmaps"),
                        Some(Bytes::from(body.to_string())),
                    )
                    .await?;
                side.api
                    .ok(
                        Method::DELETE,
                        &format!("/api/v1/namespaces/{ns}/configmaps/{name}"),
                        None,
                    )
                    .await?;
            }
        }
        Ok(())
    }
}

/// A pair of runs, direct and through paddock.
#[derive(Debug, Clone)]
pub struct Pair {
    pub direct: Run,
    pub paddock: Run,
    /// Through HAProxy, when the floor is measured (then a "pair" is a triple).
    pub floor: Option<Run>,
    /// Through the "before" paddock (its CPU in `paddock_cpu_s`), when it is measured.
    pub before: Option<Run>,
}

/// Summary of the pairs of one workload, protocol and concurrency.
#[derive(Debug, Clone)]
pub struct PairStats {
    pub pairs: Vec<Pair>,
    /// Paddock's extra RSS during its warm-up run (the first big LIST of its connection).
    pub warm_extra_rss_kib: Option<u64>,
}

impl PairStats {
    fn med(&self, f: impl Fn(&Pair) -> f64) -> f64 {
        median(&self.pairs.iter().map(f).collect::<Vec<_>>())
    }
    pub fn direct_p50(&self) -> f64 {
        self.med(|p| p.direct.p50())
    }
    pub fn direct_p99(&self) -> f64 {
        self.med(|p| p.direct.p99())
    }
    pub fn paddock_p50(&self) -> f64 {
        self.med(|p| p.paddock.p50())
    }
    pub fn paddock_p99(&self) -> f64 {
        self.med(|p| p.paddock.p99())
    }
    pub fn direct_rps(&self) -> f64 {
        self.med(|p| p.direct.rps())
    }
    pub fn paddock_rps(&self) -> f64 {
        self.med(|p| p.paddock.rps())
    }
    pub fn p50_ratio(&self) -> f64 {
        self.med(|p| p.paddock.p50() / p.direct.p50())
    }
    pub fn p99_ratio(&self) -> f64 {
        self.med(|p| p.paddock.p99() / p.direct.p99())
    }
    pub fn rps_ratio(&self) -> f64 {
        self.med(|p| p.paddock.rps() / p.direct.rps())
    }
    /// Mean time per request (the wall time of a LIST at concurrency 1).
    pub fn mean_ratio(&self) -> f64 {
        self.med(|p| p.paddock.mean_ms() / p.direct.mean_ms())
    }
    pub fn p50_ratios(&self) -> Vec<f64> {
        self.pairs
            .iter()
            .map(|p| p.paddock.p50() / p.direct.p50())
            .collect()
    }
    pub fn p99_ratios(&self) -> Vec<f64> {
        self.pairs
            .iter()
            .map(|p| p.paddock.p99() / p.direct.p99())
            .collect()
    }
    pub fn rps_ratios(&self) -> Vec<f64> {
        self.pairs
            .iter()
            .map(|p| p.paddock.rps() / p.direct.rps())
            .collect()
    }
    pub fn paddock_cpu_per_k(&self) -> f64 {
        self.med(|p| p.paddock.paddock_cpu_per_k())
    }
    pub fn apiserver_cpu_per_k_direct(&self) -> f64 {
        self.med(|p| p.direct.apiserver_cpu_per_k())
    }
    pub fn apiserver_cpu_per_k_paddock(&self) -> f64 {
        self.med(|p| p.paddock.apiserver_cpu_per_k())
    }
    /// Whether these pairs include the floor.
    pub fn has_floor(&self) -> bool {
        self.pairs.iter().any(|p| p.floor.is_some())
    }
    fn med_floor(&self, f: impl Fn(&Pair, &Run) -> f64) -> f64 {
        median(
            &self
                .pairs
                .iter()
                .filter_map(|p| p.floor.as_ref().map(|fl| f(p, fl)))
                .collect::<Vec<_>>(),
        )
    }
    pub fn floor_p50(&self) -> f64 {
        self.med_floor(|_, f| f.p50())
    }
    pub fn floor_p99(&self) -> f64 {
        self.med_floor(|_, f| f.p99())
    }
    pub fn floor_rps(&self) -> f64 {
        self.med_floor(|_, f| f.rps())
    }
    pub fn floor_rps_ratio(&self) -> f64 {
        self.med_floor(|p, f| f.rps() / p.direct.rps())
    }
    pub fn floor_cpu_per_k(&self) -> f64 {
        self.med_floor(|_, f| f.floor_cpu_per_k())
    }
    /// Added p50 latency (ms) over direct, median of the per-pair differences.
    pub fn floor_added_p50(&self) -> f64 {
        self.med_floor(|p, f| f.p50() - p.direct.p50())
    }
    pub fn paddock_added_p50(&self) -> f64 {
        self.med(|p| p.paddock.p50() - p.direct.p50())
    }
    pub fn direct_mean(&self) -> f64 {
        self.med(|p| p.direct.mean_ms())
    }
    pub fn paddock_mean(&self) -> f64 {
        self.med(|p| p.paddock.mean_ms())
    }
    pub fn floor_mean(&self) -> f64 {
        self.med_floor(|_, f| f.mean_ms())
    }
    pub fn max_extra_rss_kib(&self) -> Option<u64> {
        self.pairs
            .iter()
            .filter_map(|p| p.paddock.paddock_extra_rss_kib)
            .chain(self.warm_extra_rss_kib)
            .max()
    }
    pub fn errors(&self) -> (usize, Option<String>) {
        let mut n = 0;
        let mut first = None;
        for p in &self.pairs {
            for r in [
                Some(&p.direct),
                Some(&p.paddock),
                p.floor.as_ref(),
                p.before.as_ref(),
            ]
            .into_iter()
            .flatten()
            {
                n += r.errors;
                if first.is_none() {
                    first.clone_from(&r.first_error);
                }
            }
        }
        (n, first)
    }
}

/// Runs one workload at one concurrency: a warm-up each way, then `reps` pairs (triples with
/// the floor), the order changing from pair to pair.
#[allow(clippy::too_many_arguments)]
pub async fn pairs(
    work: Work,
    direct: &Side,
    paddock: &Side,
    floor: Option<&Side>,
    before: Option<&Side>,
    conc: usize,
    n: usize,
    reps: usize,
    procs: Procs,
    min_list: usize,
    peak_hwm: &mut u64,
    tag: &str,
) -> PairStats {
    let limit = Duration::from_secs(120);
    let side_of = |w: Way| -> Option<Side> {
        match w {
            Way::Direct => Some(direct.clone()),
            Way::Paddock => Some(paddock.clone()),
            Way::Floor => floor.cloned(),
            Way::Before => before.cloned(),
        }
    };
    let mut warm_extra_rss_kib = None;
    for w in [Way::Direct, Way::Floor, Way::Before, Way::Paddock] {
        let Some(side) = side_of(w) else { continue };
        let id = format!("{tag}w{}", w as u8);
        let (warm, extra) = measured_run(
            work,
            side,
            id,
            conc.min(n),
            conc,
            limit,
            procs,
            min_list,
            w,
            peak_hwm,
        )
        .await;
        if extra.is_some() {
            warm_extra_rss_kib = extra;
        }
        if let Some(e) = warm.first_error {
            eprintln!("    warm-up {w:?}: {e}");
        }
    }
    let mut out = Vec::new();
    for rep in 0..reps {
        let mut runs: [Option<Run>; 4] = [None, None, None, None];
        for w in order(rep, floor.is_some(), before.is_some()) {
            let Some(side) = side_of(w) else { continue };
            let id = format!("{tag}r{rep}{}", w as u8);
            let (mut run, extra) =
                measured_run(work, side, id, n, conc, limit, procs, min_list, w, peak_hwm).await;
            run.paddock_extra_rss_kib = extra;
            if let Some(e) = &run.first_error {
                eprintln!("    {w:?}: {} errors, first: {e}", run.errors);
            }
            runs[w as usize] = Some(run);
        }
        let [d, p, f, b] = runs;
        let pair = Pair {
            direct: d.unwrap_or_default(),
            paddock: p.unwrap_or_default(),
            floor: f,
            before: b,
        };
        eprintln!("    pair {rep}: {}", pair.line());
        out.push(pair);
    }
    PairStats {
        pairs: out,
        warm_extra_rss_kib,
    }
}

/// The order of the ways in pair `rep`: direct and paddock alternate who goes first; the floor
/// moves through the three places; the "before" paddock goes right before paddock in even
/// pairs and right after it in odd ones, so before and after see the same moment of the
/// machine's load.
fn order(rep: usize, with_floor: bool, with_before: bool) -> Vec<Way> {
    let two = if rep.is_multiple_of(2) {
        [Way::Direct, Way::Paddock]
    } else {
        [Way::Paddock, Way::Direct]
    };
    let mut v = two.to_vec();
    if with_floor {
        v.insert(rep % 3, Way::Floor);
    }
    if with_before {
        let at = v.iter().position(|w| *w == Way::Paddock).unwrap_or(0);
        let at = if rep.is_multiple_of(2) { at } else { at + 1 };
        v.insert(at, Way::Before);
    }
    v
}

/// One run of `n` requests one way; paddock's extra RSS during it for a LIST through paddock.
#[allow(clippy::too_many_arguments)]
async fn measured_run(
    work: Work,
    side: Side,
    id: String,
    n: usize,
    conc: usize,
    limit: Duration,
    procs: Procs,
    min_list: usize,
    w: Way,
    peak_hwm: &mut u64,
) -> (Run, Option<u64>) {
    let measure_rss = w == Way::Paddock && work == Work::List;
    // The "before" replica's CPU is recorded in the run's paddock figures.
    let procs = match (w, procs.before) {
        (Way::Before, Some(b)) => Procs {
            paddock: b,
            ..procs
        },
        _ => procs,
    };
    let mut rss0 = 0;
    if measure_rss {
        *peak_hwm = (*peak_hwm).max(procs.paddock.hwm_kib());
        procs.paddock.reset_hwm();
        rss0 = procs.paddock.rss_kib();
    }
    let run = run_load(n, conc, limit, procs, move |i| {
        let side = side.clone();
        let id = id.clone();
        async move { work.once(&side, &id, i, min_list).await }
    })
    .await;
    let extra = measure_rss.then(|| {
        let hwm = procs.paddock.hwm_kib();
        *peak_hwm = (*peak_hwm).max(hwm);
        hwm.saturating_sub(rss0)
    });
    (run, extra)
}

impl Pair {
    fn line(&self) -> String {
        let (d, p) = (&self.direct, &self.paddock);
        let floor = self
            .floor
            .as_ref()
            .map(|f| {
                format!(
                    " | haproxy p50 {:.2} ms p99 {:.2} ms {:.0}/s (cpu {:.3} s/1k)",
                    f.p50(),
                    f.p99(),
                    f.rps(),
                    f.floor_cpu_per_k()
                )
            })
            .unwrap_or_default();
        let before = self
            .before
            .as_ref()
            .map(|b| {
                format!(
                    " | before p50 {:.2} ms {:.0}/s (cpu {:.3} s/1k)",
                    b.p50(),
                    b.rps(),
                    b.paddock_cpu_per_k()
                )
            })
            .unwrap_or_default();
        format!(
            "direct p50 {:.2} ms p99 {:.2} ms {:.0}/s{floor}{before} | paddock p50 {:.2} ms p99 {:.2} ms {:.0}/s (cpu {:.3} s/1k){}",
            d.p50(),
            d.p99(),
            d.rps(),
            p.p50(),
            p.p99(),
            p.rps(),
            p.paddock_cpu_per_k(),
            p.paddock_extra_rss_kib
                .map(|k| format!(", extra RSS {:.1} MiB", k as f64 / 1024.0))
                .unwrap_or_default()
        )
    }
}
