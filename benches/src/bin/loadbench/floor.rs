//! The floor: HAProxy as a bare TLS-terminating L7 hop in front of the apiserver —
//! what paddock must do at least (terminate the client's TLS, parse HTTP/2, re-encrypt to the
//! apiserver over a reused connection) and nothing more: no identity, no translation, no log.
//! It forwards as the upstream admin (its own client certificate), so the apiserver's work is
//! the direct request's.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use paddock_e2e::ControlPlane;
use paddock_e2e::process::free_port;

use crate::client::{Cred, Proto};
use crate::load::{PairStats, Work};
use crate::procstat::Proc;
use crate::stats::{ms, ratio};

/// HAProxy's configuration: `mode http`, TLS 1.3 and HTTP/2 on both sides, `http-reuse
/// always`, the apiserver's certificate verified, the admin's certificate presented. No log
/// (paddock's access log is part of what paddock is measured with; a bare hop has none).
pub fn config(port: u16, upstream: &str, pki: &Path, dir: &Path) -> String {
    format!(
        "global
    maxconn 4096
    ssl-default-bind-options ssl-min-ver TLSv1.3
    ssl-default-server-options ssl-min-ver TLSv1.3
    # The windows a client-go or paddock connection has: a 25 MB LIST is not throttled
    # by HTTP/2 flow control on either side.
    tune.h2.initial-window-size 4194304
    tune.h2.max-concurrent-streams 250

defaults
    mode http
    timeout connect 5s
    timeout client 10m
    timeout server 10m
    http-reuse always

frontend floor
    bind 127.0.0.1:{port} ssl crt {front} alpn h2,http/1.1
    default_backend apiserver

backend apiserver
    server api {upstream} ssl verify required ca-file {ca} sni str(localhost) verifyhost localhost crt {admin} alpn h2
",
        front = dir.join("front.pem").display(),
        admin = dir.join("admin.pem").display(),
        ca = pki.join("ca.crt").display(),
    )
}

/// A running HAProxy in front of the control plane's apiserver, stopped on drop.
pub struct Floor {
    child: Child,
    pub cred: Cred,
    pub proc: Proc,
    log: PathBuf,
}

impl Floor {
    pub fn start(cp: &ControlPlane, admin: &Cred) -> Result<Self> {
        let bin = paddock_e2e::ha::haproxy_binary()?;
        let pki = cp.dir().join("pki");
        let dir = cp.dir().join("floor");
        std::fs::create_dir_all(&dir)?;
        // HAProxy takes certificate and key in one file.
        let cat = |parts: &[&Path], out: &str| -> Result<()> {
            let mut pem = Vec::new();
            for p in parts {
                pem.extend(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?);
            }
            std::fs::write(dir.join(out), pem)?;
            Ok(())
        };
        // The front presents the apiserver's own serving certificate (127.0.0.1 and
        // localhost, signed by the cluster CA): the client trusts it as it trusts the
        // apiserver.
        cat(
            &[&pki.join("apiserver.crt"), &pki.join("apiserver.key")],
            "front.pem",
        )?;
        cat(
            &[&pki.join("admin.crt"), &pki.join("admin.key")],
            "admin.pem",
        )?;
        let upstream = admin
            .server
            .strip_prefix("https://")
            .context("the apiserver's URL is not https")?
            .trim_end_matches('/')
            .to_owned();
        let port = free_port()?;
        let cfg = dir.join("haproxy.cfg");
        std::fs::write(&cfg, config(port, &upstream, &pki, &dir))?;
        let check = Command::new(&bin).args(["-c", "-f"]).arg(&cfg).output()?;
        if !check.status.success() {
            bail!(
                "haproxy refused its configuration:\n{}{}",
                String::from_utf8_lossy(&check.stdout),
                String::from_utf8_lossy(&check.stderr)
            );
        }
        let log = cp.dir().join("logs").join("floor-haproxy.log");
        let logf = std::fs::File::create(&log)?;
        let child = Command::new(&bin)
            .args(["-db", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(Stdio::from(logf.try_clone()?))
            .stderr(Stdio::from(logf))
            .spawn()
            .context("starting haproxy")?;
        cp.record_pid("haproxy", child.id())?;
        let proc = Proc { pid: child.id() };
        let cred = Cred {
            server: format!("https://127.0.0.1:{port}"),
            ca: std::fs::read(pki.join("ca.crt"))?,
            cert: admin.cert.clone(),
            key: admin.key.clone(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!(
                    "haproxy did not listen on {port}:\n{}",
                    paddock_e2e::process::tail_file(&log, 20)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(Floor {
            child,
            cred,
            proc,
            log,
        })
    }

    pub fn log_tail(&self) -> String {
        paddock_e2e::process::tail_file(&self.log, 20)
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One load result: workload, protocol, concurrency and its pairs.
pub type LoadResult = (Work, Proto, usize, PairStats);

/// The issue-19 table: direct, HAProxy and paddock side by side (HTTP/2, the client-go way),
/// from the pairs of one run. `watch_added_p99` is paddock's added watch latency (HAProxy is
/// not run under watches).
pub fn table(
    results: &[LoadResult],
    low: usize,
    high: usize,
    watch_added_p99: Option<f64>,
) -> String {
    let pick = |w: Work, c: usize| {
        results
            .iter()
            .find(|(rw, p, rc, _)| *rw == w && *p == Proto::H2 && *rc == c)
            .map(|(_, _, _, s)| s)
    };
    let mut s = String::from(
        "| figure (HTTP/2) | direct | HAProxy | paddock | paddock ÷ HAProxy | goal | met |\n|---|---|---|---|---|---|---|\n",
    );
    let us = |x: f64| {
        if x.is_finite() {
            format!("{:.0} µs", x * 1000.0)
        } else {
            "–".into()
        }
    };
    let mut row =
        |fig: String, d: String, h: String, p: String, r: f64, goal: &str, met: Option<bool>| {
            let met = match met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "–",
            };
            let _ = writeln!(
                s,
                "| {fig} | {d} | {h} | {p} | {} | {goal} | {met} |",
                ratio(r)
            );
        };
    let mut levels = vec![high, low];
    levels.dedup();
    for c in levels {
        if let Some(g) = pick(Work::Get, c) {
            let (h, p) = (g.floor_cpu_per_k(), g.paddock_cpu_per_k());
            row(
                format!("proxy CPU per small GET, c={c}"),
                format!("(apiserver {})", us(g.apiserver_cpu_per_k_direct())),
                us(h),
                us(p),
                p / h,
                if c == high {
                    "≤ 1.3 × HAProxy"
                } else {
                    "(reported)"
                },
                (c == high && h.is_finite()).then_some(p / h <= 1.3),
            );
        }
    }
    if let Some(g) = pick(Work::Get, low) {
        let (h, p) = (g.floor_added_p50(), g.paddock_added_p50());
        row(
            format!("small GET added p50 latency, c={low}"),
            format!("{} ms", ms(g.direct_p50())),
            format!("+{} ms", ms(h)),
            format!("+{} ms", ms(p)),
            p / h,
            "≤ 1.3 × HAProxy",
            h.is_finite().then_some(p / h <= 1.3),
        );
    }
    for (w, label, goal, min) in [
        (Work::Get, "GET", "≥ 0.85", 0.85),
        (Work::CreateDelete, "writes (create+delete)", "≥ 0.80", 0.80),
        (Work::Table, "500-row Table", "no regression", f64::NAN),
    ] {
        if let Some(g) = pick(w, high) {
            let (h, p) = (g.floor_rps_ratio(), g.rps_ratio());
            row(
                format!("{label} req/s at {high} vs direct"),
                format!("1.0 ({:.0}/s)", g.direct_rps()),
                ratio(h),
                ratio(p),
                p / h,
                goal,
                min.is_finite().then_some(p >= min),
            );
        }
    }
    if let Some(g) = pick(Work::Table, low) {
        row(
            format!("500-row Table p50, c={low}"),
            format!("{} ms", ms(g.direct_p50())),
            format!("{} ms", ms(g.floor_p50())),
            format!("{} ms", ms(g.paddock_p50())),
            g.paddock_p50() / g.floor_p50(),
            "no regression",
            None,
        );
    }
    if let Some((_, _, c, g)) = results
        .iter()
        .filter(|(w, p, _, _)| *w == Work::List && *p == Proto::H2)
        .min_by_key(|(_, _, c, _)| *c)
    {
        row(
            format!("LIST of the pods, wall time, c={c}"),
            format!("{} ms", ms(g.direct_mean())),
            format!("{} ms", ms(g.floor_mean())),
            format!("{} ms", ms(g.paddock_mean())),
            g.paddock_mean() / g.floor_mean(),
            "no regression",
            None,
        );
    }
    if let Some(x) = watch_added_p99 {
        row(
            "watch event delivery, added p99".into(),
            "–".into(),
            "(not run)".into(),
            format!("+{} ms", ms(x)),
            f64::NAN,
            "no regression (≤ 2 ms)",
            Some(x <= 2.0),
        );
    }
    s
}

/// The floor's own figures, per workload, protocol and concurrency.
pub fn details(d: &mut String, results: &[LoadResult]) {
    if !results.iter().any(|(_, _, _, s)| s.has_floor()) {
        return;
    }
    let _ = writeln!(
        d,
        "### The floor: HAProxy (`mode http`, TLS 1.3 and HTTP/2 both sides, `http-reuse always`, the admin's certificate upstream), in the same rounds\n"
    );
    let _ = writeln!(
        d,
        "| workload | proto | conc | HAProxy p50 | p99 | req/s | req/s ÷ direct | HAProxy CPU s/1k | paddock CPU s/1k | added p50 HAProxy / paddock (ms) |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for (w, p, c, s) in results {
        let _ = writeln!(
            d,
            "| {} | {} | {c} | {} | {} | {:.0} | {} | {:.3} | {:.3} | {} / {} |",
            w.name(),
            p.name(),
            ms(s.floor_p50()),
            ms(s.floor_p99()),
            s.floor_rps(),
            ratio(s.floor_rps_ratio()),
            s.floor_cpu_per_k(),
            s.paddock_cpu_per_k(),
            ms(s.floor_added_p50()),
            ms(s.paddock_added_p50()),
        );
    }
    let _ = writeln!(d);
}

/// Rows of the apiserver's own cost per small GET by identity (the decomposition and
/// gateway.rs), appended to the floor table.
pub fn apiserver_rows(imp: Option<(f64, f64)>, gateway: Option<[f64; 3]>) -> String {
    let mut s = String::new();
    let us = |x: f64| format!("{:.0} µs", x * 1000.0);
    if let Some((admin, as_tenant)) = imp {
        let _ = writeln!(
            s,
            "| apiserver CPU per small GET: admin / tenant identity (impersonated by the admin) | {} | – | {} | – | (reported) | – |",
            us(admin),
            us(as_tenant)
        );
    }
    if let Some([by_admin, by_gw, trimmed]) = gateway {
        let _ = writeln!(
            s,
            "| apiserver CPU per small GET of the tenant identity impersonated by: admin / least-privilege identity / the same without `system:authenticated` | {} | – | {} / {} | – | (reported) | – |",
            us(by_admin),
            us(by_gw),
            us(trimmed)
        );
    }
    s
}
