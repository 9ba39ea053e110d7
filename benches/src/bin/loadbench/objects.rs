//! The objects the benchmarks work on: the tenant's namespaces, ConfigMaps, and kwok pods
//! shaped like a Deployment's.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http::Method;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::client::{Api, wait_until};

/// Creates a namespace through paddock as the tenant (so paddock provisions its bindings).
pub async fn tenant_namespace(tenant: &Api, name: &str) -> Result<()> {
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    let (status, b) = tenant
        .call(
            Method::POST,
            "/api/v1/namespaces",
            Some(Bytes::from(body.to_string())),
        )
        .await?;
    if !(status.is_success() || status == http::StatusCode::CONFLICT) {
        bail!(
            "creating namespace {name}: {status}: {}",
            String::from_utf8_lossy(&b)
        );
    }
    Ok(())
}

/// Creates (or replaces) a ConfigMap; returns its resourceVersion.
pub async fn put_configmap(api: &Api, ns: &str, name: &str, data: Value) -> Result<String> {
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data});
    let (status, b) = api
        .call(
            Method::POST,
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            Some(Bytes::from(body.to_string())),
        )
        .await?;
    let b = if status == http::StatusCode::CONFLICT {
        api.ok(
            Method::GET,
            &format!("/api/v1/namespaces/{ns}/configmaps/{name}"),
            None,
        )
        .await?
    } else if status.is_success() {
        b
    } else {
        bail!(
            "creating configmap {ns}/{name}: {status}: {}",
            String::from_utf8_lossy(&b)
        );
    };
    rv_of(&b)
}

pub fn rv_of(b: &[u8]) -> Result<String> {
    let v: Value = serde_json::from_slice(b).context("an object")?;
    v["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_owned)
        .context("no metadata.resourceVersion")
}

/// The names of the kwok nodes.
pub async fn kwok_nodes(admin: &Api) -> Result<Vec<String>> {
    let b = admin
        .ok(Method::GET, "/api/v1/nodes?labelSelector=type%3Dkwok", None)
        .await?;
    let v: Value = serde_json::from_slice(&b)?;
    let names: Vec<String> = v["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        bail!("no kwok nodes");
    }
    Ok(names)
}

/// A pod shaped like a Deployment's: labels, annotations, probes, env, resources, volumes.
/// The apiserver adds defaults, the service-account volume and managedFields; kwok adds a
/// Running status.
pub fn pod_body(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app": "web", "pod-template-hash": "5d8fc7b9", "tier": "frontend", "team": "payments"},
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z",
                "prometheus.io/scrape": "true", "prometheus.io/port": "9090"
            }
        },
        "spec": {
            "nodeName": node,
            "containers": [{
                "name": "web",
                "image": "registry.example.com/team/web:1.27.3",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
                "env": [{"name": "LOG_LEVEL", "value": "info"}],
                "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
                "volumeMounts": [{"name": "config", "readOnly": true, "mountPath": "/etc/web"}],
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10}
            }],
            "volumes": [{"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}}],
            "terminationGracePeriodSeconds": 30
        }
    })
}

/// Creates `n` pods in the upstream namespace `ns` directly (as the admin), `conc` at a time;
/// existing ones are kept. Waits until kwok reports all of them Running.
pub async fn create_pods(admin: &Api, ns: &str, prefix: &str, n: usize, conc: usize) -> Result<()> {
    let nodes = Arc::new(kwok_nodes(admin).await?);
    let t0 = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..conc {
        let admin = admin.clone();
        let next = next.clone();
        let nodes = nodes.clone();
        let ns = ns.to_owned();
        let prefix = prefix.to_owned();
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<(), anyhow::Error>(());
                }
                let body = pod_body(&format!("{prefix}-{i:05}"), &nodes[i % nodes.len()]);
                let path = format!("/api/v1/namespaces/{ns}/pods");
                let mut attempt = 0;
                loop {
                    let (status, b) = admin
                        .call(Method::POST, &path, Some(Bytes::from(body.to_string())))
                        .await?;
                    if status.is_success() || status == http::StatusCode::CONFLICT {
                        break;
                    }
                    // The namespace's ServiceAccount may not exist yet; APF may say 429.
                    attempt += 1;
                    if attempt > 40 {
                        bail!(
                            "creating pod {i} in {ns}: {status}: {}",
                            String::from_utf8_lossy(&b)
                        );
                    }
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.context("pod creator")??;
    }
    let created = t0.elapsed();
    let path =
        format!("/api/v1/namespaces/{ns}/pods?fieldSelector=status.phase%21%3DRunning&limit=1");
    wait_until(
        "kwok to mark the pods Running",
        Duration::from_secs(600),
        || {
            let admin = admin.clone();
            let path = path.clone();
            async move {
                let b = admin.ok(Method::GET, &path, None).await?;
                let v: Value = serde_json::from_slice(&b)?;
                Ok(v["items"].as_array().is_some_and(Vec::is_empty))
            }
        },
    )
    .await?;
    eprintln!(
        "  {n} pods in {ns}: created in {:.1} s, all Running after {:.1} s",
        created.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
