//! The bound on per-tenant series (docs/metering.md), measured with 1,000 tenants.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Instant;

use paddock_core::catalog::Scope;
use paddock_core::catalog::kinds;
use paddock_core::observe::usage::{UsageTally, counted_objects};
use serde_json::json;

use crate::observe::metering::{FIGURES, UsageSnapshot, VERBS, meter_response};
use crate::observe::metrics::Metrics;

/// Series one tenant can have at most (documented in docs/metering.md).
fn per_tenant_bound() -> usize {
    VERBS.len() * 4 // requests: verb × status class
    + 4 // request and response bytes, watch-seconds, open watches
    + FIGURES.len()
    + kinds::counted().count() // objects (pods and PVCs among them)
}

fn series(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .count()
}

/// Every tenant with every series it can have: the worst case of the bound, measured.
#[test]
fn series_per_tenant_are_bounded_with_1000_tenants() {
    let m = Arc::new(Metrics::new());
    let baseline = series(&m.encode());
    let mut tally = UsageTally::default();
    const TENANTS: usize = 1000;
    for i in 0..TENANTS {
        let t = format!("t{i:05}");
        let ns = format!("{t}-default");
        for verb in VERBS {
            for code in [200, 304, 404, 500] {
                m.observe(&t, verb, code, 0.001);
            }
        }
        m.tenant.request(&t, 10);
        drop(meter_response(
            paddock_upstream::body::full(b"x".to_vec()),
            &m.tenant,
            &t,
            true,
        ));
        tally.add_namespace(&json!({"metadata": {"name": ns, "labels": {"paddock.io/tenant": t}}}));
        tally.add_pod(&json!({"metadata": {"namespace": ns}, "status": {"phase": "Running"},
            "spec": {"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Mi"}, "limits": {"cpu": "1", "memory": "1Mi"}}}]}}));
        tally.add_pvc(&json!({"metadata": {"namespace": ns}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}));
        for k in counted_objects(Scope::Namespaced) {
            tally.add_namespaced(&k.qualified(), &json!({"metadata": {"namespace": ns}}));
        }
        for k in counted_objects(Scope::Cluster) {
            tally.add_cluster(&k.qualified(), &json!({"metadata": {"name": format!("{t}-x"), "labels": {"paddock.io/tenant": t}}, "spec": {"group": format!("{t}-g.io")}}));
        }
    }
    let usage = Arc::new(crate::observe::metering::UsageFigures::default());
    usage.figures.store(Some(Arc::new(UsageSnapshot {
        tally,
        uncounted: Vec::new(),
        observed_at: String::new(),
        at: Instant::now(),
    })));
    m.tenant.clusters.set(vec![usage]);
    let t0 = Instant::now();
    let text = m.encode();
    let took = t0.elapsed();
    let total = series(&text);
    // The latency histogram has one series per verb (its buckets), not per tenant.
    let per_tenant = (total - baseline - histogram_series(&text)) / TENANTS;
    let bound = per_tenant_bound();
    eprintln!(
        "1000 tenants: {total} series, {} KiB, encoded in {took:?}; {per_tenant} per tenant (bound {bound})",
        text.len() / 1024
    );
    assert_eq!(per_tenant, bound);
    assert_eq!(total, baseline + histogram_series(&text) + TENANTS * bound);
}

fn histogram_series(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with("paddock_request_duration_seconds"))
        .count()
}
