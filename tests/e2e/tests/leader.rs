//! Leader election on a Lease (docs/operations.md "Leadership", issue 37) against the real
//! control plane, two paddock replicas as real processes sharing one etcd store:
//!
//! - exactly one replica holds the Lease (read straight from the apiserver with the admin
//!   kubectl), and exactly one says `paddock_leader 1` on its `/metrics`;
//! - idle, the election costs each replica well under a request a second (its own counter of
//!   Lease reads and writes, over 20 s);
//! - the holder is killed (SIGKILL: no release): the other takes the Lease within 20 s and
//!   repairs a template drift made right after the kill (a locked NetworkPolicy deleted
//!   straight at the apiserver) within 20 s of the kill;
//! - the holder is stopped gracefully (SIGTERM): it releases the Lease and the other takes it
//!   at once.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};
use serde_json::Value;

const TENANT: &str = "ldraaa";
const LEASE_NS: &str = "paddock-system";
const LEASE: &str = "paddock-leader";
const ISOLATION: &str = "paddock-tenant-isolation";

fn within(limit: Duration, what: &str, f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    paddock_e2e::process::poll_within(limit, Duration::from_millis(100), what, f)
}

fn args(identity: &str) -> Vec<String> {
    [
        "--template-sync-interval",
        "1s",
        "--leader-identity",
        identity,
        "--leader-name",
        LEASE,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

#[test]
fn one_replica_leads_and_another_takes_over() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let r1 = Paddock::start_with_args(&cp, StoreKind::Etcd, "replica1", &args("replica1"))?;
    let r2 = Paddock::start_replica(&cp, &r1, "replica2", &args("replica2"))?;
    let replicas = [("replica1", &r1), ("replica2", &r2)];
    let up = cp.kubectl_admin()?;
    r1.tenant(TENANT)?;
    let ns = format!("{TENANT}-default");
    within(
        Duration::from_secs(30),
        "the tenant namespace stamped",
        || Ok(has_isolation(&up, &ns)),
    )?;

    // ---- exactly one holder ---------------------------------------------------------------------
    within(Duration::from_secs(20), "a holder of the Lease", || {
        Ok(!holder(&up)?.is_empty())
    })?;
    let first = holder(&up)?;
    let leading: Vec<&str> = replicas
        .iter()
        .filter(|(_, r)| metric(r, "paddock_leader").ok() == Some(1.0))
        .map(|(n, _)| *n)
        .collect();
    println!("Lease held by {first}; paddock_leader 1 on {leading:?}");
    ensure!(
        leading == [first.as_str()],
        "exactly the holder leads: {leading:?}"
    );
    let (holder_p, other_p, other_name) = if first == "replica1" {
        (&r1, &r2, "replica2")
    } else {
        (&r2, &r1, "replica1")
    };

    // ---- idle cost ------------------------------------------------------------------------------
    let counter = "paddock_leader_election_requests_total";
    let before = [metric(holder_p, counter)?, metric(other_p, counter)?];
    let idle = Duration::from_secs(20);
    std::thread::sleep(idle);
    let after = [metric(holder_p, counter)?, metric(other_p, counter)?];
    let rate = |i: usize| (after[i] - before[i]) / idle.as_secs_f64();
    println!(
        "idle {}s: Lease requests/s: holder {:.2}, other {:.2}",
        idle.as_secs(),
        rate(0),
        rate(1)
    );
    ensure!(
        rate(0) < 0.5,
        "the holder's Lease requests: {:.2}/s",
        rate(0)
    );
    ensure!(
        rate(1) < 0.2,
        "the other's Lease requests: {:.2}/s",
        rate(1)
    );
    let transitions = lease(&up)?["spec"]["leaseTransitions"]
        .as_u64()
        .unwrap_or(0);

    // ---- SIGKILL of the holder: no release; the other takes over at expiry ----------------------
    holder_p.kill()?;
    let killed = Instant::now();
    up.run(&["delete", "networkpolicy", ISOLATION, "-n", &ns])?;
    let took = within(
        Duration::from_secs(20),
        "the other replica holds the Lease",
        || Ok(holder(&up)? == other_name),
    )?;
    within(
        Duration::from_secs(20).saturating_sub(killed.elapsed()),
        "the deleted NetworkPolicy back",
        || Ok(has_isolation(&up, &ns)),
    )?;
    let repaired_at = killed.elapsed();
    println!(
        "SIGKILL of the holder: Lease taken by {other_name} {:.2} s after the kill; deleted NetworkPolicy back {:.2} s after the kill",
        took.as_secs_f64(),
        repaired_at.as_secs_f64()
    );
    ensure!(
        metric(other_p, "paddock_leader")? == 1.0,
        "the new holder leads"
    );
    ensure!(
        lease(&up)?["spec"]["leaseTransitions"].as_u64() == Some(transitions + 1),
        "one more transition counted"
    );

    // ---- SIGTERM of the holder: released, taken at once ------------------------------------------
    holder_p.restart()?;
    let (back_name, back_p) = (first.as_str(), holder_p);
    std::thread::sleep(Duration::from_secs(2));
    ensure!(
        holder(&up)? == other_name,
        "a restarted replica waits while the Lease is held"
    );
    ensure!(metric(back_p, "paddock_leader")? == 0.0);
    let (stopped, status) = other_p.terminate(Duration::from_secs(30))?;
    let took = within(
        Duration::from_secs(20),
        "the restarted replica holds the Lease",
        || Ok(holder(&up)? == back_name),
    )?;
    println!(
        "SIGTERM of the holder ({status} after {:.2} s): Lease taken by {back_name} {:.2} s after it exited",
        stopped.as_secs_f64(),
        took.as_secs_f64()
    );
    ensure!(
        took < Duration::from_secs(5),
        "a released Lease is taken at once (took {took:?})"
    );
    within(Duration::from_secs(10), "the new holder's metric", || {
        Ok(metric(back_p, "paddock_leader")? == 1.0)
    })?;
    Ok(())
}

fn lease(up: &Kubectl) -> Result<Value> {
    let out = up.run(&["get", "lease", LEASE, "-n", LEASE_NS, "-o", "json"])?;
    Ok(serde_json::from_str(&out)?)
}

/// The Lease's holder; empty when there is none (or no Lease yet).
fn holder(up: &Kubectl) -> Result<String> {
    Ok(match lease(up) {
        Ok(l) => l["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        Err(_) => String::new(),
    })
}

fn has_isolation(up: &Kubectl, ns: &str) -> bool {
    up.run(&["get", "networkpolicy", ISOLATION, "-n", ns, "-o", "name"])
        .is_ok()
}

/// One unlabelled sample of a replica's `/metrics`.
fn metric(p: &Paddock, name: &str) -> Result<f64> {
    let text = p.kubectl_admin()?.run(&["get", "--raw", "/metrics"])?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .with_context(|| format!("no {name} on /metrics"))?
        .trim()
        .parse()
        .with_context(|| format!("{name} is not a number"))
}
