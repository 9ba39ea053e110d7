//! Issue 39, acceptance 5: a cluster-scoped and a namespaced CRD and the first custom resource
//! of each, back to back, many times, with no refusal. A tenant gets a cluster admin's answer;
//! a cluster admin is never refused its own custom resources.
//!
//! Each round creates two CRDs of groups of their own (so the tenant's grant changes every
//! time), then, once discovery shows each (as the Kubernetes e2e framework's CRD helpers wait,
//! polled every 50 ms here), the first custom resource of each. A 404 before the CRD is served
//! is what a cluster admin gets too: the create is tried again after 20 ms. Anything else that
//! is not a 201 counts as a refusal. Each round then deletes its CRDs (as the conformance tests
//! do when they end), so the grant narrows while other rounds' CRDs are created. Rounds run
//! `workers` at a time, so grants are written side by side, while namespaces are created and
//! deleted beside them (so the leader's resync judges the tenant, from its caches, while it
//! changes).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::http::Tls;

/// The longest one custom resource's create may keep answering 404.
const SERVED_WITHIN: Duration = Duration::from_secs(30);
const ONE_REQUEST: Duration = Duration::from_secs(30);

/// What the rounds saw.
#[derive(Debug, Default)]
pub struct Report {
    pub rounds: usize,
    /// Custom resources created (two a round).
    pub created: usize,
    /// Every answer that was neither a 201 nor a 404 before the CRD was served.
    pub refusals: Vec<String>,
    /// 404s answered before a CRD was served (retried).
    pub not_yet_served: usize,
    pub elapsed: Duration,
    /// The slowest CRD create's answer (it waits for the grant).
    pub slowest_crd_create: Duration,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} rounds in {:.1}s: {} custom resources created, {} refused, {} early 404s retried, slowest CRD create {} ms",
            self.rounds,
            self.elapsed.as_secs_f64(),
            self.created,
            self.refusals.len(),
            self.not_yet_served,
            self.slowest_crd_create.as_millis()
        )
    }
}

fn crd(group: &str, plural: &str, kind: &str, scope: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}"), "labels": {"e2e": "crd-first"}},
        "spec": {"group": group, "scope": scope,
                 "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

/// Runs `rounds` rounds, `workers` at a time, with the client certificate of `kubeconfig`
/// (a tenant's through paddock, or the upstream admin's). Groups are `<prefix><i>c.e2e.io`
/// (cluster-scoped) and `<prefix><i>n.e2e.io` (namespaced, its resources in `namespace`).
pub fn run(
    kubeconfig: &Path,
    prefix: &str,
    namespace: &str,
    rounds: usize,
    workers: usize,
) -> Result<Report> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let tls = Tls::from_kubeconfig(kubeconfig, None)?;
    let report = Arc::new(Mutex::new(Report {
        rounds,
        ..Report::default()
    }));
    let started = Instant::now();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    rt.block_on(async {
        // Namespaces come and go meanwhile, as in a conformance run: the leader's resync judges
        // the tenant while its objects change, with new namespaces to set up.
        let churn = tokio::spawn(churn_namespaces(
            tls.clone(),
            prefix.to_owned(),
            done.clone(),
        ));
        let mut tasks = Vec::new();
        for w in 0..workers {
            let (tls, report) = (tls.clone(), report.clone());
            let (prefix, namespace) = (prefix.to_owned(), namespace.to_owned());
            tasks.push(tokio::spawn(async move {
                for i in (w..rounds).step_by(workers) {
                    one_round(&tls, &prefix, &namespace, i, &report).await?;
                }
                Ok::<_, anyhow::Error>(())
            }));
        }
        let mut outcome = Ok(());
        for t in tasks {
            if let Err(e) = t.await.context("a worker panicked").and_then(|r| r) {
                outcome = Err(e);
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        churn.await.context("the namespace churn panicked")??;
        outcome
    })?;
    let mut r = std::mem::take(&mut *report.lock().map_err(|_| anyhow!("report lock"))?);
    r.elapsed = started.elapsed();
    Ok(r)
}

/// Creates a namespace every 100 ms (and a request's time) and deletes it 300 ms later, until
/// `done`.
async fn churn_namespaces(
    tls: Tls,
    prefix: String,
    done: Arc<std::sync::atomic::AtomicBool>,
) -> Result<()> {
    let mut i = 0;
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        let name = format!("{prefix}-churn-{i}");
        let ns = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": name}}))?;
        let (status, answer) = tls
            .send(
                Method::POST,
                "/api/v1/namespaces",
                Some(("application/json", ns)),
                ONE_REQUEST,
            )
            .await
            .map_err(|e| anyhow!("creating namespace {name}: {e}"))?;
        anyhow::ensure!(
            status == StatusCode::CREATED,
            "creating namespace {name}: {status} {}",
            String::from_utf8_lossy(&answer)
        );
        let tls = tls.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let _ = tls
                .send(
                    Method::DELETE,
                    &format!("/api/v1/namespaces/{name}"),
                    None,
                    ONE_REQUEST,
                )
                .await;
        });
        i += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

async fn one_round(
    tls: &Tls,
    prefix: &str,
    namespace: &str,
    i: usize,
    report: &Mutex<Report>,
) -> Result<()> {
    let kinds = [
        (format!("{prefix}{i}c.e2e.io"), "things", "Thing", "Cluster"),
        (
            format!("{prefix}{i}n.e2e.io"),
            "gadgets",
            "Gadget",
            "Namespaced",
        ),
    ];
    for (group, plural, kind, scope) in &kinds {
        let body = serde_json::to_vec(&crd(group, plural, kind, scope))?;
        let t0 = Instant::now();
        let (status, answer) = tls
            .send(
                Method::POST,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                Some(("application/json", body)),
                ONE_REQUEST,
            )
            .await
            .map_err(|e| anyhow!("creating CRD {plural}.{group}: {e}"))?;
        let took = t0.elapsed();
        anyhow::ensure!(
            status == StatusCode::CREATED,
            "creating CRD {plural}.{group}: {status} {}",
            String::from_utf8_lossy(&answer)
        );
        {
            let mut r = report.lock().map_err(|_| anyhow!("report lock"))?;
            r.slowest_crd_create = r.slowest_crd_create.max(took);
        }
    }
    for (group, plural, kind, scope) in &kinds {
        let path = if *scope == "Cluster" {
            format!("/apis/{group}/v1/{plural}")
        } else {
            format!("/apis/{group}/v1/namespaces/{namespace}/{plural}")
        };
        let cr = json!({"apiVersion": format!("{group}/v1"), "kind": kind,
                        "metadata": {"name": "first"}, "spec": {"unknown": "uk1"}});
        let body = serde_json::to_vec(&cr)?;
        let t0 = Instant::now();
        // As the Kubernetes e2e framework's CRD helpers do: until discovery shows it.
        loop {
            let (status, answer) = tls
                .send(Method::GET, &format!("/apis/{group}/v1"), None, ONE_REQUEST)
                .await
                .map_err(|e| anyhow!("discovery of {group}/v1: {e}"))?;
            let listed = status == StatusCode::OK
                && serde_json::from_slice::<Value>(&answer).is_ok_and(|v| {
                    v["resources"]
                        .as_array()
                        .is_some_and(|rs| rs.iter().any(|r| r["name"] == *plural))
                });
            if listed {
                break;
            }
            anyhow::ensure!(
                t0.elapsed() < SERVED_WITHIN,
                "{plural}.{group} not in discovery after {SERVED_WITHIN:?}: {status}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        loop {
            let (status, answer) = tls
                .send(
                    Method::POST,
                    &path,
                    Some(("application/json", body.clone())),
                    ONE_REQUEST,
                )
                .await
                .map_err(|e| anyhow!("creating the first {kind} of {group}: {e}"))?;
            let again = {
                let mut r = report.lock().map_err(|_| anyhow!("report lock"))?;
                match status {
                    StatusCode::CREATED => {
                        r.created += 1;
                        false
                    }
                    StatusCode::NOT_FOUND if t0.elapsed() < SERVED_WITHIN => {
                        r.not_yet_served += 1;
                        true
                    }
                    s => {
                        r.refusals.push(format!(
                            "{scope} {kind} of {group}, {} ms into its first create: {s} {}",
                            t0.elapsed().as_millis(),
                            String::from_utf8_lossy(&answer[..answer.len().min(400)])
                        ));
                        false
                    }
                }
            };
            if !again {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // Deleted at once, as the conformance tests' deferred deletions do: the tenant's grant
    // narrows while other rounds' CRDs are being created.
    for (group, plural, ..) in &kinds {
        let path =
            format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{group}");
        let (status, answer) = tls
            .send(Method::DELETE, &path, None, ONE_REQUEST)
            .await
            .map_err(|e| anyhow!("deleting CRD {plural}.{group}: {e}"))?;
        anyhow::ensure!(
            status.is_success(),
            "deleting CRD {plural}.{group}: {status} {}",
            String::from_utf8_lossy(&answer)
        );
    }
    Ok(())
}
