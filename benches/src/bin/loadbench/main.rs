//! paddock's end-to-end benchmark set: a real control plane on loopback and paddock
//! as a real process; the same workloads directly against the apiserver (as the upstream
//! admin) and through paddock (as tenant `foofoo`), alternating in one run; scale benchmarks.
//! Prints the goals table with the measured values and writes it, with the details, to
//! `<out>/report.md`. Bounded in count and time; everything on 127.0.0.1.
//!
//! `scripts/bench.sh` (`make bench`) builds paddock in release mode and runs this with
//! `PADDOCK_BIN` set. These are measurements, not tests: nothing here asserts a timing.

mod ab;
mod apf;
mod client;
mod fanout;
mod floor;
mod gateway;
mod idle;
mod imp;
mod latency;
mod load;
mod noisy;
mod noisy_split;
mod objects;
mod procstat;
mod scale;
mod scale_attrib;
mod scale_idle;
mod setup;
mod stats;
mod upstream_identity;
mod watch;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use http::Method;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};

use crate::client::{Api, Cred, Proto};
use crate::load::Procs;
use crate::procstat::Proc;
use crate::stats::{ms, pct, ratio};
use crate::{
    fanout::fanout_bench,
    idle::idle_bench,
    imp::{gateway_part, imp_bench},
    latency::load_bench,
    setup::{restart_paddock, setup_tenant, start_perf},
    watch::watch_bench,
};

const TENANT: &str = "foofoo";

/// Who paddock is upstream (`--paddock-upstream`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum UpstreamIdentity {
    Chart,
    Admin,
}

impl UpstreamIdentity {
    fn describe(self) -> &'static str {
        match self {
            UpstreamIdentity::Chart => {
                "ServiceAccount paddock-system/paddock-bench bound to exactly the chart's ClusterRole (bearer token), as deployed"
            }
            UpstreamIdentity::Admin => "the test bed's admin certificate (system:masters)",
        }
    }
}

#[derive(Parser, Debug)]
#[command(about = "paddock's end-to-end load and scale benchmarks against a local control plane")]
struct Args {
    /// Small counts everywhere (a few minutes; for trying the harness, not for figures).
    #[arg(long)]
    quick: bool,
    /// Parts to run (comma-separated): fanout, noisy, load, imp, upstream-identity, watch,
    /// idle, tenants; and scale (not by default: its own control plane, 1,000 tenants, ~25 min; `make
    /// bench-scale`); `all` for every one.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fanout,noisy,load,imp,upstream-identity,watch,idle,tenants"
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
    /// Noisy neighbour: then run the same phases straight at the apiserver (the upstream
    /// admin impersonating the tenants' upstream identities, A paced at the rate paddock let
    /// through): what the apiserver alone gives B under A's load.
    #[arg(long)]
    noisy_direct: bool,
    /// Noisy neighbour: run only straight at the apiserver, once per rate of A's requests
    /// (per second in all, paced), e.g. `40,80,120`: which rate the apiserver tolerates.
    #[arg(long, value_delimiter = ',')]
    noisy_direct_rates: Vec<f64>,
    /// Noisy neighbour: the three phases through paddock this many times in a row; the
    /// goal's figure is then B's p99 over all repetitions' samples with A against all alone
    /// (one run's p99 is its 12 slowest GETs: a wide interval).
    #[arg(long, default_value_t = 1)]
    noisy_repeat: usize,
    /// paddock's `--fair-queue-pace` (percent of one seat; 0: off; default: paddock's own).
    #[arg(long)]
    fair_queue_pace: Option<u32>,
    /// paddock's `--fair-queue-seats` (0 turns the tenant-fair work queue off; default:
    /// paddock's own, 8 per core; the session-7 figures used 16).
    #[arg(long)]
    fair_queue_seats: Option<u32>,
    /// paddock's `--fair-queue-reserve` (default: paddock's own, 0: off).
    #[arg(long)]
    fair_queue_reserve: Option<u32>,
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
    /// Scale part: the tenant counts to measure at, cumulatively (each step creates tenants
    /// up to the next count, then measures).
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    scale_sizes: Vec<usize>,
    /// Scale part: seconds of each idle window (the no-paddock baseline's and each size's).
    #[arg(long, default_value_t = 60)]
    scale_idle_seconds: u64,
    /// Scale part: tenants created at once (workers, spread over the two replicas).
    #[arg(long, default_value_t = 4)]
    scale_workers: usize,
    /// Scale part: the platform ServiceAccount's GETs straight at the apiserver at each size
    /// (paced at `--scale-platform-rate` per second).
    #[arg(long, default_value_t = 600)]
    scale_platform_gets: usize,
    #[arg(long, default_value_t = 50)]
    scale_platform_rate: u32,
    /// Scale part: paddock's `--default-templates` (the built-in mandatory namespace
    /// templates: `default` or `pl1`).
    #[arg(long, default_value = "default")]
    scale_default_templates: String,
    /// Upstream-identity part: rounds (each cell's figure is the median over them; the
    /// ratios are paired within a round).
    #[arg(long, default_value_t = 3)]
    identity_rounds: usize,
    /// Where report.md goes.
    #[arg(long, default_value = "target/bench")]
    out: PathBuf,
    /// Run with a debug build of paddock when PADDOCK_BIN is not set (figures meaningless).
    #[arg(long)]
    allow_debug: bool,
    /// paddock's `--worker-threads` (default: paddock's own, one per CPU).
    #[arg(long)]
    paddock_worker_threads: Option<u16>,
    /// paddock's `--serve-threads` (per-core serving; default: paddock's own, one per CPU; 0: off).
    #[arg(long)]
    paddock_serve_threads: Option<u16>,
    /// Leave out the floor (HAProxy as a bare L7 hop, measured alongside direct and paddock
    /// in the load part).
    #[arg(long)]
    no_floor: bool,
    /// The identity paddock forwards as upstream: `chart`, a ServiceAccount token bound to
    /// exactly the Helm chart's ClusterRole (how a deployment runs: least privilege, bearer
    /// token), or `admin`, the test bed's admin certificate (`system:masters`; the figures
    /// before session 17).
    #[arg(long, value_enum, default_value_t = UpstreamIdentity::Chart)]
    paddock_upstream: UpstreamIdentity,
    /// paddock's `--usage-refresh`. Its default (30s) re-reads every pod in full for the usage
    /// figures (the load part's 5,000 pods: 25 MB), a burst of background CPU that lands in
    /// whichever run it meets and made one pair's CPU per GET read 131 µs instead of 40
    /// (docs/performance/session-18.md). The per-request figures leave it out; `30s` for
    /// paddock's default.
    #[arg(long, default_value = "24h")]
    paddock_usage_refresh: String,
    /// A second `paddock` binary (an older build) run as a replica next to the current one
    /// and measured in the same rounds of the load part: before/after in one run (ab.rs).
    #[arg(long)]
    paddock_before: Option<PathBuf>,
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
        args.scale_sizes.retain(|&n| n <= 20);
        if args.scale_sizes.is_empty() {
            args.scale_sizes = vec![1, 10];
        }
        args.scale_idle_seconds = args.scale_idle_seconds.min(20);
        args.scale_platform_gets = args.scale_platform_gets.min(200);
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
    // Every part but `scale` shares one control plane; `scale` starts its own after them (its
    // thousand tenants would change every other figure).
    if args.only.iter().any(|p| p != "scale") {
        shared_parts(&args, &mut report).await?;
    }
    if args.wants("scale") {
        scale_idle::scale_bench(&args, &mut report).await?;
    }
    write_report(&args, &report, started, &load_before)
}

/// The paddock flags naming its upstream identity (`--paddock-upstream`): for `chart`, a
/// ServiceAccount bound to exactly the chart's ClusterRole is made in `cp` first.
fn upstream_args(args: &Args, cp: &ControlPlane, report: &mut Report) -> Result<Vec<String>> {
    let mut out = Vec::new();
    if args.paddock_upstream == UpstreamIdentity::Chart {
        let rules = paddock_reconciler::rights::cluster_role_rules();
        let kubeconfig = paddock_e2e::token::service_account(cp, "paddock-bench", &rules)
            .context("paddock's upstream identity (the chart's ClusterRole)")?;
        out.extend([
            "--upstream-kubeconfig".to_owned(),
            kubeconfig.display().to_string(),
        ]);
    }
    report.notes.push(format!(
        "paddock forwards upstream as: {}",
        args.paddock_upstream.describe()
    ));
    Ok(out)
}

/// The parts on the shared control plane and single paddock: fanout, noisy, load, imp,
/// upstream-identity, watch, idle, tenants.
async fn shared_parts(args: &Args, report: &mut Report) -> Result<()> {
    eprintln!("== starting the control plane and paddock");
    let cp = ControlPlane::start().context("starting the control plane")?;
    let mut paddock_args: Vec<String> = args
        .paddock_worker_threads
        .map(|n| vec!["--worker-threads".to_owned(), n.to_string()])
        .unwrap_or_default();
    paddock_args.extend([
        "--usage-refresh".to_owned(),
        args.paddock_usage_refresh.clone(),
    ]);
    report.notes.push(format!(
        "paddock --usage-refresh {} (the usage figures' background refresh)",
        args.paddock_usage_refresh
    ));
    if let Some(n) = args.paddock_serve_threads {
        paddock_args.extend(["--serve-threads".to_owned(), n.to_string()]);
        report.notes.push(format!("paddock --serve-threads {n}"));
    }
    paddock_args.extend(upstream_args(args, &cp, report)?);
    // The set-up raises the namespace quota of the `paddock-default` template upstream (as the
    // platform admin) for its 2,000+ pods; the template sync's drift repair would put it back
    // within a minute (docs/templates.md), so it runs hourly here.
    paddock_args.extend(["--template-sync-interval".to_owned(), "1h".to_owned()]);
    if let Some(n) = args.fair_queue_seats {
        paddock_args.extend(["--fair-queue-seats".to_owned(), n.to_string()]);
        report.notes.push(format!("paddock --fair-queue-seats {n}"));
    }
    if let Some(n) = args.fair_queue_pace {
        paddock_args.extend(["--fair-queue-pace".to_owned(), n.to_string()]);
        report.notes.push(format!("paddock --fair-queue-pace {n}"));
    }
    if let Some(n) = args.fair_queue_reserve {
        paddock_args.extend(["--fair-queue-reserve".to_owned(), n.to_string()]);
        report
            .notes
            .push(format!("paddock --fair-queue-reserve {n}"));
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
        before: None,
    };
    eprintln!(
        "  control plane in {:.0} s, paddock (pid {}) in {:.1} s",
        cp.startup.as_secs_f64(),
        procs.paddock.pid,
        p.startup.as_secs_f64()
    );
    let before = match &args.paddock_before {
        Some(bin) => {
            let before_args = ab::accepted_args(bin, &paddock_args)?;
            let b =
                Paddock::start_replica_with_binary(&cp, &p, "paddock-before", &before_args, bin)
                    .context("starting the --paddock-before replica")?;
            let pid = b.pid().context("the before replica's pid")?;
            procs.before = Some(Proc { pid });
            eprintln!("  before: {} (pid {pid}) at {}", bin.display(), b.url());
            Some(b)
        }
        None => None,
    };
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
        let r = fanout_bench(args, &p, &admin, apiserver).await;
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
        // B's own FlowSchema names its flow in the apiserver's APF metrics (noisy_split); A
        // keeps the default, the shared FlowSchema by user. Both are flows of the same
        // priority level either way, so APF shares it between them alike.
        p.cli(&["tenant", "set-limits", noisy::QUIET, "apfFlow=tenant"])?;
        let b_flow = format!(
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/paddock-tenants-{}-flow",
            noisy::QUIET
        );
        client::wait_until("B's FlowSchema", Duration::from_secs(30), || async {
            Ok(admin.call(Method::GET, &b_flow, None).await?.0.is_success())
        })
        .await?;
        let creds = noisy::Creds {
            admin: &admin_cred,
            a: &a,
            b: &b,
        };
        let shape = noisy::Shape {
            secs: args.noisy_seconds,
            b_rate: args.noisy_b_rate,
            a_workers: args.noisy_a_workers,
            direct: args.noisy_direct,
            direct_rates: args.noisy_direct_rates.clone(),
            repeat: args.noisy_repeat,
        };
        match noisy::run(&admin, &padmin, creds, procs, &shape).await {
            Ok(o) => {
                if let Some((ratio, errors)) = o.through {
                    report.goal(
                        "noisy neighbour: B's p99 with A's unbounded loop vs B alone",
                        "<= 1.2x, no errors for B",
                        format!("{} ({errors} errors for B)", stats::ratio(ratio)),
                        Some(ratio <= 1.2 && errors == 0),
                    );
                }
                for (rate, ratio, errors) in o.direct {
                    report.goal(
                        format!("noisy neighbour straight at the apiserver (no paddock; A paced at {rate:.0}/s): B's p99 with A vs alone"),
                        "(reference)",
                        format!("{} ({errors} errors for B)", stats::ratio(ratio)),
                        None,
                    );
                }
                report.details.push_str(&o.report);
            }
            Err(e) => report
                .notes
                .push(format!("noisy neighbour benchmark failed: {e:#}")),
        }
    }

    // ---- load: direct vs paddock -----------------------------------------------------------
    let mut peak_hwm = 0u64;
    let need_load = ["load", "imp", "upstream-identity", "watch", "idle"]
        .iter()
        .any(|p| args.wants(p));
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
        setup_tenant(args, &admin, &tenant_cred).await?;
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
        let before_cred = before.as_ref().map(|b| Cred {
            server: b.url().to_owned(),
            ..tenant_cred.clone()
        });
        load_bench(
            args,
            &admin_cred,
            &tenant_cred,
            floor.as_ref(),
            before_cred.as_ref(),
            procs,
            &mut peak_hwm,
            report,
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
            args,
            &admin_cred,
            &tenant_cred,
            procs,
            &mut peak_hwm,
            report,
        )
        .await?;
        gateway_part(
            args,
            &cp,
            &admin_cred,
            &tenant_cred,
            procs,
            &mut peak_hwm,
            report,
        )
        .await;
    }
    if let Some(task) = pprof {
        let _ = task.await;
    }
    if args.wants("upstream-identity") {
        let ap = procs.apiserver;
        upstream_identity::part(args, &cp, &admin_cred, &tenant_cred, ap, report).await;
    }
    if args.wants("watch") {
        watch_bench(args, &admin_cred, &tenant_cred, procs, report).await?;
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
        if let Err(e) = idle_bench(args, &tenant_cred, procs, report).await {
            report.notes.push(format!("idle watch benchmark: {e:#}"));
            eprintln!("  failed: {e:#}");
        }
    }

    // ---- tenant creation -------------------------------------------------------------------
    if args.wants("tenants") {
        eprintln!("== creating {} tenants in a row", args.tenants);
        let one = std::slice::from_ref(&padmin);
        let limit = Duration::from_secs(1800);
        match scale::create_tenants(one, "tc", 0..args.tenants, 1, limit).await {
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

    if let Some(f) = &floor {
        eprintln!("HAProxy's log (tail):\n{}", f.log_tail());
    }
    drop(floor);
    if let Some(b) = before {
        b.stop();
    }
    p.stop();
    drop(p);
    drop(cp);
    Ok(())
}

/// Prints the report and writes it to `<out>/report.md`.
fn write_report(args: &Args, report: &Report, started: Instant, load_before: &str) -> Result<()> {
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
        if let Some(bin) = &args.paddock_before {
            out.push_str(&ab::table(&report.load, &bin.display().to_string()));
        }
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
