//! Scale benchmarks: open idle watches, tenant creation in a row, `get pods -A` of a tenant
//! with many namespaces while the cluster holds many tenants.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::Method;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::json;
use tokio::task::JoinSet;

use crate::client::{Api, Cred, Proto, TABLE_ACCEPT};
use crate::procstat::Proc;
use crate::stats::{median, pct};

/// Open idle watches: keeps the response bodies (and so the streams) alive until dropped.
pub struct IdleWatches {
    bodies: Vec<Incoming>,
    clients: Vec<Api>,
    next_client: usize,
    per_conn: usize,
}

impl IdleWatches {
    pub fn new(per_conn: usize) -> Self {
        IdleWatches {
            bodies: Vec::new(),
            clients: Vec::new(),
            next_client: 0,
            per_conn,
        }
    }

    pub fn len(&self) -> usize {
        self.bodies.len()
    }

    /// Opens watches until `target` are open, `conc` at a time, over HTTP/2 connections of
    /// `per_conn` streams each (every connection is its own client, as separate kubectl
    /// processes would be).
    pub async fn open_to(
        &mut self,
        cred: &Cred,
        ns: &str,
        target: usize,
        conc: usize,
    ) -> Result<Duration> {
        let t0 = Instant::now();
        let path = format!(
            "/api/v1/namespaces/{ns}/configmaps?watch=1&fieldSelector=metadata.name%3Dnothing-here&timeoutSeconds=3600"
        );
        while self.bodies.len() < target {
            let batch = (target - self.bodies.len()).min(conc);
            let mut set = JoinSet::new();
            for _ in 0..batch {
                let conn = self.next_client / self.per_conn;
                self.next_client += 1;
                while self.clients.len() <= conn {
                    self.clients.push(Api::new(cred, Proto::H2)?);
                }
                let api = self.clients[conn].clone();
                let path = path.clone();
                set.spawn(async move {
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
                    Ok::<_, anyhow::Error>(resp.into_body())
                });
            }
            while let Some(r) = set.join_next().await {
                self.bodies.push(r.context("watch opener")??);
            }
            if t0.elapsed() > Duration::from_secs(900) {
                bail!("opening {target} watches took more than 15 min");
            }
        }
        Ok(t0.elapsed())
    }
}

/// Samples the RSS of `p` until it settles (three samples within 1%), at most `max`.
pub async fn settled_rss(p: Proc, max: Duration) -> u64 {
    let t0 = Instant::now();
    let mut last = Vec::new();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        last.push(p.rss_kib());
        if last.len() >= 3 {
            let w = &last[last.len() - 3..];
            let (lo, hi) = (
                w.iter().copied().min().unwrap_or(0),
                w.iter().copied().max().unwrap_or(0),
            );
            if hi as f64 <= lo as f64 * 1.01 || t0.elapsed() > max {
                return hi;
            }
        }
    }
}

/// Tenant creation through the admin API: tenants `<prefix><i>` for `i` in `ids`, by
/// `workers` concurrent workers, worker `w` sending to `admins[w % admins.len()]` (one admin
/// client per replica: creation spread over the replicas, as behind a load balancer). Each
/// tenant brings its four default namespaces, set up before the answer. Returns the
/// latencies in ms; stops early (with what it has) after `limit`.
pub async fn create_tenants(
    admins: &[Api],
    prefix: &str,
    ids: std::ops::Range<usize>,
    workers: usize,
    limit: Duration,
) -> Result<Vec<f64>> {
    if admins.is_empty() {
        bail!("no admin client to create tenants through");
    }
    let t0 = Instant::now();
    let next = Arc::new(AtomicUsize::new(ids.start));
    let lat = Arc::new(std::sync::Mutex::new(Vec::with_capacity(ids.len())));
    let mut set = JoinSet::new();
    for w in 0..workers.max(1) {
        let admin = admins[w % admins.len()].clone();
        let (next, lat, prefix, end) = (next.clone(), lat.clone(), prefix.to_owned(), ids.end);
        set.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= end || t0.elapsed() > limit {
                    return Ok::<(), anyhow::Error>(());
                }
                let d = create_tenant(&admin, &format!("{prefix}{i:04}")).await?;
                let Ok(mut lat) = lat.lock() else {
                    bail!("latency list poisoned");
                };
                lat.push(d);
                if lat.len() % 100 == 0 {
                    eprintln!(
                        "  {} tenants, p50 {:.0} ms, p99 {:.0} ms so far ({:.0} s)",
                        lat.len(),
                        pct(&lat, 50.0),
                        pct(&lat, 99.0),
                        t0.elapsed().as_secs_f64()
                    );
                }
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r.context("tenant creator")??;
    }
    let lat = std::mem::take(&mut *lat.lock().map_err(|_| anyhow::anyhow!("poisoned"))?);
    if lat.len() < ids.len() {
        eprintln!(
            "  stopped after {} of {} tenants: {:.0} s limit",
            lat.len(),
            ids.len(),
            limit.as_secs_f64()
        );
    }
    Ok(lat)
}

/// Creates one tenant through the admin API; its latency in ms.
async fn create_tenant(admin: &Api, id: &str) -> Result<f64> {
    let body =
        json!({"apiVersion": "paddock.io/v1alpha1", "kind": "Tenant", "metadata": {"name": id}});
    let t = Instant::now();
    let (status, b) = admin
        .call(
            Method::POST,
            "/apis/paddock.io/v1alpha1/tenants",
            Some(Bytes::from(body.to_string())),
        )
        .await?;
    let d = t.elapsed().as_secs_f64() * 1000.0;
    if !status.is_success() {
        bail!(
            "creating tenant {id}: {status}: {}",
            String::from_utf8_lossy(&b)
        );
    }
    Ok(d)
}

/// Creates namespaces upstream directly as the admin, labelled as the tenant's (what paddock
/// does when the tenant creates them), `conc` at a time.
pub async fn upstream_tenant_namespaces(
    admin: &Api,
    tenant: &str,
    names: Vec<String>,
    conc: usize,
) -> Result<()> {
    let names = Arc::new(names);
    let next = Arc::new(AtomicUsize::new(0));
    let mut set = JoinSet::new();
    for _ in 0..conc {
        let admin = admin.clone();
        let names = names.clone();
        let next = next.clone();
        let tenant = tenant.to_owned();
        set.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(name) = names.get(i) else {
                    return Ok::<(), anyhow::Error>(());
                };
                let body = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "labels": {"paddock.io/tenant": tenant}}});
                let (status, b) = admin
                    .call(
                        Method::POST,
                        "/api/v1/namespaces",
                        Some(Bytes::from(body.to_string())),
                    )
                    .await?;
                if !(status.is_success() || status == http::StatusCode::CONFLICT) {
                    bail!(
                        "namespace {name}: {status}: {}",
                        String::from_utf8_lossy(&b)
                    );
                }
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r.context("namespace creator")??;
    }
    Ok(())
}

/// `kubectl get pods -A` as the tenant, `n` times in a row: (plain list latencies, Table
/// latencies) in ms.
pub async fn get_all(tenant: &Api, n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    // Warm-up.
    tenant.get_drain("/api/v1/pods", "application/json").await?;
    let mut list = Vec::new();
    let mut table = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        tenant.get_drain("/api/v1/pods", "application/json").await?;
        list.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        tenant
            .get_drain("/api/v1/pods?limit=500", TABLE_ACCEPT)
            .await?;
        table.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((list, table))
}

/// Median and p99 in ms.
pub fn summary(v: &[f64]) -> (f64, f64) {
    (median(v), pct(v, 99.0))
}
