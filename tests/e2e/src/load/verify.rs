//! The verdict's evidence: the final state upstream (read as the admin, not through paddock),
//! compared with what the workers saw acknowledged and what each watch saw; and the clean-up.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use http::{Method, StatusCode};
use serde_json::Value;

use super::report::{Report, WatchLog};
use super::{RUN_LABEL, Shared, Spec, TenantLoad};
use crate::http::Tls;

/// Publishes the final state for the watches, which stop once they have seen it.
pub(super) fn publish_targets(shared: &Shared, finals: &BTreeMap<String, BTreeMap<String, Obj>>) {
    let t = finals
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.iter().map(|(n, o)| (n.clone(), o.rv.clone())).collect(),
            )
        })
        .collect();
    *shared.targets.lock() = Some(t);
}

/// Whether a watch of `tenant` has seen the final state (once it is published).
pub(super) fn target_reached(
    shared: &Shared,
    tenant: &str,
    seen: &BTreeMap<String, String>,
) -> bool {
    shared
        .targets
        .lock()
        .as_ref()
        .and_then(|t| t.get(tenant).map(|m| m == seen))
        .unwrap_or(false)
}

/// An object of the load as it is upstream at the end.
#[derive(Debug, Clone)]
pub(super) struct Obj {
    rv: String,
    seq: String,
    n: u64,
}

/// The load's objects of `t` upstream, by name.
pub(super) async fn upstream_state(
    admin: &Tls,
    t: &TenantLoad,
    spec: &Spec,
) -> Result<BTreeMap<String, Obj>> {
    let path = format!(
        "/api/v1/namespaces/{}/configmaps?labelSelector={RUN_LABEL}%3D{}",
        t.upstream_namespace(),
        spec.run
    );
    let (status, body) = admin
        .send(Method::GET, &path, None, Duration::from_secs(30))
        .await
        .map_err(|e| anyhow::anyhow!("listing the final state upstream: {e}"))?;
    anyhow::ensure!(
        status == StatusCode::OK,
        "listing the final state upstream: {status}"
    );
    let v: Value = serde_json::from_slice(&body)?;
    let mut out = BTreeMap::new();
    for item in v["items"].as_array().cloned().unwrap_or_default() {
        let name = item["metadata"]["name"].as_str().unwrap_or("").to_owned();
        out.insert(
            name,
            Obj {
                rv: item["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                seq: item["metadata"]["labels"]["seq"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                n: item["data"]["n"]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0),
            },
        );
    }
    Ok(out)
}

/// Acknowledged writes that are missing upstream (a create absent, a patch overwritten by an
/// older one) and creates present more than once.
pub(super) fn judge_writes(
    report: &mut Report,
    shared: &Shared,
    finals: &BTreeMap<String, BTreeMap<String, Obj>>,
) {
    let acked = shared.acked_creates.lock().clone();
    let unknown = shared.unknown_creates.lock().clone();
    let patches = shared.patches.lock().clone();
    report.creates_acked = acked.len();
    report.patches_acked = patches.values().filter(|(n, _)| *n > 0).count();
    for (tenant, objs) in finals {
        let mut by_seq: BTreeMap<&str, Vec<&Obj>> = BTreeMap::new();
        for o in objs.values() {
            by_seq.entry(o.seq.as_str()).or_default().push(o);
        }
        for (seq, name) in acked
            .iter()
            .filter(|(s, _)| s.starts_with(&format!("{tenant}-")))
        {
            match by_seq.get(seq.as_str()).map(Vec::len).unwrap_or(0) {
                0 => report
                    .lost_writes
                    .push(format!("create {seq} ({name}) acknowledged but absent")),
                1 => {}
                n => report
                    .duplicated_writes
                    .push(format!("create {seq} present {n} times")),
            }
        }
        for seq in unknown
            .iter()
            .filter(|s| s.starts_with(&format!("{tenant}-")))
        {
            let n = by_seq.get(seq.as_str()).map(Vec::len).unwrap_or(0);
            if n > 1 {
                report
                    .duplicated_writes
                    .push(format!("create {seq} (outcome unknown) present {n} times"));
            }
        }
        for (name, (acked_n, attempted)) in &patches {
            let Some(o) = objs.get(name) else { continue };
            if o.n < *acked_n || o.n > *attempted {
                report.lost_writes.push(format!(
                    "patch of {name}: upstream n={} but n={acked_n} was acknowledged (highest sent {attempted})",
                    o.n
                ));
            }
        }
    }
}

/// Objects whose final resourceVersion a watch of their tenant never saw.
pub(super) fn judge_watches(
    report: &mut Report,
    watch_logs: &[WatchLog],
    finals: &BTreeMap<String, BTreeMap<String, Obj>>,
    tenants: &[TenantLoad],
    spec: &Spec,
) {
    for (i, log) in watch_logs.iter().enumerate() {
        let tenant = &tenants[i / spec.watches.max(1)].tenant;
        if let Some(objs) = finals.get(tenant) {
            for (name, o) in objs {
                if log.seen.get(name) != Some(&o.rv) {
                    report.missed_events.push(format!(
                        "watch {i} of {tenant}: {name} at rv {} (saw {:?})",
                        o.rv,
                        log.seen.get(name)
                    ));
                }
            }
        }
    }
}

/// Deletes the load's objects upstream.
pub(super) async fn clean_up(admin: &Tls, tenants: &[TenantLoad], spec: &Spec) -> Result<()> {
    // Leave nothing behind: the next run starts below the tenant's namespace quota
    // (1000 ConfigMaps).
    for t in tenants {
        let path = format!(
            "/api/v1/namespaces/{}/configmaps?labelSelector={RUN_LABEL}%3D{}",
            t.upstream_namespace(),
            spec.run
        );
        match admin
            .send(Method::DELETE, &path, None, Duration::from_secs(60))
            .await
        {
            Ok((s, _)) if s.is_success() => {}
            Ok((s, b)) => anyhow::bail!(
                "deleting the load's objects upstream: {s}: {}",
                String::from_utf8_lossy(&b)
            ),
            Err(e) => anyhow::bail!("deleting the load's objects upstream: {e}"),
        }
    }
    Ok(())
}
