//! The watch-driven tenant resync (docs/operations.md "Leadership", issue 37 acceptance 2)
//! against the real control plane, two paddock replicas as real processes sharing one etcd
//! store. The platform admin drifts a tenant's upstream objects straight at the apiserver:
//!
//! - (a) deletes a mirror RoleBinding of the tenant's ClusterRoleBinding, (b) removes the
//!   billing label from a tenant namespace, (c) edits the tenant's FlowSchema
//!   (matchingPrecedence), (d) deletes a namespace template's stamped NetworkPolicy (the
//!   template sync's, tests/e2e/tests/templates_watch.rs has more): each is back within 5 s
//!   (measured);
//! - idle, the resync sends no LIST of the collections it watches, and writes none of them
//!   (a judgement that never agreed would write again at each echo of its own write): over
//!   65 s (longer than the old 30 s timer, so that timer's six LISTs would show, and than the
//!   60 s replay of every tenant from the caches, which must send nothing) the apiserver's own
//!   `apiserver_request_total` counts no LIST and no write of them (from either replica: the usage figures
//!   are kept from watches too);
//! - the Lease holder is SIGKILLed and (a)-(c) done again at once ((c) now a deletion of the
//!   FlowSchema): the other replica takes the Lease and repairs each within 20 s of the kill.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};
use serde_json::Value;

const T: &str = "rswaaa";
const LEASE_NS: &str = "paddock-system";
const LEASE: &str = "paddock-resync-leader";
const BILLING_LABEL: &str = "cost-center";
const ISOLATION: &str = "paddock-tenant-isolation";
/// The APF FlowSchema and priority level every tenant without its own shares.
const SHARED: &str = "paddock-tenants";
/// One of the admission guard's policies (and its binding's name), the second wall on RBAC.
const GUARD_RBAC: &str = "paddock-tenant-guard-rbac";
/// Verbs that must not reach the watched collections while nothing changes.
const IDLE_NONE: &[&str] = &["LIST", "APPLY", "PATCH", "CREATE", "UPDATE", "DELETE"];
/// What the resync watches, by `apiserver_request_total`'s resource label.
const WATCHED: &[&str] = &[
    "clusterrolebindings",
    "clusterroles",
    "customresourcedefinitions",
    "flowschemas",
    "namespaces",
    "prioritylevelconfigurations",
    "rolebindings",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
];

fn within(limit: Duration, what: &str, f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    paddock_e2e::process::poll_within(limit, Duration::from_millis(100), what, f)
}

/// A short Lease (6 s) keeps the takeover, and so the test, short.
fn args(identity: &str) -> Vec<String> {
    [
        "--template-sync-interval",
        "1s",
        "--leader-identity",
        identity,
        "--leader-name",
        LEASE,
        "--leader-lease-duration",
        "6s",
        "--leader-renew-deadline",
        "4s",
        "--leader-retry-period",
        "1s",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn mirror() -> String {
    format!("paddock:crb:{T}-readers")
}

fn flow_schema() -> String {
    format!("paddock-tenants-{T}-flow")
}

#[test]
fn drift_is_repaired_from_watches_by_the_leader_and_after_a_takeover() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let r1 = Paddock::start_with_args(&cp, StoreKind::Etcd, "replica1", &args("replica1"))?;
    let r2 = Paddock::start_replica(&cp, &r1, "replica2", &args("replica2"))?;
    let up = cp.kubectl_admin()?;
    let kc = r1.cli(&[
        "tenant",
        "create",
        T,
        // A FlowSchema of its own, to be edited and deleted below (tenants without go by
        // the shared one: docs/fairshare.md).
        "--limit",
        "apfFlow=tenant",
        "--billing-label",
        &format!("{BILLING_LABEL}=cc-1"),
    ])?;
    let path = r1.dir().join(format!("{T}.kubeconfig"));
    std::fs::write(&path, kc)?;
    let tk = Kubectl::new(&path)?
        .cache_dir(r1.dir().join("kc-tenant"))
        .log(r1.log_path());
    tk.run(&[
        "create",
        "clusterrole",
        "reader",
        "--verb=get,list",
        "--resource=configmaps",
    ])?;
    tk.run(&[
        "create",
        "clusterrolebinding",
        "readers",
        "--clusterrole=reader",
        "--user=alice",
    ])?;
    let ns = format!("{T}-default");
    within(Duration::from_secs(30), "everything in place", || {
        Ok(has(&up, "rolebinding", &mirror(), Some(&ns))
            && billing(&up, &ns)?.as_deref() == Some("cc-1")
            && precedence(&up)? == Some(7900)
            && has(&up, "networkpolicy", ISOLATION, Some(&ns)))
    })?;
    within(Duration::from_secs(20), "a holder of the Lease", || {
        Ok(!holder(&up)?.is_empty())
    })?;

    // ---- drift, repaired by the leader from its watches -----------------------------------------
    for (what, limit) in [
        ("(a) mirror RoleBinding", 5),
        ("(b) billing label", 5),
        ("(c) FlowSchema", 5),
        ("(d) template's NetworkPolicy", 5),
        ("(e) shared FlowSchema", 5),
        ("(f) shared priority level", 5),
        ("(g) guard policy", 5),
    ] {
        let limit = Duration::from_secs(limit);
        let t0 = Instant::now();
        drift(&up, &ns, what, false)?;
        within(limit, what, || repaired(&up, &ns, what))?;
        let took = t0.elapsed();
        println!("{what}: back {:.2} s after the edit", took.as_secs_f64());
        ensure!(took < limit, "{what} took {took:?}");
    }

    // ---- idle: no LIST and no write of what the resync watches -------------------------------
    std::thread::sleep(Duration::from_secs(3));
    let idle = Duration::from_secs(65);
    let before = requests(&up)?;
    std::thread::sleep(idle);
    let after = requests(&up)?;
    let mut busy = Vec::new();
    for (k, v) in &after {
        let d = v - before.get(k).copied().unwrap_or(0.0);
        if d > 0.0 {
            busy.push(format!("{} {} {} +{d}", k.0, k.1, k.2));
        }
    }
    println!(
        "idle {}s: LISTs and writes of the watched collections: {busy:?}",
        idle.as_secs()
    );
    ensure!(
        busy.is_empty(),
        "the apiserver saw LISTs or writes of the watched collections while nothing changed: {busy:?}"
    );

    // ---- SIGKILL of the holder; drift made at once; the other replica repairs ------------------
    let first = holder(&up)?;
    let (holder_p, other_name) = if first == "replica1" {
        (&r1, "replica2")
    } else {
        (&r2, "replica1")
    };
    holder_p.kill()?;
    let killed = Instant::now();
    for what in [
        "(a) mirror RoleBinding",
        "(b) billing label",
        "(c) FlowSchema",
        "(e) shared FlowSchema",
        "(f) shared priority level",
        "(g) guard policy",
    ] {
        drift(&up, &ns, what, true)?;
    }
    let took_over = within(
        Duration::from_secs(20),
        "the other replica holds the Lease",
        || Ok(holder(&up)? == other_name),
    )?;
    let mut back = Vec::new();
    for what in [
        "(a) mirror RoleBinding",
        "(b) billing label",
        "(c) FlowSchema",
        "(e) shared FlowSchema",
        "(f) shared priority level",
        "(g) guard policy",
    ] {
        within(
            Duration::from_secs(20).saturating_sub(killed.elapsed()),
            what,
            || repaired(&up, &ns, what),
        )?;
        back.push((what, killed.elapsed()));
    }
    println!(
        "SIGKILL of {first}: Lease taken by {other_name} {:.2} s after the kill",
        took_over.as_secs_f64()
    );
    for (what, at) in &back {
        println!("{what}: back {:.2} s after the kill", at.as_secs_f64());
        ensure!(
            *at < Duration::from_secs(20),
            "{what}: {at:?} after the kill"
        );
    }
    Ok(())
}

/// Makes one drift straight at the apiserver; `second` deletes the FlowSchema and the shared
/// objects instead of editing them.
fn drift(up: &Kubectl, ns: &str, what: &str, second: bool) -> Result<()> {
    match what {
        "(a) mirror RoleBinding" => {
            up.run(&["delete", "rolebinding", &mirror(), "-n", ns])?;
        }
        "(b) billing label" => {
            up.run(&["label", "namespace", ns, &format!("{BILLING_LABEL}-")])?;
        }
        "(c) FlowSchema" if second => {
            up.run(&["delete", "flowschema", &flow_schema()])?;
        }
        "(c) FlowSchema" => {
            up.run(&[
                "patch",
                "flowschema",
                &flow_schema(),
                "--type=merge",
                "-p",
                r#"{"spec":{"matchingPrecedence":100}}"#,
            ])?;
        }
        "(e) shared FlowSchema" if second => {
            up.run(&["delete", "flowschema", SHARED])?;
        }
        "(e) shared FlowSchema" => {
            up.run(&[
                "patch",
                "flowschema",
                SHARED,
                "--type=merge",
                "-p",
                r#"{"spec":{"matchingPrecedence":9990}}"#,
            ])?;
        }
        "(f) shared priority level" if second => {
            up.run(&["delete", "prioritylevelconfiguration", SHARED])?;
        }
        "(f) shared priority level" => {
            up.run(&[
                "patch",
                "prioritylevelconfiguration",
                SHARED,
                "--type=merge",
                "-p",
                r#"{"spec":{"limited":{"nominalConcurrencyShares":1}}}"#,
            ])?;
        }
        "(g) guard policy" if second => {
            up.run(&["delete", "validatingadmissionpolicybinding", GUARD_RBAC])?;
        }
        "(g) guard policy" => {
            up.run(&["delete", "validatingadmissionpolicy", GUARD_RBAC])?;
        }
        _ => {
            up.run(&["delete", "networkpolicy", ISOLATION, "-n", ns])?;
        }
    }
    Ok(())
}

fn repaired(up: &Kubectl, ns: &str, what: &str) -> Result<bool> {
    Ok(match what {
        "(a) mirror RoleBinding" => has(up, "rolebinding", &mirror(), Some(ns)),
        "(b) billing label" => billing(up, ns)?.as_deref() == Some("cc-1"),
        "(c) FlowSchema" => precedence(up)? == Some(7900),
        "(g) guard policy" => {
            has(up, "validatingadmissionpolicy", GUARD_RBAC, None)
                && has(up, "validatingadmissionpolicybinding", GUARD_RBAC, None)
        }
        "(e) shared FlowSchema" => {
            json(up, &["get", "flowschema", SHARED, "-o", "json"])?
                .and_then(|f| f["spec"]["matchingPrecedence"].as_u64())
                == Some(8000)
        }
        "(f) shared priority level" => {
            json(
                up,
                &["get", "prioritylevelconfiguration", SHARED, "-o", "json"],
            )?
            .and_then(|l| l["spec"]["limited"]["nominalConcurrencyShares"].as_u64())
                == Some(100)
        }
        _ => has(up, "networkpolicy", ISOLATION, Some(ns)),
    })
}

fn has(up: &Kubectl, kind: &str, name: &str, ns: Option<&str>) -> bool {
    let mut a = vec!["get", kind, name, "-o", "name"];
    if let Some(ns) = ns {
        a.extend(["-n", ns]);
    }
    up.run(&a).is_ok()
}

fn json(up: &Kubectl, args: &[&str]) -> Result<Option<Value>> {
    match up.run(args) {
        Ok(out) => Ok(Some(serde_json::from_str(&out)?)),
        Err(_) => Ok(None),
    }
}

fn billing(up: &Kubectl, ns: &str) -> Result<Option<String>> {
    Ok(
        json(up, &["get", "namespace", ns, "-o", "json"])?.and_then(|n| {
            n["metadata"]["labels"][BILLING_LABEL]
                .as_str()
                .map(str::to_owned)
        }),
    )
}

fn precedence(up: &Kubectl) -> Result<Option<u64>> {
    Ok(
        json(up, &["get", "flowschema", &flow_schema(), "-o", "json"])?
            .and_then(|f| f["spec"]["matchingPrecedence"].as_u64()),
    )
}

/// The Lease's holder; empty when there is none (or no Lease yet).
fn holder(up: &Kubectl) -> Result<String> {
    Ok(
        json(up, &["get", "lease", LEASE, "-n", LEASE_NS, "-o", "json"])?
            .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
            .unwrap_or_default(),
    )
}

/// `apiserver_request_total` of [`IDLE_NONE`]'s verbs, by (resource, scope, verb), for the
/// watched collections.
fn requests(up: &Kubectl) -> Result<BTreeMap<(String, String, String), f64>> {
    let text = up.run(&["get", "--raw", "/metrics"])?;
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let (labels, value) = rest.rsplit_once("} ").context("metric line")?;
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_string())
                .unwrap_or_default()
        };
        let resource = label("resource");
        let verb = label("verb");
        if !WATCHED.contains(&resource.as_str())
            || !IDLE_NONE.contains(&verb.as_str())
            || !label("subresource").is_empty()
        {
            continue;
        }
        *out.entry((resource, label("scope"), verb)).or_insert(0.0) +=
            value.trim().parse::<f64>()?;
    }
    Ok(out)
}
