//! Where a platform request's extra latency at many tenants comes from (issue 37, "APF with
//! many tenants"): after the scale part's last size, with both replicas stopped (nothing of
//! paddock's runs, nothing is repaired), the platform ServiceAccount's GETs again with every
//! tenant object in place; then without the tenants' own FlowSchemas (API Priority and
//! Fairness matches each request against every schema ahead of the one it lands in); then
//! also without the tenants' ClusterRoleBindings (the RBAC authorizer reads every binding for
//! a request no earlier rule allowed). Each step's GETs against the no-paddock baseline's
//! tell what each costs another user's request.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{Context, Result};
use http::Method;
use serde_json::Value;

use crate::client::Api;
use crate::procstat::Proc;
use crate::setup::settle;
use crate::stats::{ms, pct, ratio};

/// paddock's labels (paddock_core::tenant): an object made for a tenant, and its owner.
const MANAGED_FOR: &str = "paddock.io%2Fmanaged-for";
const TENANT: &str = "paddock.io%2Ftenant";
const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";

/// One step: what was in place and the platform's GET latencies (ms).
pub(crate) struct Step {
    pub what: &'static str,
    pub flow_schemas: usize,
    pub cluster_role_bindings: usize,
    pub gets: Vec<f64>,
}

async fn count(admin: &Api, path: &str) -> Result<usize> {
    let (s, body) = admin.call(Method::GET, path, None).await?;
    let v: Value = serde_json::from_slice(&body).with_context(|| format!("{path}: {s}"))?;
    v["items"]
        .as_array()
        .map(Vec::len)
        .with_context(|| format!("{path}: no items ({s})"))
}

async fn step(
    what: &'static str,
    admin: &Api,
    platform: &Api,
    apiserver: Proc,
    gets: (usize, u32),
) -> Result<Step> {
    settle(apiserver, Duration::from_secs(60)).await;
    let flow_schemas = count(admin, FLOW_SCHEMAS).await?;
    let cluster_role_bindings = count(admin, BINDINGS).await?;
    eprintln!(
        "  attribution, {what}: {flow_schemas} FlowSchemas, {cluster_role_bindings} ClusterRoleBindings"
    );
    let gets = super::scale_idle::platform_gets(platform, gets.0, gets.1).await?;
    Ok(Step {
        what,
        flow_schemas,
        cluster_role_bindings,
        gets,
    })
}

/// The three steps; the replicas must be stopped already.
pub(crate) async fn attribution(
    admin: &Api,
    platform: &Api,
    apiserver: Proc,
    gets: (usize, u32),
) -> Result<Vec<Step>> {
    let mut steps = vec![
        step(
            "paddock stopped, every tenant object in place",
            admin,
            platform,
            apiserver,
            gets,
        )
        .await?,
    ];
    admin
        .ok(
            Method::DELETE,
            &format!("{FLOW_SCHEMAS}?labelSelector={MANAGED_FOR}"),
            None,
        )
        .await?;
    steps.push(
        step(
            "without the tenants' FlowSchemas",
            admin,
            platform,
            apiserver,
            gets,
        )
        .await?,
    );
    for label in [TENANT, MANAGED_FOR] {
        admin
            .ok(
                Method::DELETE,
                &format!("{BINDINGS}?labelSelector={label}"),
                None,
            )
            .await?;
    }
    steps.push(
        step(
            "also without the tenants' ClusterRoleBindings",
            admin,
            platform,
            apiserver,
            gets,
        )
        .await?,
    );
    Ok(steps)
}

/// The table, against the no-paddock baseline's GETs.
pub(crate) fn write(d: &mut String, tenants: usize, base: &[f64], steps: &[Step]) {
    let _ = writeln!(
        d,
        "#### What a platform GET pays at {tenants} tenants, by cause (replicas stopped)\n\n| state | FlowSchemas | ClusterRoleBindings | platform GET p50 / p99 ms | p99 / baseline p99 |\n|---|---|---|---|---|\n| no paddock, no tenant (baseline) | – | – | {} / {} | 1.00 |",
        ms(pct(base, 50.0)),
        ms(pct(base, 99.0)),
    );
    for s in steps {
        let _ = writeln!(
            d,
            "| {} | {} | {} | {} / {} | {} |",
            s.what,
            s.flow_schemas,
            s.cluster_role_bindings,
            ms(pct(&s.gets, 50.0)),
            ms(pct(&s.gets, 99.0)),
            ratio(pct(&s.gets, 99.0) / pct(base, 99.0)),
        );
    }
    let _ = writeln!(d);
}
