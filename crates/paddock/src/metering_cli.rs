//! `paddock tenant set-billing`, `--billing-label` at creation, and `paddock tenant usage`
//! (docs/metering.md).

use anyhow::{Result, bail};
use http::Method;
use serde_json::{Map, Value, json};

use crate::Output;
use crate::admin_client::{AdminClient, check_as};

use paddock_api::paths::TENANTS;
use paddock_api::tenant::Tenant;
use paddock_api::usage::TenantUsage;

/// `k=v` sets a key, `k-` removes it (a JSON null in the merge patch).
fn parse_changes(what: &str, pairs: &[String]) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    for p in pairs {
        if let Some((k, v)) = p.split_once('=') {
            m.insert(k.to_string(), Value::String(v.to_string()));
        } else if let Some(k) = p.strip_suffix('-') {
            m.insert(k.to_string(), Value::Null);
        } else {
            bail!("{what} {p:?} is neither k=v nor k-")
        }
    }
    Ok(m)
}

/// `spec.billing` of a new tenant from `--billing-label`/`--billing-annotation` k=v pairs.
pub fn billing_spec(labels: &[String], annotations: &[String]) -> Result<Value> {
    let l = parse_changes("billing label", labels)?;
    let a = parse_changes("billing annotation", annotations)?;
    if l.values().chain(a.values()).any(Value::is_null) {
        bail!("a new tenant's billing key takes k=v pairs only");
    }
    Ok(json!({"labels": l, "annotations": a}))
}

/// PATCH `tenants/<id>/billing` with the changes; returns the tenant.
pub async fn set_billing(
    client: &AdminClient,
    id: &str,
    labels: &[String],
    annotations: &[String],
) -> Result<Tenant> {
    let mut patch = Map::new();
    if !labels.is_empty() {
        patch.insert(
            "labels".into(),
            Value::Object(parse_changes("label", labels)?),
        );
    }
    if !annotations.is_empty() {
        patch.insert(
            "annotations".into(),
            Value::Object(parse_changes("annotation", annotations)?),
        );
    }
    if patch.is_empty() {
        bail!("nothing to change: give --label k=v|k- or --annotation k=v|k-");
    }
    check_as(
        client
            .call(
                Method::PATCH,
                &format!("{TENANTS}/{id}/billing"),
                Some(&Value::Object(patch)),
            )
            .await?,
        &format!("setting the billing key of tenant {id}"),
    )
}

impl AdminClient {
    /// GET `tenants/<id>/usage`.
    pub async fn usage(&self, id: &str) -> Result<TenantUsage> {
        check_as(
            self.call(Method::GET, &format!("{TENANTS}/{id}/usage"), None)
                .await?,
            &format!("reading the usage of tenant {id}"),
        )
    }
}

/// The usage report: as is for `-o json|yaml`, else one figure a line (each part's fields in
/// the order of the report).
pub fn print_usage(report: &TenantUsage, output: Output) -> Result<()> {
    if crate::output::structured(std::slice::from_ref(report), output)? {
        return Ok(());
    }
    let mut rows: Vec<(String, String)> = Vec::new();
    let mut flatten = |prefix: &str, v: &Value| {
        if let Some(m) = v.as_object() {
            for (k, x) in m {
                rows.push((format!("{prefix}{k}"), cell(x)));
            }
        }
    };
    let current = serde_json::to_value(&report.current)?;
    let counters = serde_json::to_value(&report.replica)?;
    flatten("", &strip(&strip(&current, "objects"), "clusters"));
    flatten("objects.", &serde_json::to_value(&report.current.objects)?);
    // A tenant on several clusters: each cluster's figures after the sum.
    for (name, part) in &report.current.clusters {
        let part = serde_json::to_value(part)?;
        flatten(&format!("clusters.{name}."), &strip(&part, "objects"));
        flatten(&format!("clusters.{name}.objects."), &part["objects"]);
    }
    flatten("", &strip(&counters, "requests"));
    for (verb, classes) in &report.replica.requests.0 {
        flatten(
            &format!("requests.{verb}."),
            &serde_json::to_value(classes)?,
        );
    }
    flatten("quota.", &serde_json::to_value(&report.quota)?);
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    println!("{:<width$}   VALUE", "FIGURE");
    for (k, v) in rows {
        println!("{k:<width$}   {v}");
    }
    Ok(())
}

fn strip(v: &Value, key: &str) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove(key);
    }
    v
}

fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}
