//! paddock's end-to-end benchmark set (issue 6): a real control plane on loopback and paddock
//! as a real process; the same workloads directly against the apiserver (as the upstream
//! admin) and through paddock (as tenant `foofoo`), alternating in one run; scale benchmarks.
//! Prints the goals table with the measured values and writes it, with the details, to
//! `<out>/report.md`. Bounded in count and time; everything on 127.0.0.1.
//!
//! `scripts/bench.sh` (`make bench`) builds paddock in release mode and runs this with
//! `PADDOCK_BIN` set. These are measurements, not tests: nothing here asserts a timing.

mod apf;
mod client;
mod floor;
mod gateway;
mod load;
mod noisy;
mod procstat;
mod scale;
mod stats;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use http::Method;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};
use serde_json::json;

use crate::client::{Api, Cred, Proto};
use crate::load::{PairStats, Procs, Side, Work};
use crate::procstat::Proc;
use crate::stats::{median, ms, pct, ratio};

const TENANT: &str = "foofoo";

#[derive(Parser, Debug)]
#[command(about = "paddock's end-to-end load and scale benchmarks against a local control plane")]
struct Args {
    /// Small counts everywhere (a few minutes; for trying the harness, not for figures).
    #[arg(long)]
    quick: bool,
    /// Parts to run (comma-separated): fanout, noisy, load, imp, watch, idle, tenants.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fanout,noisy,load,imp,watch,idle,tenants"
    )]
    only: Vec<String>,
    /// Noisy neighbour: seconds of tenant A's unbounded loop (B runs alone for half as long
    /// before and after).
    #[arg(long, default_value_t = 60)]
    noisy_seconds: u64,
    /// Noisy neighbour: tenant B's small GETs per second.
    #[arg(long, default_value_t = 20)]
    noisy_b_rate: u32,
    /// Noisy neighbour: tenant A's concurrent workers (each loops LIST, write, watch open).
    #[arg(long, default_value_t = 32)]
    noisy_a_workers: usize,
    /// Noisy neighbour: fair-share overrides for tenant A (`paddock tenant set-limits`), e.g.
    /// `readQPS=20,writeQPS=10`; default: the server's defaults.
    #[arg(long, value_delimiter = ',')]
    noisy_a_limits: Vec<String>,
    /// paddock's `--fair-queue-seats` (0 turns the tenant-fair work queue off; default:
    /// paddock's own, 8 per core).
    #[arg(long)]
    fair_queue_seats: Option<u32>,
    /// Workloads of the load part: get, create, table, list.
    #[arg(long, value_delimiter = ',', default_value = "get,create,table,list")]
    works: Vec<String>,
    /// Record a CPU profile of paddock during the load part (`perf record`, DWARF call graphs)
    /// into this file.
    #[arg(long)]
    perf: Option<PathBuf>,
    /// Record a CPU profile of kube-apiserver (its `/debug/pprof/profile`, read with the
    /// admin's certificate) for `--apiserver-pprof-seconds` from the start of the load part
    /// into this file; `go tool pprof -top FILE` reads it.
    #[arg(long)]
    apiserver_pprof: Option<PathBuf>,
    #[arg(long, default_value_t = 30)]
    apiserver_pprof_seconds: u64,
    /// Pairs (direct, paddock) per workload, protocol and concurrency.
    #[arg(long, default_value_t = 4)]
    reps: usize,
    /// Concurrency levels.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    concurrency: Vec<usize>,
    /// Concurrency levels of the big LIST. A tenant's LISTs go through API Priority and
    /// Fairness (the upstream admin's are exempt): 16 concurrent 5,000-pod LISTs of one
    /// tenant are answered 429 by a default kube-apiserver.
    #[arg(long, value_delimiter = ',', default_value = "1,4")]
    list_concurrency: Vec<usize>,
    /// Protocols: h2, h1.
    #[arg(long, value_delimiter = ',', default_value = "h2,h1")]
    protocols: Vec<String>,
    /// Pods in the big LIST.
    #[arg(long, default_value_t = 5000)]
    pods: usize,
    /// Watchers of the fan-out and events each receives.
    #[arg(long, default_value_t = 50)]
    watchers: usize,
    #[arg(long, default_value_t = 100)]
    events: usize,
    /// Open idle watches to measure paddock's RSS at (cumulative).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    idle_watches: Vec<usize>,
    /// Tenants created in a row.
    #[arg(long, default_value_t = 1000)]
    tenants: usize,
    /// Namespaces of the `get pods -A` tenant, and tenants in the cluster around it.
    #[arg(long, default_value_t = 100)]
    fanout_namespaces: usize,
    #[arg(long, default_value_t = 100)]
    fanout_tenants: usize,
    /// Where report.md goes.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Run with a debug build of paddock when PADDOCK_BIN is not set (figures meaningless).
    #[arg(long)]
    allow_debug: bool,
    /// paddock's `--worker-threads` (default: paddock's own, one per CPU).
    #[arg(long)]
    paddock_worker_threads: Option<u16>,
    /// Leave out the floor (HAProxy as a bare L7 hop, measured alongside direct and paddock
    /// in the load part).
    #[arg(long)]
    no_floor: bool,
}

impl Args {
    fn wants(&self, part: &str) -> bool {
        self.only.iter().any(|p| p == part || p == "all")
    }
    fn protos(&self) -> Result<Vec<Proto>> {
        self.protocols
            .iter()
            .map(|p| match p.as_str() {
                "h2" => Ok(Proto::H2),
                "h1" => Ok(Proto::H1),
                o => bail!("unknown protocol {o:?} (h2, h1)"),
            })
            .collect()
    }
}

/// What the goals table says of a figure that no run of this invocation measured.
const NOT_RUN: &str = "not measured in this run";

/// One line of the goals table.
struct Goal {
    figure: String,
    goal: &'static str,
    measured: String,
    met: Option<bool>,
}

#[derive(Default)]
struct Report {
    goals: Vec<Goal>,
    details: String,
    notes: Vec<String>,
    /// The load part's results, for the floor table.
    load: Vec<floor::LoadResult>,
    /// paddock's added watch p99 over HTTP/2 (ms).
    watch_added_h2: Option<f64>,
    /// Apiserver CPU s per 1,000 small GETs at the highest concurrency: the admin itself, the
    /// tenant identity impersonated by the admin (the decomposition).
    imp_cpu: Option<(f64, f64)>,
    /// The same impersonated by the admin, a least-privilege identity, and that without the
    /// explicit `system:authenticated` group (gateway.rs).
    gateway_cpu: Option<[f64; 3]>,
}

impl Report {
    fn goal(
        &mut self,
        figure: impl Into<String>,
        goal: &'static str,
        measured: String,
        met: Option<bool>,
    ) {
        self.goals.push(Goal {
            figure: figure.into(),
            goal,
            measured,
            met,
        });
    }

    fn table(&self) -> String {
        let mut s = String::from("| figure | goal | measured | met |\n|---|---|---|---|\n");
        for g in &self.goals {
            let met = match g.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "–",
            };
            let _ = writeln!(s, "| {} | {} | {} | {met} |", g.figure, g.goal, g.measured);
        }
        s
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    rt.block_on(run(args))
}

fn paddock_pid(cp: &ControlPlane) -> Result<Proc> {
    cp.live_pids()
        .into_iter()
        .rev()
        .find(|(n, _)| n == "paddock")
        .map(|(_, pid)| Proc { pid })
        .context("paddock's pid is not in the pids file")
}

async fn run(mut args: Args) -> Result<()> {
    if args.quick {
        args.reps = args.reps.min(2);
        args.pods = args.pods.min(500);
        args.watchers = args.watchers.min(10);
        args.events = args.events.min(20);
        args.idle_watches = vec![200];
        args.tenants = args.tenants.min(20);
        args.fanout_namespaces = args.fanout_namespaces.min(10);
        args.fanout_tenants = args.fanout_tenants.min(5);
        args.noisy_seconds = args.noisy_seconds.min(10);
    }
    if std::env::var_os("PADDOCK_BIN").is_none() && !args.allow_debug {
        bail!(
            "PADDOCK_BIN is not set: run scripts/bench.sh (make bench), which builds paddock in release mode, or pass --allow-debug"
        );
    }
    paddock_pki::install_crypto_provider();
    let started = Instant::now();
    let mut report = Report::default();
    let load_before = procstat::loadavg();
    eprintln!("load average before: {load_before}");

    eprintln!("== starting the control plane and paddock");
    let cp = ControlPlane::start().context("starting the control plane")?;
    let mut paddock_args: Vec<String> = args
        .paddock_worker_threads
        .map(|n| vec!["--worker-threads".to_owned(), n.to_string()])
        .unwrap_or_default();
    // The set-up raises the namespace quota of the `paddock-default` template upstream (as the
    // platform admin) for its 2,000+ pods; the template sync's drift repair would put it back
    // within a minute (docs/templates.md), so it runs hourly here.
    paddock_args.extend(["--template-sync-interval".to_owned(), "1h".to_owned()]);
    if let Some(n) = args.fair_queue_seats {
        paddock_args.extend(["--fair-queue-seats".to_owned(), n.to_string()]);
        report.notes.push(format!("paddock --fair-queue-seats {n}"));
    }
    let p = Paddock::start_with_args(&cp, StoreKind::Etcd, "paddock", &paddock_args)
        .context("starting paddock")?;
    let apiserver = cp
        .live_pids()
        .into_iter()
        .find(|(n, _)| n == "kube-apiserver")
        .map(|(_, pid)| Proc { pid })
        .context("kube-apiserver's pid")?;
    let mut procs = Procs {
        paddock: paddock_pid(&cp)?,
        apiserver,
        floor: None,
    };
    eprintln!(
        "  control plane in {:.0} s, paddock (pid {}) in {:.1} s",
        cp.startup.as_secs_f64(),
        procs.paddock.pid,
        p.startup.as_secs_f64()
    );
    let admin_cred = Cred::from_kubeconfig(&cp.admin_kubeconfig())?;
    let padmin_cred = Cred::from_kubeconfig(&p.admin_kubeconfig())?;
    let admin = Api::new(&admin_cred, Proto::H2)?;
    let padmin = Api::new(&padmin_cred, Proto::H2)?;
    let floor = if args.no_floor || !args.wants("load") {
        None
    } else {
        let f = floor::Floor::start(&cp, &admin_cred).context("starting HAProxy (the floor)")?;
        eprintln!(
            "  the floor: HAProxy (pid {}) at {}",
            f.proc.pid, f.cred.server
        );
        procs.floor = Some(f.proc);
        Some(f)
    };

    // ---- get pods -A among many tenants (first: "alone" needs an empty cluster) ----------
    if args.wants("fanout") {
        eprintln!(
            "== get pods -A: a tenant with {} namespaces, alone, then among {} tenants",
            args.fanout_namespaces, args.fanout_tenants
        );
        let r = fanout_bench(&args, &p, &admin, apiserver).await;
        match r {
            Ok((alone, among, detail)) => {
                let ratio = among / alone;
                report.goal(
                    "`get -A` with 100 namespaces among 100 tenants vs alone",
                    "<= 1.5x",
                    format!(
                        "{} (median {} ms vs {} ms; {} ns, {} tenants)",
                        stats::ratio(ratio),
                        ms(among),
                        ms(alone),
                        args.fanout_namespaces,
                        args.fanout_tenants
                    ),
                    Some(ratio <= 1.5),
                );
                report.details.push_str(&detail);
            }
            Err(e) => report.notes.push(format!("get -A benchmark failed: {e:#}")),
        }
    }

    // ---- noisy neighbour ----------------------------------------------------------------------
    if args.wants("noisy") {
        eprintln!("== noisy neighbour: tenant A unbounded, tenant B steady");
        let a = Cred::from_kubeconfig(&p.tenant(noisy::NOISY)?)?;
        if !args.noisy_a_limits.is_empty() {
            let mut cli = vec!["tenant", "set-limits", noisy::NOISY];
            cli.extend(args.noisy_a_limits.iter().map(String::as_str));
            p.cli(&cli)?;
            report.notes.push(format!(
                "tenant A's limits: {}",
                args.noisy_a_limits.join(",")
            ));
        }
        let b = Cred::from_kubeconfig(&p.tenant(noisy::QUIET)?)?;
        match noisy::run(
            &admin,
            &a,
            &b,
            procs,
            args.noisy_seconds,
            args.noisy_b_rate,
            args.noisy_a_workers,
        )
        .await
        {
            Ok((ratio, errors, detail)) => {
                report.goal(
                    "noisy neighbour: B's p99 with A's unbounded loop vs B alone",
                    "<= 1.2x, no errors for B",
                    format!("{} ({errors} errors for B)", stats::ratio(ratio)),
                    Some(ratio <= 1.2 && errors == 0),
                );
                report.details.push_str(&detail);
            }
            Err(e) => report
                .notes
                .push(format!("noisy neighbour benchmark failed: {e:#}")),
        }
    }

    // ---- load: direct vs paddock -----------------------------------------------------------
    let mut peak_hwm = 0u64;
    let need_load =
        args.wants("load") || args.wants("imp") || args.wants("watch") || args.wants("idle");
    let tenant_cred = Cred::from_kubeconfig(&p.tenant(TENANT)?)?;
    // The benchmark measures the hop, not the fair-share limiter (docs/fairshare.md): the
    // defaults (100 reads and 50 writes per second, 64 in flight, LISTs paged at 500, 256
    // watches) would answer most of the load with 429 and page the big LIST. The limiter's
    // checks still run on every request.
    p.cli(&[
        "tenant",
        "set-limits",
        TENANT,
        "readQPS=0",
        "writeQPS=0",
        "maxInflight=0",
        "maxWatches=0",
        "maxList=0",
        "maxConnections=0",
    ])
    .context("lifting the benchmark tenant's fair-share limits")?;
    if need_load {
        setup_tenant(&args, &admin, &tenant_cred).await?;
    }
    let perf = match &args.perf {
        Some(f) if args.wants("load") => Some(start_perf(f, procs.paddock)?),
        _ => None,
    };
    let pprof = match &args.apiserver_pprof {
        Some(f) if args.wants("load") || args.wants("imp") => {
            let api = Api::new(&admin_cred, Proto::H2)?;
            let (file, secs) = (f.clone(), args.apiserver_pprof_seconds);
            eprintln!(
                "  CPU profile of kube-apiserver for {secs} s into {}",
                file.display()
            );
            Some(tokio::spawn(async move {
                let path = format!("/debug/pprof/profile?seconds={secs}");
                match api.ok(Method::GET, &path, None).await {
                    Ok(b) => {
                        if let Err(e) = std::fs::write(&file, &b) {
                            eprintln!("  writing {}: {e}", file.display());
                        }
                    }
                    Err(e) => eprintln!("  kube-apiserver profile failed: {e:#}"),
                }
            }))
        }
        _ => None,
    };
    if args.wants("load") {
        load_bench(
            &args,
            &admin_cred,
            &tenant_cred,
            floor.as_ref(),
            procs,
            &mut peak_hwm,
            &mut report,
        )
        .await?;
    }
    if let Some(mut child) = perf {
        paddock_e2e::process::signal(child.id(), "INT");
        let _ = paddock_e2e::process::wait_timeout(&mut child, Duration::from_secs(60));
        let _ = child.kill();
        let _ = child.wait();
    }
    if args.wants("imp") {
        imp_bench(
            &args,
            &admin_cred,
            &tenant_cred,
            procs,
            &mut peak_hwm,
            &mut report,
        )
        .await?;
        gateway_part(
            &args,
            &cp,
            &admin_cred,
            &tenant_cred,
            procs,
            &mut peak_hwm,
            &mut report,
        )
        .await;
    }
    if let Some(task) = pprof {
        let _ = task.await;
    }
    if args.wants("watch") {
        watch_bench(&args, &admin_cred, &tenant_cred, procs, &mut report).await?;
    }
    peak_hwm = peak_hwm.max(procs.paddock.hwm_kib());
    if args.wants("load") || args.wants("watch") {
        report.goal(
            "paddock peak RSS during the load benchmark",
            "(reported)",
            format!("{:.1} MiB (VmHWM)", peak_hwm as f64 / 1024.0),
            None,
        );
    }

    // ---- idle watches ----------------------------------------------------------------------
    if args.wants("idle") {
        eprintln!("== idle watches through one replica (paddock restarted first)");
        match restart_paddock(&cp, &p).await {
            Ok(newp) => procs.paddock = newp,
            Err(e) => bail!("restarting paddock: {e:#}"),
        }
        if let Err(e) = idle_bench(&args, &tenant_cred, procs, &mut report).await {
            report.notes.push(format!("idle watch benchmark: {e:#}"));
            eprintln!("  failed: {e:#}");
        }
    }

    // ---- tenant creation -------------------------------------------------------------------
    if args.wants("tenants") {
        eprintln!("== creating {} tenants in a row", args.tenants);
        match scale::create_tenants(&padmin, "tc", args.tenants).await {
            Ok(lat) => {
                let (p50, p99) = (pct(&lat, 50.0), pct(&lat, 99.0));
                report.goal(
                    "tenant creation, p99",
                    "< 1 s",
                    format!(
                        "{} ms (p50 {} ms, max {} ms; {} tenants)",
                        ms(p99),
                        ms(p50),
                        ms(pct(&lat, 100.0)),
                        lat.len()
                    ),
                    Some(p99 < 1000.0),
                );
            }
            Err(e) => report.notes.push(format!("tenant creation failed: {e:#}")),
        }
    }

    // ---- report ----------------------------------------------------------------------------
    let load_after = procstat::loadavg();
    let mut out = String::new();
    if !report.load.is_empty() {
        let lowest = *args.concurrency.iter().min().unwrap_or(&1);
        let highest = *args.concurrency.iter().max().unwrap_or(&64);
        let _ = writeln!(
            out,
            "## Against the floor (issue 19): direct, HAProxy as a bare L7 hop, paddock — one run\n"
        );
        out.push_str(&floor::table(
            &report.load,
            lowest,
            highest,
            report.watch_added_h2,
        ));
        out.push_str(&floor::apiserver_rows(report.imp_cpu, report.gateway_cpu));
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "## Goals (ratio = through paddock / direct, same run)\n"
    );
    out.push_str(&report.table());
    let _ = writeln!(out, "\n## Machine and run\n");
    for (k, v) in procstat::machine() {
        let _ = writeln!(out, "- {k}: {v}");
    }
    let _ = writeln!(
        out,
        "- load average (1/5/15 min): {load_before} before, {load_after} after"
    );
    let _ = writeln!(
        out,
        "- run: {:.1} min; `loadbench {}`",
        started.elapsed().as_secs_f64() / 60.0,
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    for n in &report.notes {
        let _ = writeln!(out, "- note: {n}");
    }
    let _ = writeln!(out, "\n## Details\n");
    out.push_str(&report.details);
    std::fs::create_dir_all(&args.out).ok();
    let path = args.out.join("report.md");
    std::fs::write(&path, &out).with_context(|| format!("writing {}", path.display()))?;
    println!("{out}");
    eprintln!("written to {}", path.display());
    if let Some(f) = &floor {
        eprintln!("HAProxy's log (tail):\n{}", f.log_tail());
    }
    drop(floor);
    p.stop();
    drop(p);
    drop(cp);
    Ok(())
}

/// `perf record` of paddock (sampling the CPU clock: this machine kind has no hardware
/// counters), stopped with SIGINT after the load part.
fn start_perf(out: &std::path::Path, p: Proc) -> Result<std::process::Child> {
    let child = std::process::Command::new("perf")
        .args([
            "record",
            "-e",
            "cpu-clock",
            "-F",
            "2999",
            "--call-graph",
            "dwarf,32768",
            "-p",
        ])
        .arg(p.pid.to_string())
        .arg("-o")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting perf record")?;
    eprintln!(
        "  perf record of paddock (pid {}) into {}",
        p.pid,
        out.display()
    );
    Ok(child)
}

/// Namespaces `bench` and `watch`, ConfigMap `small`, and the pods of the LIST.
async fn setup_tenant(args: &Args, admin: &Api, tenant_cred: &Cred) -> Result<()> {
    eprintln!("== set-up: tenant {TENANT}, namespaces, {} pods", args.pods);
    let tenant = Api::new(tenant_cred, Proto::H2)?;
    for ns in ["bench", "watch"] {
        load::tenant_namespace(&tenant, ns).await?;
    }
    load::put_configmap(
        &tenant,
        "bench",
        "small",
        json!({"greeting": "hello", "size": "small"}),
    )
    .await?;
    // paddock gives every tenant namespace a count quota (500 pods, 1,000 ConfigMaps): the
    // platform admin raises it for the benchmark's namespaces.
    for ns in ["default", "bench", "watch"] {
        raise_quota(admin, &format!("{TENANT}-{ns}")).await?;
    }
    load::create_pods(
        admin,
        &format!("{TENANT}-default"),
        "web-5d8fc7b9",
        args.pods,
        32,
    )
    .await?;
    let b = admin
        .get_drain(
            &format!("/api/v1/namespaces/{TENANT}-default/pods"),
            "application/json",
        )
        .await?;
    eprintln!(
        "  the LIST is {:.1} MB ({:.0} bytes per pod)",
        b as f64 / 1e6,
        b as f64 / args.pods.max(1) as f64
    );
    Ok(())
}

/// Raises paddock's count quota of an upstream namespace (as the upstream admin).
async fn raise_quota(admin: &Api, ns: &str) -> Result<()> {
    let path = format!("/api/v1/namespaces/{ns}/resourcequotas/paddock-tenant-limits");
    let body = json!({"spec": {"hard": {"pods": "100000", "configmaps": "100000"}}}).to_string();
    let resp = admin
        .send(
            Method::PATCH,
            &path,
            Some(bytes::Bytes::from(body)),
            "application/merge-patch+json",
            "application/json",
        )
        .await?;
    match resp.status() {
        s if s.is_success() || s == http::StatusCode::NOT_FOUND => Ok(()),
        s => bail!("raising the quota of {ns}: {s}"),
    }
}

fn sides(admin: &Cred, tenant: &Cred, proto: Proto) -> Result<(Side, Side)> {
    Ok((
        Side {
            api: Api::new(admin, proto)?,
            prefix: format!("{TENANT}-"),
        },
        Side {
            api: Api::new(tenant, proto)?,
            prefix: String::new(),
        },
    ))
}

fn count_for(work: Work, conc: usize, quick: bool) -> usize {
    let n = match (work, conc) {
        (Work::Get, 1) => 1000,
        (Work::Get, c) if c <= 16 => 3000,
        (Work::Get, _) => 5000,
        (Work::CreateDelete, 1) => 300,
        (Work::CreateDelete, c) if c <= 16 => 800,
        (Work::CreateDelete, _) => 1200,
        (Work::Table, 1) => 40,
        (Work::Table, c) if c <= 16 => 96,
        (Work::Table, _) => 192,
        (Work::List, 1) => 6,
        (Work::List, c) => 4 * c,
    };
    if quick { (n / 10).max(conc.min(n)) } else { n }
}

async fn load_bench(
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

async fn watch_bench(
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
                let r = load::watch_fanout(
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
        let med = |f: &dyn Fn(&(load::WatchRun, load::WatchRun)) -> f64| {
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

/// Stops paddock (TERM, by its pid) and starts it again with the same settings: a fresh
/// process for memory figures.
async fn restart_paddock(cp: &ControlPlane, p: &Paddock) -> Result<Proc> {
    let old = paddock_pid(cp)?;
    paddock_e2e::process::signal(old.pid, "TERM");
    let t0 = Instant::now();
    while p.exited().is_none() {
        if t0.elapsed() > Duration::from_secs(30) {
            bail!("paddock did not stop within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    p.ensure_running()?;
    let newp = paddock_pid(cp)?;
    if newp.pid == old.pid {
        bail!("paddock did not restart");
    }
    Ok(newp)
}

async fn idle_bench(args: &Args, tenant: &Cred, procs: Procs, report: &mut Report) -> Result<()> {
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

/// The `get pods -A` benchmark; returns (median alone, median among), details.
async fn fanout_bench(
    args: &Args,
    p: &Paddock,
    admin: &Api,
    apiserver: Proc,
) -> Result<(f64, f64, String)> {
    let id = "fanout";
    let cred = Cred::from_kubeconfig(&p.tenant(id)?)?;
    let tenant = Api::new(&cred, Proto::H2)?;
    // The tenant has its four default namespaces; the rest it creates itself.
    let extra = args.fanout_namespaces.saturating_sub(4);
    let t0 = Instant::now();
    for i in 0..extra {
        load::tenant_namespace(&tenant, &format!("ns-{i:03}")).await?;
    }
    eprintln!(
        "  {extra} namespaces created through paddock in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    // Two pods in each.
    let mut nss: Vec<String> = ["default", "kube-system", "kube-public", "kube-node-lease"]
        .iter()
        .map(|s| format!("{id}-{s}"))
        .collect();
    nss.extend((0..extra).map(|i| format!("{id}-ns-{i:03}")));
    for ns in &nss {
        load::create_pods(admin, ns, "app", 2, 2).await?;
    }
    let reps = if args.quick { 5 } else { 20 };
    let (alone, alone_t) = scale::get_all(&tenant, reps).await?;
    eprintln!(
        "  alone: list median {} ms, Table median {} ms",
        ms(median(&alone)),
        ms(median(&alone_t))
    );

    // The other tenants: each with its default namespaces (created by paddock) plus ten
    // more namespaces with a pod in each, created upstream directly with the tenant label.
    let others = args.fanout_tenants.saturating_sub(1);
    let t0 = Instant::now();
    for t in 0..others {
        let tid = format!("ot{t:04}");
        let body = json!({"apiVersion": "paddock.io/v1alpha1", "kind": "Tenant", "metadata": {"name": tid}});
        let padmin = Api::new(&Cred::from_kubeconfig(&p.admin_kubeconfig())?, Proto::H2)?;
        let (status, b) = padmin
            .call(
                Method::POST,
                "/apis/paddock.io/v1alpha1/tenants",
                Some(bytes::Bytes::from(body.to_string())),
            )
            .await?;
        if !(status.is_success() || status == http::StatusCode::CONFLICT) {
            bail!("tenant {tid}: {status}: {}", String::from_utf8_lossy(&b));
        }
        let names: Vec<String> = (0..10).map(|i| format!("{tid}-x{i:02}")).collect();
        scale::upstream_tenant_namespaces(admin, &tid, names.clone(), 10).await?;
        for ns in &names {
            load::create_pods(admin, ns, "app", 1, 1).await?;
        }
    }
    eprintln!(
        "  {others} other tenants with 10 extra namespaces and a pod in each: {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    // Namespaces created behind paddock's back get their setup (RoleBinding, NetworkPolicy,
    // quota, pod-security label) from its periodic resync, up to 30 s later, and the
    // controllers and kwok are still busy with the new namespaces and pods: wait for both, so
    // that "among" measures the cluster's size, not its churn. (Measured before this wait,
    // a resync pass setting up a few hundred namespaces at once made `get -A` 1.9-2.2x.)
    let t_setup = Instant::now();
    loop {
        let body = admin
            .ok(
                Method::GET,
                "/api/v1/namespaces?labelSelector=paddock.io%2Ftenant",
                None,
            )
            .await?;
        let list: serde_json::Value = serde_json::from_slice(&body)?;
        let missing = list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|n| {
                        n["metadata"]["labels"]["pod-security.kubernetes.io/enforce"].is_null()
                    })
                    .count()
            })
            .unwrap_or(0);
        if missing == 0 {
            break;
        }
        if t_setup.elapsed() > Duration::from_secs(120) {
            bail!("{missing} tenant namespaces still without paddock's setup after 120 s");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    eprintln!(
        "  paddock's resync had set up every namespace after {:.0} s",
        t_setup.elapsed().as_secs_f64()
    );
    let quiet = settle(apiserver, Duration::from_secs(120)).await;
    eprintln!("  apiserver quiet after {:.0} s", quiet.as_secs_f64());
    let (among, among_t) = scale::get_all(&tenant, reps).await?;
    eprintln!(
        "  among {} tenants: list median {} ms, Table median {} ms",
        args.fanout_tenants,
        ms(median(&among)),
        ms(median(&among_t))
    );
    let mut d = String::new();
    let _ = writeln!(
        d,
        "### `get pods -A` of a tenant with {} namespaces (2 pods each), {reps} requests each\n",
        args.fanout_namespaces
    );
    let _ = writeln!(
        d,
        "| cluster | list p50 | list p99 | Table p50 | Table p99 |\n|---|---|---|---|---|"
    );
    for (label, l, t) in [
        ("the tenant alone".to_string(), &alone, &alone_t),
        (
            format!(
                "among {} tenants ({} namespaces more)",
                args.fanout_tenants,
                others * 14
            ),
            &among,
            &among_t,
        ),
    ] {
        let (l50, l99) = scale::summary(l);
        let (t50, t99) = scale::summary(t);
        let _ = writeln!(
            d,
            "| {label} | {} | {} | {} | {} |",
            ms(l50),
            ms(l99),
            ms(t50),
            ms(t99)
        );
    }
    let _ = writeln!(d);
    // The goal is about kubectl: the Table request.
    Ok((median(&alone_t), median(&among_t), d))
}

/// Waits until `p` has used less than a fifth of a core in each of three 2-s windows in a
/// row (at most `max`).
async fn settle(p: Proc, max: Duration) -> Duration {
    let t0 = Instant::now();
    let mut quiet_windows = 0;
    while t0.elapsed() < max && quiet_windows < 3 {
        let c0 = p.cpu_secs();
        tokio::time::sleep(Duration::from_secs(2)).await;
        if p.cpu_secs() - c0 < 0.4 {
            quiet_windows += 1;
        } else {
            quiet_windows = 0;
        }
    }
    t0.elapsed()
}

/// Where paddock's share is: the same requests sent directly by the admin, directly with the
/// Impersonate-* headers paddock sends (the apiserver's extra work for a tenant identity:
/// impersonation checks, the admission guard on writes, API Priority and Fairness), and
/// through paddock.
async fn imp_bench(
    args: &Args,
    admin: &Cred,
    tenant: &Cred,
    procs: Procs,
    peak_hwm: &mut u64,
    report: &mut Report,
) -> Result<()> {
    let proto = Proto::H2;
    let headers = tenant.impersonation_headers()?;
    let admin_side = Side {
        api: Api::new(admin, proto)?,
        prefix: format!("{TENANT}-"),
    };
    let imp_side = Side {
        api: Api::new(admin, proto)?.with_headers(headers),
        prefix: format!("{TENANT}-"),
    };
    let paddock_side = Side {
        api: Api::new(tenant, proto)?,
        prefix: String::new(),
    };
    let lowest = *args.concurrency.iter().min().unwrap_or(&1);
    let highest = *args.concurrency.iter().max().unwrap_or(&64);
    let d = &mut report.details;
    let _ = writeln!(
        d,
        "### Decomposition (HTTP/2): admin directly → the tenant's identity directly (admin certificate + paddock's Impersonate-* headers) → through paddock\n"
    );
    let _ = writeln!(
        d,
        "| workload | conc | p50 admin / as-tenant / paddock (ms) | as-tenant ÷ admin: p50, req/s | paddock ÷ as-tenant: p50, p99, req/s | apiserver CPU s/1k admin / as-tenant | paddock CPU s/1k |\n|---|---|---|---|---|---|---|"
    );
    let mut goal_rows = Vec::new();
    let mut levels = vec![lowest, highest];
    levels.dedup();
    for work in [Work::Get, Work::CreateDelete] {
        for &conc in &levels {
            let n = count_for(work, conc, args.quick);
            eprintln!(
                "== decomposition · {} · concurrency {conc}: admin vs as-tenant, as-tenant vs paddock",
                work.name()
            );
            let tag = format!("i{}{conc}", work as u8);
            let a = load::pairs(
                work,
                &admin_side,
                &imp_side,
                None,
                conc,
                n,
                args.reps,
                procs,
                0,
                peak_hwm,
                &format!("{tag}a"),
            )
            .await;
            let b = load::pairs(
                work,
                &imp_side,
                &paddock_side,
                None,
                conc,
                n,
                args.reps,
                procs,
                0,
                peak_hwm,
                &format!("{tag}b"),
            )
            .await;
            let _ = writeln!(
                d,
                "| {} | {conc} | {} / {} / {} | {}, {} | {}, {}, {} | {:.3} / {:.3} | {:.3} |",
                work.name(),
                ms(a.direct_p50()),
                ms(a.paddock_p50()),
                ms(b.paddock_p50()),
                ratio(a.p50_ratio()),
                ratio(a.rps_ratio()),
                ratio(b.p50_ratio()),
                ratio(b.p99_ratio()),
                ratio(b.rps_ratio()),
                a.apiserver_cpu_per_k_direct(),
                a.apiserver_cpu_per_k_paddock(),
                b.paddock_cpu_per_k(),
            );
            if work == Work::Get {
                if conc == highest {
                    report.imp_cpu = Some((
                        a.apiserver_cpu_per_k_direct(),
                        a.apiserver_cpu_per_k_paddock(),
                    ));
                }
                goal_rows.push((conc, b));
            }
        }
    }
    let _ = writeln!(d);
    for (conc, b) in goal_rows {
        if conc == lowest {
            report.goal(
                format!("(diagnostic) small GET through paddock vs the same identity directly, p50 / p99 ratio (c={conc}, h2)"),
                "–",
                format!("{} / {}", ratio(b.p50_ratio()), ratio(b.p99_ratio())),
                None,
            );
        }
        if conc == highest {
            report.goal(
                format!("(diagnostic) small GET req/s at {conc} through paddock vs the same identity directly (h2)"),
                "–",
                ratio(b.rps_ratio()),
                None,
            );
        }
    }
    Ok(())
}

fn short(p: Proto) -> &'static str {
    match p {
        Proto::H1 => "h1",
        Proto::H2 => "h2",
    }
}

fn list(v: &[f64]) -> String {
    format!(
        "[{}]",
        v.iter().map(|x| ratio(*x)).collect::<Vec<_>>().join(", ")
    )
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        s.to_owned()
    } else {
        let mut end = n;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    }
}

/// The apiserver's cost of who impersonates (gateway.rs), at the highest concurrency.
async fn gateway_part(
    args: &Args,
    cp: &ControlPlane,
    admin: &Cred,
    tenant: &Cred,
    procs: Procs,
    peak_hwm: &mut u64,
    report: &mut Report,
) {
    let high = *args.concurrency.iter().max().unwrap_or(&64);
    eprintln!(
        "== who impersonates: admin vs a least-privilege identity · small GET · concurrency {high}"
    );
    let r = async {
        let gw = gateway::least_privilege(&cp.dir().join("pki"), admin, &cp.dir().join("gateway"))
            .await?;
        let h = tenant.impersonation_headers()?;
        let n = count_for(Work::Get, high, args.quick);
        gateway::bench(
            admin,
            &gw,
            &h,
            &format!("{TENANT}-"),
            high,
            n,
            args.reps,
            procs,
            peak_hwm,
        )
        .await
    }
    .await;
    match r {
        Ok((d, cpu)) => {
            report.details.push_str(&d);
            report.gateway_cpu = Some(cpu);
        }
        Err(e) => {
            eprintln!("  failed: {e:#}");
            report
                .notes
                .push(format!("least-privilege impersonation benchmark: {e:#}"));
        }
    }
}
