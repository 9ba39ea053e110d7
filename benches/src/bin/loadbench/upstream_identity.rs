//! The per-request table of issue 37 (`--only upstream-identity`): the upstream apiserver's CPU
//! per GET and per write by how a tenant identity reaches it, all sent by loadbench itself
//! straight at the apiserver (no paddock in the path), in one run:
//!
//! - (a) the admin itself (`system:masters`, no identity headers);
//! - (b) the tenant identity impersonated by the admin (the impersonation checks stop at the
//!   privileged-group authorizer);
//! - (c) the tenant identity as paddock sends it today, impersonated by paddock's
//!   least-privilege ServiceAccount (bearer token, the chart's ClusterRole): every value is
//!   authorized through RBAC;
//! - (d) the same with the fewest values that keep the same authorization ([`fewest`]);
//! - (e) front-proxy mode: the same identity as `X-Remote-*` headers on a connection with the
//!   front-proxy client certificate (renamed by paddock's own `assert_as_front_proxy`).
//!
//! Apiserver CPU comes from its threads' `schedstat` (nanoseconds) over a fixed number of
//! requests per cell, less what the apiserver spends idle over the same time (measured
//! before and after: its controllers' and paddock's background reads), divided by the
//! requests. Cells alternate within each round; a cell's figure is its median over the
//! rounds. GET: one ConfigMap; write: a merge PATCH changing one ConfigMap (admission, the
//! tenant guard, an etcd write), each worker its own ConfigMap (no conflicts).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::Method;
use paddock_e2e::ControlPlane;

use crate::client::{Api, Cred, Proto};
use crate::procstat::Proc;
use crate::{Args, Report, TENANT};

/// Requests in flight per cell (one HTTP/2 connection).
const CONC: usize = 8;
/// Requests per cell and round: GETs, writes.
const GETS: usize = 1500;
const WRITES: usize = 500;

/// One way of reaching the apiserver as the tenant (or as the admin).
struct Cell {
    key: &'static str,
    what: &'static str,
    api: Api,
}

/// One cell's run: apiserver CPU seconds, wall time, requests, failures.
#[derive(Debug, Clone, Default)]
pub(crate) struct Run {
    pub cpu_secs: f64,
    pub elapsed: Duration,
    pub n: usize,
    pub failed: usize,
    /// The first failure's status or error, with the cell's key.
    pub first_error: Option<String>,
}

/// Apiserver CPU per request in µs: the run's CPU less the idle rate over its wall time.
pub(crate) fn us_per_request(r: &Run, idle_cpu_per_sec: f64) -> f64 {
    let busy = (r.cpu_secs - idle_cpu_per_sec * r.elapsed.as_secs_f64()).max(0.0);
    busy * 1e6 / r.n.max(1) as f64
}

/// The median of `v` (the mean of the middle two for an even count); 0 when empty.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The apiserver's request filters whose time the identity decides (wall time per request,
/// from `apiserver_request_filter_duration_seconds`): Go's garbage collector and the machine's
/// other work, which swamp a CPU difference of a few percent, weigh on these far less.
pub(crate) const FILTERS: [&str; 3] = ["authentication", "impersonation", "authorization"];

/// `apiserver_request_filter_duration_seconds` `_sum` and `_count` of each of [`FILTERS`] in
/// an exposition `text`.
pub(crate) fn filter_totals(text: &str) -> [(f64, f64); 3] {
    let mut out = [(0.0, 0.0); 3];
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_filter_duration_seconds_") else {
            continue;
        };
        let (is_sum, rest) = if let Some(r) = rest.strip_prefix("sum{") {
            (true, r)
        } else if let Some(r) = rest.strip_prefix("count{") {
            (false, r)
        } else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(v) = value.trim().parse::<f64>() else {
            continue;
        };
        for (i, f) in FILTERS.iter().enumerate() {
            if labels.split(',').any(|kv| kv == format!("filter=\"{f}\"")) {
                if is_sum {
                    out[i].0 += v;
                } else {
                    out[i].1 += v;
                }
            }
        }
    }
    out
}

/// µs per request of each filter between two scrapes, over the run's `n` requests (a filter
/// a request did not pass, such as impersonation without its headers, counts 0).
pub(crate) fn filter_us(before: &[(f64, f64); 3], after: &[(f64, f64); 3], n: usize) -> [f64; 3] {
    let mut out = [0.0; 3];
    for i in 0..3 {
        out[i] = (after[i].0 - before[i].0).max(0.0) * 1e6 / n.max(1) as f64;
    }
    out
}

/// The first and third quartiles of `v` (nearest rank); (0, 0) when empty.
pub(crate) fn quartiles(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let at = |q: f64| s[((q * (s.len() - 1) as f64).round() as usize).min(s.len() - 1)];
    (at(0.25), at(0.75))
}

/// paddock's identity headers with the values that change no authorization left out: the
/// extra `paddock.io/tenant` (no RBAC rule can name an extra, and neither the tenant guard nor
/// any other policy paddock installs reads `request.userInfo.extra`; paddock's own audit
/// events carry the tenant id from the certificate, not from upstream). `system:authenticated`
/// is already left out by paddock (the apiserver adds it); `paddock:tenants` stays: it grants
/// nothing, but the `paddock-tenants` FlowSchema matches it (API Priority and Fairness).
/// Since issue 37 this is what paddock sends.
pub(crate) fn fewest(paddock: &http::HeaderMap) -> http::HeaderMap {
    let mut h = paddock.clone();
    let extras: Vec<_> = h
        .keys()
        .filter(|k| k.as_str().starts_with("impersonate-extra-"))
        .cloned()
        .collect();
    for k in extras {
        h.remove(k);
    }
    h
}

/// paddock's identity headers as it sent them until issue 37: with the extra
/// `paddock.io/tenant=<tenant>` (the "before" cell; [`fewest`] is the "after").
pub(crate) fn with_tenant_extra(paddock: &http::HeaderMap) -> http::HeaderMap {
    let mut h = fewest(paddock);
    h.insert(
        "impersonate-extra-paddock.io%2ftenant",
        http::HeaderValue::from_static(TENANT),
    );
    h
}

/// Runs the part; a failure is a note in the report, not the end of the benchmark.
pub(crate) async fn part(
    args: &Args,
    cp: &ControlPlane,
    admin: &Cred,
    tenant: &Cred,
    apiserver: Proc,
    report: &mut Report,
) {
    eprintln!("== upstream identity: apiserver CPU per request by how the tenant identity arrives");
    if let Err(e) = bench(args, cp, admin, tenant, apiserver, report).await {
        eprintln!("  failed: {e:#}");
        report
            .notes
            .push(format!("upstream identity benchmark: {e:#}"));
    }
}

/// The five cells (module doc).
fn cells(cp: &ControlPlane, admin: &Cred, tenant: &Cred) -> Result<Vec<Cell>> {
    // The identity as paddock sent it until issue 37 (with the extra) in (b), (c) and (e).
    let paddock = with_tenant_extra(&tenant.impersonation_headers()?);
    let rules = paddock_reconciler::rights::cluster_role_rules();
    let sa_kubeconfig = paddock_e2e::token::service_account(cp, "paddock-bench", &rules)
        .context("paddock's least-privilege ServiceAccount")?;
    let token = paddock_upstream::upstream::UpstreamCredential::from_kubeconfig(&sa_kubeconfig)?
        .token
        .context("the ServiceAccount kubeconfig has no token")?;
    let mut x_remote = paddock.clone();
    paddock_upstream::front_proxy::assert_as_front_proxy(&mut x_remote)?;
    let front_proxy = Cred {
        cert: std::fs::read(cp.var("FRONT_PROXY_CLIENT_CERT")?)?,
        key: std::fs::read(cp.var("FRONT_PROXY_CLIENT_KEY")?)?,
        ..admin.clone()
    };
    let h2 = Proto::H2;
    Ok(vec![
        Cell {
            key: "a",
            what: "the admin directly (`system:masters`)",
            api: Api::new(admin, h2)?,
        },
        Cell {
            key: "b",
            what: "the tenant identity impersonated by the admin",
            api: Api::new(admin, h2)?.with_headers(paddock.clone()),
        },
        Cell {
            key: "c",
            what: "as paddock sent it until issue 37: impersonated by its least-privilege ServiceAccount (user, 3 groups, extra `paddock.io/tenant`)",
            api: with_more(Api::bearer(admin, &token, h2)?, &paddock),
        },
        Cell {
            key: "d",
            what: "the fewest values with the same authorization, (c) without the extra: what paddock sends since issue 37",
            api: with_more(Api::bearer(admin, &token, h2)?, &fewest(&paddock)),
        },
        Cell {
            key: "e",
            what: "front proxy: the same identity as `X-Remote-*`, front-proxy client certificate",
            api: Api::new(&front_proxy, h2)?.with_headers(x_remote),
        },
    ])
}

/// `api` (a bearer client, whose headers hold its Authorization) with `more` headers too.
fn with_more(api: Api, more: &http::HeaderMap) -> Api {
    let mut h = api.headers().clone();
    for (k, v) in more {
        h.append(k.clone(), v.clone());
    }
    api.with_headers(h)
}

fn get_path() -> String {
    format!("/api/v1/namespaces/{TENANT}-bench/configmaps/small")
}

fn write_path(worker: usize) -> String {
    format!("/api/v1/namespaces/{TENANT}-bench/configmaps/upstream-identity-{worker}")
}

/// The right cell (c) needs beyond the chart's: `impersonate` on the extra paddock sent until
/// issue 37 (the chart no longer grants it), for the ServiceAccount of [`cells`].
async fn grant_extra(admin: &Api) -> Result<()> {
    const NAME: &str = "paddock-bench-tenant-extra";
    let role = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": NAME},
        "rules": [{"apiGroups": ["authentication.k8s.io"], "resources": ["userextras/paddock.io/tenant"], "verbs": ["impersonate"]}]});
    let binding = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": NAME},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": "paddock-bench", "namespace": "paddock-system"}]});
    for (path, body) in [
        ("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            binding,
        ),
    ] {
        let (s, b) = admin
            .call(Method::POST, path, Some(Bytes::from(body.to_string())))
            .await?;
        if !(s.is_success() || s == http::StatusCode::CONFLICT) {
            bail!("{path}: {s}: {}", String::from_utf8_lossy(&b));
        }
    }
    Ok(())
}

/// One ConfigMap per worker for the writes, made by the admin.
async fn write_targets(admin: &Api) -> Result<()> {
    for w in 0..CONC {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("upstream-identity-{w}")}, "data": {"n": "0"}});
        let (s, b) = admin
            .call(
                Method::POST,
                &format!("/api/v1/namespaces/{TENANT}-bench/configmaps"),
                Some(Bytes::from(body.to_string())),
            )
            .await?;
        if !(s.is_success() || s == http::StatusCode::CONFLICT) {
            bail!(
                "creating the write targets: {s}: {}",
                String::from_utf8_lossy(&b)
            );
        }
    }
    Ok(())
}

/// `n` requests of `cell` (GETs, or writes when `write`), [`CONC`] at a time.
async fn run(cell: &Cell, write: bool, n: usize, apiserver: Proc, round: usize) -> Run {
    let mark = apiserver.cpu_mark();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..CONC {
        let api = cell.api.clone();
        let share = n / CONC + usize::from(w < n % CONC);
        let key = cell.key;
        tasks.push(tokio::spawn(async move {
            let mut failed = 0;
            let mut first = None;
            for i in 0..share {
                let outcome = if write {
                    let body = format!(r#"{{"data":{{"n":"{key}{round}-{i}"}}}}"#);
                    match api
                        .send(
                            Method::PATCH,
                            &write_path(w),
                            Some(Bytes::from(body)),
                            "application/merge-patch+json",
                            "application/json",
                        )
                        .await
                    {
                        Ok(r) if r.status().is_success() => Ok(()),
                        Ok(r) => Err(format!("PATCH: {}", r.status())),
                        Err(e) => Err(format!("PATCH: {e:#}")),
                    }
                } else {
                    api.get_drain(&get_path(), "application/json")
                        .await
                        .map(|_| ())
                        .map_err(|e| format!("{e:#}"))
                };
                if let Err(e) = outcome {
                    failed += 1;
                    first.get_or_insert(e);
                }
            }
            (failed, first)
        }));
    }
    let mut failed = 0;
    let mut first_error = None;
    for t in tasks {
        let (f, e) = t.await.unwrap_or((n, Some("worker panicked".into())));
        failed += f;
        if first_error.is_none() {
            first_error = e;
        }
    }
    Run {
        elapsed: t0.elapsed(),
        cpu_secs: apiserver.cpu_secs_since(&mark),
        n,
        failed,
        first_error,
    }
}

/// The apiserver's idle CPU rate (seconds per second) over `window`.
async fn idle_rate(apiserver: Proc, window: Duration) -> f64 {
    let mark = apiserver.cpu_mark();
    tokio::time::sleep(window).await;
    apiserver.cpu_secs_since(&mark) / window.as_secs_f64()
}

async fn bench(
    args: &Args,
    cp: &ControlPlane,
    admin: &Cred,
    tenant: &Cred,
    apiserver: Proc,
    report: &mut Report,
) -> Result<()> {
    let cells = cells(cp, admin, tenant)?;
    write_targets(&cells[0].api).await?;
    grant_extra(&cells[0].api).await?;
    // Every cell must work (and write) before it is measured (a new binding takes the
    // apiserver's RBAC a moment).
    for c in &cells {
        crate::client::wait_until(
            &format!("cell ({}) to be allowed", c.key),
            Duration::from_secs(15),
            || async {
                let r = run(c, true, CONC, apiserver, 99).await;
                let g = run(c, false, CONC, apiserver, 99).await;
                Ok(r.failed + g.failed == 0)
            },
        )
        .await?;
    }
    let scale = if args.quick { 10 } else { 1 };
    let (gets, writes) = (GETS / scale, WRITES / scale);
    let idle_before = idle_rate(apiserver, Duration::from_secs(3)).await;
    let rounds = args.identity_rounds.max(1);
    let mut runs: Vec<[Vec<Run>; 2]> = cells.iter().map(|_| [Vec::new(), Vec::new()]).collect();
    // Per cell and kind: each run's µs per request in each of FILTERS.
    let mut filters: Vec<[Vec<[f64; 3]>; 2]> =
        cells.iter().map(|_| [Vec::new(), Vec::new()]).collect();
    let scrape = || async {
        let text = cells[0].api.ok(Method::GET, "/metrics", None).await?;
        anyhow::Ok(filter_totals(&String::from_utf8_lossy(&text)))
    };
    for round in 0..rounds {
        for (wi, (write, n)) in [(false, gets), (true, writes)].into_iter().enumerate() {
            // Every other round backwards: a drift of the machine lands on no cell more
            // than another.
            let order: Vec<usize> = if round % 2 == 0 {
                (0..cells.len()).collect()
            } else {
                (0..cells.len()).rev().collect()
            };
            for ci in order {
                // Scraped outside the run's CPU window.
                let before = scrape().await?;
                let r = run(&cells[ci], write, n, apiserver, round).await;
                let after = scrape().await?;
                filters[ci][wi].push(filter_us(&before, &after, r.n));
                runs[ci][wi].push(r);
            }
        }
    }
    let idle_after = idle_rate(apiserver, Duration::from_secs(3)).await;
    let idle = (idle_before + idle_after) / 2.0;
    let per = |ci: usize, wi: usize| -> f64 {
        median(
            runs[ci][wi]
                .iter()
                .map(|r| us_per_request(r, idle))
                .collect(),
        )
    };
    // Ratios paired within a round (the same minute of the machine), then their median
    // and spread over the rounds.
    let paired = |num: usize, den: usize, wi: usize| -> Vec<f64> {
        runs[num][wi]
            .iter()
            .zip(&runs[den][wi])
            .map(|(n, d)| us_per_request(n, idle) / us_per_request(d, idle).max(1e-9))
            .collect()
    };
    let spread = |v: Vec<f64>| -> String {
        let (lo, hi) = quartiles(&v);
        format!("{:.2} ({lo:.2}-{hi:.2})", median(v))
    };
    let failed: usize = runs.iter().flatten().flatten().map(|r| r.failed).sum();
    let sent: usize = runs.iter().flatten().flatten().map(|r| r.n).sum();
    let first = cells
        .iter()
        .zip(&runs)
        .find_map(|(c, r)| {
            r.iter()
                .flatten()
                .find_map(|run| run.first_error.as_ref().map(|e| format!("({}) {e}", c.key)))
        })
        .unwrap_or_default();
    // A failure is a request whose CPU the apiserver spent differently: a few in a thousand
    // are noted, more spoil the figures.
    if failed * 1000 > sent {
        bail!("{failed} of {sent} requests failed during the measurement; first: {first}");
    }
    if failed > 0 {
        report.notes.push(format!(
            "upstream identity: {failed} of {sent} requests failed (counted in the figures); first: {first}"
        ));
    }
    let d = &mut report.details;
    let _ = writeln!(
        d,
        "### The apiserver's CPU per request by how the tenant identity arrives (`--only upstream-identity`; HTTP/2, {CONC} in flight, {rounds} rounds of {gets} GETs and {writes} merge PATCHes per cell, cells alternating, every other round backwards; median of the rounds; idle {:.1} ms/s subtracted; ratios paired within a round: median (interquartile range))\n",
        idle * 1e3
    );
    let _ = writeln!(
        d,
        "| cell | identity | CPU per GET | ÷ (a), paired | CPU per write | ÷ (a), paired |\n|---|---|---|---|---|---|"
    );
    for (ci, c) in cells.iter().enumerate() {
        let _ = writeln!(
            d,
            "| ({}) | {} | {:.0} µs | {} | {:.0} µs | {} |",
            c.key,
            c.what,
            per(ci, 0),
            spread(paired(ci, 0, 0)),
            per(ci, 1),
            spread(paired(ci, 0, 1)),
        );
    }
    let filter_median = |ci: usize, wi: usize, f: usize| -> f64 {
        median(filters[ci][wi].iter().map(|v| v[f]).collect())
    };
    let _ = writeln!(
        d,
        "\nThe apiserver's wall time per request in the filters the identity decides (`apiserver_request_filter_duration_seconds`, scraped around each run; median of the rounds; µs):\n\n| cell | GET: authentication / impersonation / authorization | sum | write: authentication / impersonation / authorization | sum |\n|---|---|---|---|---|"
    );
    for (ci, c) in cells.iter().enumerate() {
        let g: Vec<f64> = (0..3).map(|f| filter_median(ci, 0, f)).collect();
        let w: Vec<f64> = (0..3).map(|f| filter_median(ci, 1, f)).collect();
        let _ = writeln!(
            d,
            "| ({}) | {:.0} / {:.0} / {:.0} | {:.0} | {:.0} / {:.0} / {:.0} | {:.0} |",
            c.key,
            g[0],
            g[1],
            g[2],
            g.iter().sum::<f64>(),
            w[0],
            w[1],
            w[2],
            w.iter().sum::<f64>()
        );
    }
    // The front proxy's gain: (e) against (c), the same identity impersonated by paddock's
    // least-privilege ServiceAccount, round by round.
    let c_less_e = |wi: usize| -> f64 {
        median(
            runs[2][wi]
                .iter()
                .zip(&runs[4][wi])
                .map(|(c, e)| us_per_request(c, idle) - us_per_request(e, idle))
                .collect(),
        )
    };
    let _ = writeln!(
        d,
        "\nFront proxy (e) ÷ impersonation by the least-privilege identity (c), paired: GET {}, write {}; (c) less (e), median of the rounds: GET {:.0} µs, write {:.0} µs.\n",
        spread(paired(4, 2, 0)),
        spread(paired(4, 2, 1)),
        c_less_e(0),
        c_less_e(1),
    );
    let a_get = per(0, 0);
    report.goal(
        "(diagnostic) apiserver CPU per GET: (c) impersonated with the extra (before issue 37) / (d) without it (since) / (e) front proxy, ÷ admin",
        "–",
        format!(
            "{:.0} / {:.0} / {:.0} µs; {:.2} / {:.2} / {:.2}",
            per(2, 0),
            per(3, 0),
            per(4, 0),
            per(2, 0) / a_get.max(1e-9),
            per(3, 0) / a_get.max(1e-9),
            per(4, 0) / a_get.max(1e-9)
        ),
        None,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_per_request_subtracts_the_idle_rate() {
        let r = Run {
            cpu_secs: 0.5,
            elapsed: Duration::from_secs(2),
            n: 1000,
            failed: 0,
            first_error: None,
        };
        // 0.5 s less 2 s x 0.05 s/s = 0.4 s over 1,000 requests.
        assert!((us_per_request(&r, 0.05) - 400.0).abs() < 1e-6);
        // Never below zero, and no division by zero.
        assert_eq!(us_per_request(&r, 1.0), 0.0);
        let none = Run::default();
        assert_eq!(us_per_request(&none, 0.0), 0.0);
    }

    #[test]
    fn filter_totals_sum_each_filter_and_differences_per_request() {
        let text = "\
apiserver_request_filter_duration_seconds_sum{filter=\"authentication\"} 0.5
apiserver_request_filter_duration_seconds_count{filter=\"authentication\"} 100
apiserver_request_filter_duration_seconds_sum{filter=\"impersonation\"} 0.25
apiserver_request_filter_duration_seconds_bucket{filter=\"impersonation\",le=\"0.005\"} 9
apiserver_request_filter_duration_seconds_sum{filter=\"audit\"} 7
apiserver_request_filter_duration_seconds_sum{filter=\"authorization\"} 1
";
        let t = filter_totals(text);
        assert_eq!(t, [(0.5, 100.0), (0.25, 0.0), (1.0, 0.0)]);
        let later = [(0.6, 200.0), (0.25, 0.0), (1.1, 0.0)];
        let us = filter_us(&t, &later, 100);
        assert!((us[0] - 1000.0).abs() < 1e-6 && us[1] == 0.0 && (us[2] - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn quartiles_by_nearest_rank() {
        assert_eq!(quartiles(&[]), (0.0, 0.0));
        assert_eq!(quartiles(&[3.0]), (3.0, 3.0));
        assert_eq!(quartiles(&[5.0, 1.0, 4.0, 2.0, 3.0]), (2.0, 4.0));
    }

    #[test]
    fn median_of_odd_even_and_none() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(Vec::new()), 0.0);
    }

    #[test]
    fn before_and_after_differ_by_the_extra_only() {
        let mut h = http::HeaderMap::new();
        h.insert("impersonate-user", http::HeaderValue::from_static("u"));
        let before = with_tenant_extra(&h);
        assert_eq!(before.len(), 2);
        assert_eq!(fewest(&before), h);
    }

    #[test]
    fn fewest_drops_only_the_extra() {
        let mut h = http::HeaderMap::new();
        for (k, v) in [
            ("impersonate-user", "paddock:foofoo:alice"),
            ("impersonate-group", "paddock:tenant:foofoo"),
            ("impersonate-group", "paddock:tenants"),
            ("impersonate-extra-paddock.io%2ftenant", "foofoo"),
        ] {
            h.append(k, http::HeaderValue::from_static(v));
        }
        let f = fewest(&h);
        assert_eq!(f.len(), 3);
        assert!(
            f.keys()
                .all(|k| !k.as_str().starts_with("impersonate-extra-"))
        );
        assert_eq!(f.get_all("impersonate-group").iter().count(), 2);
    }
}
