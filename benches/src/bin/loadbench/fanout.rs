//! The fan-out part: `get pods -A` for a tenant alone and among many tenants.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use http::Method;
use paddock_e2e::Paddock;
use serde_json::json;

use crate::client::{Api, Cred, Proto};
use crate::objects;
use crate::procstat::Proc;
use crate::setup::settle;
use crate::stats::{median, ms};
use crate::{Args, scale};

/// The `get pods -A` benchmark; returns (median alone, median among), details.
pub(crate) async fn fanout_bench(
    args: &Args,
    p: &Paddock,
    admin: &Api,
    apiserver: Proc,
) -> Result<(f64, f64, String)> {
    let id = "fanout";
    let cred = Cred::from_kubeconfig(&p.tenant(id)?)?;
    let tenant = Api::new(&cred, Proto::H2)?;
    // The tenant has its four default namespaces; the rest it creates itself.
    let extra = args.fanout_namespaces.saturating_sub(4);
    let t0 = Instant::now();
    for i in 0..extra {
        objects::tenant_namespace(&tenant, &format!("ns-{i:03}")).await?;
    }
    eprintln!(
        "  {extra} namespaces created through paddock in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    // Two pods in each.
    let mut nss: Vec<String> = ["default", "kube-system", "kube-public", "kube-node-lease"]
        .iter()
        .map(|s| format!("{id}-{s}"))
        .collect();
    nss.extend((0..extra).map(|i| format!("{id}-ns-{i:03}")));
    for ns in &nss {
        objects::create_pods(admin, ns, "app", 2, 2).await?;
    }
    let reps = if args.quick { 5 } else { 20 };
    let (alone, alone_t) = scale::get_all(&tenant, reps).await?;
    eprintln!(
        "  alone: list median {} ms, Table median {} ms",
        ms(median(&alone)),
        ms(median(&alone_t))
    );

    // The other tenants: each with its default namespaces (created by paddock) plus ten
    // more namespaces with a pod in each, created upstream directly with the tenant label.
    let others = args.fanout_tenants.saturating_sub(1);
    let t0 = Instant::now();
    for t in 0..others {
        let tid = format!("ot{t:04}");
        let body = json!({"apiVersion": "paddock.io/v1alpha1", "kind": "Tenant", "metadata": {"name": tid}});
        let padmin = Api::new(&Cred::from_kubeconfig(&p.admin_kubeconfig())?, Proto::H2)?;
        let (status, b) = padmin
            .call(
                Method::POST,
                "/apis/paddock.io/v1alpha1/tenants",
                Some(bytes::Bytes::from(body.to_string())),
            )
            .await?;
        if !(status.is_success() || status == http::StatusCode::CONFLICT) {
            bail!("tenant {tid}: {status}: {}", String::from_utf8_lossy(&b));
        }
        let names: Vec<String> = (0..10).map(|i| format!("{tid}-x{i:02}")).collect();
        scale::upstream_tenant_namespaces(admin, &tid, names.clone(), 10).await?;
        for ns in &names {
            objects::create_pods(admin, ns, "app", 1, 1).await?;
        }
    }
    eprintln!(
        "  {others} other tenants with 10 extra namespaces and a pod in each: {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    // Namespaces created behind paddock's back get their setup (RoleBinding, NetworkPolicy,
    // quota, pod-security label) from its resync, driven by watches (about a second after
    // each namespace is seen; at most 30 s later before it was), and the
    // controllers and kwok are still busy with the new namespaces and pods: wait for both, so
    // that "among" measures the cluster's size, not its churn. (Measured before this wait,
    // a resync pass setting up a few hundred namespaces at once made `get -A` 1.9-2.2x.)
    let t_setup = Instant::now();
    loop {
        let body = admin
            .ok(
                Method::GET,
                "/api/v1/namespaces?labelSelector=paddock.io%2Ftenant",
                None,
            )
            .await?;
        let list: serde_json::Value = serde_json::from_slice(&body)?;
        let missing = list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|n| {
                        n["metadata"]["labels"]["pod-security.kubernetes.io/enforce"].is_null()
                    })
                    .count()
            })
            .unwrap_or(0);
        if missing == 0 {
            break;
        }
        if t_setup.elapsed() > Duration::from_secs(120) {
            bail!("{missing} tenant namespaces still without paddock's setup after 120 s");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    eprintln!(
        "  paddock's resync had set up every namespace after {:.0} s",
        t_setup.elapsed().as_secs_f64()
    );
    let quiet = settle(apiserver, Duration::from_secs(120)).await;
    eprintln!("  apiserver quiet after {:.0} s", quiet.as_secs_f64());
    let (among, among_t) = scale::get_all(&tenant, reps).await?;
    eprintln!(
        "  among {} tenants: list median {} ms, Table median {} ms",
        args.fanout_tenants,
        ms(median(&among)),
        ms(median(&among_t))
    );
    let mut d = String::new();
    let _ = writeln!(
        d,
        "### `get pods -A` of a tenant with {} namespaces (2 pods each), {reps} requests each\n",
        args.fanout_namespaces
    );
    let _ = writeln!(
        d,
        "| cluster | list p50 | list p99 | Table p50 | Table p99 |\n|---|---|---|---|---|"
    );
    for (label, l, t) in [
        ("the tenant alone".to_string(), &alone, &alone_t),
        (
            format!(
                "among {} tenants ({} namespaces more)",
                args.fanout_tenants,
                others * 14
            ),
            &among,
            &among_t,
        ),
    ] {
        let (l50, l99) = scale::summary(l);
        let (t50, t99) = scale::summary(t);
        let _ = writeln!(
            d,
            "| {label} | {} | {} | {} | {} |",
            ms(l50),
            ms(l99),
            ms(t50),
            ms(t99)
        );
    }
    let _ = writeln!(d);
    // The goal is about kubectl: the Table request.
    Ok((median(&alone_t), median(&among_t), d))
}
