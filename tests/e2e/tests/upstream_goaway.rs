//! The upstream closing connections under load: a tenant still gets a cluster admin's
//! answer. kube-apiserver's `--goaway-chance` (recommended for HA clusters behind a load
//! balancer) ends HTTP/2 connections at random with a GOAWAY; requests already on their way on
//! such a connection are refused unprocessed. Go's HTTP/2 client sends them again, so client-go
//! users of a real cluster never see them; through paddock they must not turn into 503s. The
//! test bed's apiserver is restarted with the highest chance (0.02); a GET and create load runs
//! straight at it (the positive control: the client's own transparent retries show that GOAWAYs
//! raced requests) and through paddock (every answer 2xx, paddock's retry counter > 0, every
//! create applied once). About 1 min.

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use http::Method;
use paddock_e2e::ha::Apiserver;
use paddock_e2e::http::Tls;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};
use serde_json::Value;

const WORKERS: usize = 32;
/// Requests per worker; every eighth a create.
const REQUESTS_PER_WORKER: usize = 64;
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
struct Outcome {
    /// Answers by status code (0: no answer).
    codes: std::collections::BTreeMap<u16, u32>,
    /// Names of the objects created (201).
    created: Vec<String>,
    /// A few failures, for the report.
    samples: Vec<String>,
}

/// `WORKERS` workers, each sending `REQUESTS_PER_WORKER` requests in namespace `ns`: GETs of
/// one ConfigMap, every eighth a create (generateName); all concurrently on one client.
async fn load(client: &Tls, ns: &str, marker: &str) -> Outcome {
    let get = format!("/api/v1/namespaces/{ns}/configmaps/goaway-probe");
    let post = format!("/api/v1/namespaces/{ns}/configmaps");
    let body = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"generateName":"goaway-","labels":{{"run":"{marker}"}}}}}}"#
    );
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..WORKERS {
        let (client, get, post, body) = (client.clone(), get.clone(), post.clone(), body.clone());
        tasks.spawn(async move {
            let mut out = Outcome::default();
            for i in 0..REQUESTS_PER_WORKER {
                // Every eighth request a create: CREATES_PER_WORKER of them among the GETs.
                let create = i % 8 == 7;
                let r = if create {
                    let json = Some(("application/json", body.clone().into_bytes()));
                    client.send(Method::POST, &post, json, TIMEOUT).await
                } else {
                    client.send(Method::GET, &get, None, TIMEOUT).await
                };
                let code = match &r {
                    Ok((s, b)) => {
                        if s.as_u16() == 201 {
                            let v: Value = serde_json::from_slice(b).unwrap_or_default();
                            out.created
                                .push(v["metadata"]["name"].as_str().unwrap_or("").to_owned());
                        } else if !s.is_success() && out.samples.len() < 2 {
                            out.samples
                                .push(format!("{s}: {}", String::from_utf8_lossy(b)));
                        }
                        s.as_u16()
                    }
                    Err(e) => {
                        if out.samples.len() < 2 {
                            out.samples.push(format!("no answer: {e}"));
                        }
                        0
                    }
                };
                *out.codes.entry(code).or_default() += 1;
            }
            out
        });
    }
    let mut all = Outcome::default();
    while let Some(done) = tasks.join_next().await {
        let Ok(out) = done else {
            all.samples.push("a load worker panicked".into());
            continue;
        };
        for (c, n) in out.codes {
            *all.codes.entry(c).or_default() += n;
        }
        all.created.extend(out.created);
        if all.samples.len() < 6 {
            all.samples.extend(out.samples);
        }
    }
    all
}

/// How many ConfigMaps labelled `run=<marker>` the namespace holds.
async fn count(client: &Tls, ns: &str, marker: &str) -> Result<usize> {
    let (s, b) = client
        .send(
            Method::GET,
            &format!("/api/v1/namespaces/{ns}/configmaps?labelSelector=run%3D{marker}"),
            None,
            TIMEOUT,
        )
        .await
        .map_err(|e| anyhow::anyhow!("listing the created ConfigMaps: {e}"))?;
    if !s.is_success() {
        bail!("listing the created ConfigMaps: {s}");
    }
    let v: Value = serde_json::from_slice(&b)?;
    Ok(v["items"].as_array().map_or(0, Vec::len))
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn upstream_goaways_never_reach_the_tenant() -> Result<()> {
    let cp = ControlPlane::start()?;
    let mut api = Apiserver::of(&cp)?;
    api.kill()?;
    // The killed process's listening socket may outlive it for a moment.
    let port: u16 = cp
        .apiserver_url()?
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .parse()
        .context("the apiserver's port")?;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
        if std::time::Instant::now() > deadline {
            bail!("the apiserver's port {port} still taken 30 s after it was killed");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    api.add_args(&["--goaway-chance=0.02"]);
    api.start(&cp)?;
    // No fair-share limit in the way: every answer must be the upstream's.
    let unlimited: Vec<String> = [
        "--tenant-read-qps",
        "0",
        "--tenant-write-qps",
        "0",
        "--tenant-max-inflight",
        "0",
    ]
    .map(String::from)
    .to_vec();
    let p = Paddock::start_with_args(&cp, StoreKind::Etcd, "paddock", &unlimited)?;
    let kc = p.tenant("goaway")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let direct = Tls::from_kubeconfig(&cp.admin_kubeconfig(), None)?;
    let tenant = Tls::from_kubeconfig(&kc, None)?;
    let probe = Tls::from_kubeconfig(&p.admin_kubeconfig(), None)?;

    for client in [&direct, &tenant] {
        let probe_cm =
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"goaway-probe"}}"#;
        let json = Some(("application/json", probe_cm.to_vec()));
        let (s, b) = rt
            .block_on(client.send(
                Method::POST,
                "/api/v1/namespaces/default/configmaps",
                json,
                TIMEOUT,
            ))
            .map_err(|e| anyhow::anyhow!("creating the probe ConfigMap: {e}"))?;
        if s.as_u16() != 201 {
            bail!(
                "creating the probe ConfigMap: {s} {}",
                String::from_utf8_lossy(&b)
            );
        }
    }
    let straight = rt.block_on(load(&direct, "default", "direct"));
    let direct_retries = direct.retries.load(Ordering::Relaxed);
    let direct_count = rt.block_on(count(&direct, "default", "direct"))?;
    let through = rt.block_on(load(&tenant, "default", "paddock"));
    let tenant_retries = tenant.retries.load(Ordering::Relaxed);
    let paddock_count = rt.block_on(count(&tenant, "default", "paddock"))?;
    let metrics = rt
        .block_on(probe.send(Method::GET, "/metrics", None, TIMEOUT))
        .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| anyhow::anyhow!("paddock /metrics: {e}"))?;
    let paddock_retries = metric(&metrics, "paddock_upstream_refused_retries_total");

    println!("\n== kube-apiserver --goaway-chance=0.02, {WORKERS} workers ==");
    println!(
        "  direct (admin): answers {:?}, client retries of unprocessed requests {direct_retries}, created {} listed {direct_count}",
        straight.codes,
        straight.created.len()
    );
    println!(
        "  through paddock (tenant): answers {:?}, client retries {tenant_retries}, paddock's retries {paddock_retries}, created {} listed {paddock_count}",
        through.codes,
        through.created.len()
    );
    let mut failures = Vec::new();
    if direct_retries == 0 && paddock_retries == 0.0 {
        failures.push(
            "no GOAWAY raced a request, directly or through paddock: the test exercised nothing"
                .to_owned(),
        );
    }
    if paddock_retries == 0.0 {
        failures.push("paddock_upstream_refused_retries_total is 0: no refused stream was sent again through paddock".into());
    }
    let not_ok: u32 = through
        .codes
        .iter()
        .filter(|(c, _)| !(200..300).contains(*c))
        .map(|(_, n)| n)
        .sum();
    if not_ok > 0 {
        failures.push(format!(
            "{not_ok} answers through paddock were not 2xx: {:?}; e.g. {:?}",
            through.codes, through.samples
        ));
    }
    if through.created.len() != paddock_count {
        failures.push(format!(
            "{} creates answered 201 through paddock, {paddock_count} objects exist (a create applied twice or lost)",
            through.created.len()
        ));
    }
    if std::fs::read_to_string(p.log_path())
        .unwrap_or_default()
        .contains("panicked")
    {
        failures.push("paddock panicked".into());
    }
    if !failures.is_empty() {
        bail!("GOAWAY checks failed:\n  {}", failures.join("\n  "));
    }
    Ok(())
}
