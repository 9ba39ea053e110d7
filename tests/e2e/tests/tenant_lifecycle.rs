//! A tenant's suspension, deletion protection and time-to-live (issue 41, acceptance checks 1
//! and 3; docs/operations.md "Suspend, protection and TTL") against the real control plane,
//! paddock as a real process, real kubectl:
//!
//! - `tenant suspend`: through paddock, the tenant's writes (create, patch, scale, delete,
//!   exec, a namespace label) are refused with a 403 `Status` naming the suspension, for its
//!   admin and for its pod's service-account token presented to paddock; its reads still work
//!   (get, logs, `auth can-i`). Straight at the apiserver, the same token and the tenant's
//!   impersonated identity are refused by the guard, and so is the tenant's identity removing
//!   the namespace's mark. A Deployment scaled up by the platform admin while suspended gets
//!   no new pod: kube-controller-manager's creations are refused (its FailedCreate event names
//!   the suspension). `tenant resume`: every one of those writes goes through again (the
//!   controls), and the Deployment's pods are created at once (its ReplicaSet is touched).
//! - `tenant suspend --stop-workloads`: the Deployment scaled to zero and the CronJob
//!   suspended upstream, recorded; `tenant resume` brings both back.
//! - deletion protection: `tenant delete` refused naming the policy, then allowed after
//!   `tenant protect --unprotect`.
//! - TTL: a tenant created with `--ttl 20s` is listed with its EXPIRES and a warning, and its
//!   deletion is started by the leader after 20 s; one with a TTL of 3 s and protection is
//!   held (the list says so) until the protection is lifted, then deleted at once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::token::token_kubeconfig;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

const T: &str = "suspnd";
const PROTECTED: &str = "protec";
const TTL: &str = "ttlone";
const HELD: &str = "ttlhld";
const REFUSAL: &str = "paddock policy suspension";

fn within(limit: Duration, what: &str, f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    paddock_e2e::process::poll_within(limit, Duration::from_millis(200), what, f)
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs `a` (with `extra` flags) and returns (success, stdout + stderr).
fn attempt(k: &Kubectl, a: &[&str], extra: &[String]) -> Result<(bool, String)> {
    let mut all = args(a);
    all.extend(extra.iter().cloned());
    let (_, out) = k.run_raw(&all, None, &BTreeMap::new(), None)?;
    Ok((out.success(), format!("{}{}", out.stdout, out.stderr)))
}

/// `a` is refused, its message naming the suspension.
fn refused(k: &Kubectl, a: &[&str], extra: &[String]) -> Result<()> {
    let (ok, text) = attempt(k, a, extra)?;
    ensure!(
        !ok && text.contains(REFUSAL),
        "expected a refusal naming the suspension for kubectl {a:?}, got success={ok}: {text}"
    );
    Ok(())
}

/// `a` succeeds (a control).
fn allowed(k: &Kubectl, a: &[&str], extra: &[String]) -> Result<String> {
    let (ok, text) = attempt(k, a, extra)?;
    ensure!(ok, "expected kubectl {a:?} to succeed: {text}");
    Ok(text)
}

/// The tenant's identity straight at the apiserver (as paddock impersonates it).
fn real_admin(t: &str) -> Vec<String> {
    vec![
        format!("--as=paddock:{t}:admin"),
        format!("--as-group=paddock:{t}:tenant-admins"),
        format!("--as-group=paddock:tenant:{t}"),
    ]
}

/// Its cluster (shadow) identity, which writes its namespaces.
fn shadow_admin(t: &str) -> Vec<String> {
    vec![
        format!("--as=paddock:cluster:{t}:paddock:{t}:admin"),
        format!("--as-group=paddock:cluster:{t}:paddock:{t}:tenant-admins"),
        format!("--as-group=paddock:tenant:{t}"),
        "--as-group=paddock:tenant-cluster-scope-admins".to_owned(),
    ]
}

/// Running pods of the Deployment `web` upstream.
fn running_pods(up: &Kubectl, ns: &str) -> Result<usize> {
    let phases = up.run(&[
        "-n",
        ns,
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={range .items[*]}{.status.phase} {end}",
    ])?;
    Ok(phases
        .split_whitespace()
        .filter(|p| *p == "Running")
        .count())
}

fn pods(up: &Kubectl, ns: &str) -> Result<usize> {
    let names = up.run(&["-n", ns, "get", "pods", "-l", "app=web", "-o", "name"])?;
    Ok(names.lines().count())
}

/// `paddock <a>`: (success, stdout, stderr).
fn cli(p: &Paddock, a: &[&str]) -> Result<(bool, String, String)> {
    let (_, out) = p.cli_raw(&args(a), Duration::from_secs(60))?;
    Ok((out.success(), out.stdout, out.stderr))
}

/// The tenant's phase, or `None` once it is gone.
fn phase(p: &Paddock, id: &str) -> Result<Option<String>> {
    let (ok, out, err) = cli(p, &["tenant", "get", id, "-o", "json"])?;
    if !ok {
        ensure!(err.contains("not found"), "tenant get {id}: {err}");
        return Ok(None);
    }
    let v: serde_json::Value = serde_json::from_str(&out)?;
    Ok(v["status"]["phase"].as_str().map(str::to_owned))
}

/// Its deletion has started (it is being deleted, or gone already).
fn deleting(p: &Paddock, id: &str) -> Result<bool> {
    Ok(phase(p, id)?.is_none_or(|ph| ph == "Terminating"))
}

#[test]
fn suspend_resume_protection_and_ttl() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let started = Instant::now();
    let p = Paddock::start(&cp, StoreKind::Embedded)?;
    let up = cp.kubectl_admin()?;

    // ---- TTL tenants first: their clocks run while the rest is tested ---------------------
    let ttl_created = Instant::now();
    p.cli(&["tenant", "create", TTL, "--ttl", "20s"])?;
    p.cli(&[
        "tenant",
        "create",
        HELD,
        "--ttl",
        "3s",
        "--deletion-protection",
    ])?;
    let (_, list, warnings) = cli(&p, &["tenant", "list"])?;
    let row = list
        .lines()
        .find(|l| l.starts_with(TTL))
        .unwrap_or_default();
    // The TTL counts from the next whole second after the create, so right after it the
    // list says "in 21s" at most; a slow machine may already be a few seconds in.
    let expires_in = row
        .split_whitespace()
        .skip_while(|w| *w != "in")
        .nth(1)
        .and_then(|w| w.strip_suffix('s'))
        .and_then(|n| n.parse::<u64>().ok());
    ensure!(
        list.lines().next().is_some_and(|h| h.contains("EXPIRES"))
            && expires_in.is_some_and(|s| (10..=21).contains(&s)),
        "tenant list without the TTL's EXPIRES (in 10s to 21s):\n{list}"
    );
    ensure!(
        warnings.contains(&format!("warning: tenant {TTL} is deleted in")),
        "tenant list without a warning for {TTL}: {warnings}"
    );
    println!("tenant list with a TTL of 20 s:\n{list}{warnings}");

    // ---- a tenant with a Deployment, a CronJob, a ConfigMap and a robot --------------------
    let k = p.kubectl_tenant(T)?;
    let ns = format!("{T}-default");
    k.run(&[
        "create",
        "deployment",
        "web",
        "--image=registry.k8s.io/pause:3.10",
        "--replicas=1",
    ])?;
    k.run(&[
        "create",
        "cronjob",
        "tick",
        "--image=registry.k8s.io/pause:3.10",
        "--schedule=*/30 * * * *",
    ])?;
    k.run(&["create", "configmap", "keep", "--from-literal=a=1"])?;
    k.run(&["create", "serviceaccount", "robot"])?;
    k.run(&[
        "create",
        "rolebinding",
        "robot",
        "--clusterrole=edit",
        "--serviceaccount=default:robot",
    ])?;
    let token = k.run(&["create", "token", "robot", "--duration=1h"])?;
    let token = token.trim();
    let direct = Kubectl::new(token_kubeconfig(
        p.dir(),
        "robot-direct",
        &cp.admin_kubeconfig(),
        token,
    )?)?;
    let robot = Kubectl::new(token_kubeconfig(
        p.dir(),
        "robot-paddock",
        &p.tenant(T)?,
        token,
    )?)?;
    within(
        Duration::from_secs(60),
        "the Deployment's pod Running",
        || Ok(running_pods(&up, &ns)? == 1),
    )?;
    let pod = up.run(&["-n", &ns, "get", "pods", "-l", "app=web", "-o", "name"])?;
    let pod = pod
        .lines()
        .next()
        .context("no pod")?
        .trim_start_matches("pod/")
        .to_owned();
    // The robot's token works straight at the apiserver before the suspension.
    allowed(&direct, &["-n", &ns, "create", "configmap", "before"], &[])?;

    // ---- suspend ------------------------------------------------------------------------------
    let t0 = Instant::now();
    let (ok, shown, err) = cli(&p, &["tenant", "suspend", T])?;
    ensure!(
        ok && shown.contains("Suspended"),
        "tenant suspend: {shown}{err}"
    );
    println!(
        "FIGURE tenant suspend took {:.2} s",
        t0.elapsed().as_secs_f64()
    );

    // Through paddock: every write refused, naming the suspension.
    let writes: Vec<Vec<&str>> = vec![
        vec!["create", "configmap", "during"],
        vec!["patch", "configmap", "keep", "-p", r#"{"data":{"a":"2"}}"#],
        vec!["scale", "deployment", "web", "--replicas=2"],
        vec!["delete", "configmap", "keep"],
        vec!["label", "namespace", "default", "x=y"],
        vec!["create", "namespace", "more"],
        vec!["exec", &pod, "--", "echo", "hi"],
    ];
    for w in &writes {
        refused(&k, w, &[])?;
    }
    refused(&robot, &["create", "configmap", "robot-during"], &[])?;
    // Reads stay allowed (docs/operations.md): objects, logs, access reviews.
    allowed(&k, &["get", "deployment", "web"], &[])?;
    allowed(&k, &["get", "configmap", "keep"], &[])?;
    allowed(&k, &["logs", &pod], &[])?;
    allowed(&k, &["auth", "can-i", "create", "configmaps"], &[])?;
    allowed(&robot, &["get", "configmaps"], &[])?;
    println!(
        "through paddock: {} writes refused, reads allowed",
        writes.len() + 1
    );

    // Straight at the apiserver: the pod's token and the impersonated identity are refused
    // by the guard (once the apiserver sees the namespaces' mark).
    let took = within(
        Duration::from_secs(15),
        "the guard refusing the pod's token",
        || {
            let (ok, text) = attempt(&direct, &["-n", &ns, "create", "configmap", "bypass"], &[])?;
            ensure!(ok || text.contains(REFUSAL), "refused otherwise: {text}");
            Ok(!ok)
        },
    )?;
    println!(
        "FIGURE guard in force for the pod's token {:.2} s after suspend returned",
        took.as_secs_f64()
    );
    refused(&direct, &["-n", &ns, "delete", "configmap", "before"], &[])?;
    refused(
        &direct,
        &["-n", &ns, "scale", "deployment", "web", "--replicas=2"],
        &[],
    )?;
    refused(
        &up,
        &["-n", &ns, "create", "configmap", "as-tenant"],
        &real_admin(T),
    )?;
    // The tenant cannot lift the mark itself.
    refused(
        &up,
        &["label", "namespace", &ns, "paddock.io/suspended-"],
        &shadow_admin(T),
    )?;

    // A Deployment's controller cannot create pods: the platform admin scales it up.
    up.run(&["-n", &ns, "scale", "deployment", "web", "--replicas=3"])?;
    within(
        Duration::from_secs(20),
        "a FailedCreate naming the suspension",
        || {
            let events = up.run(&[
                "-n",
                &ns,
                "get",
                "events",
                "--field-selector=reason=FailedCreate",
                "-o",
                "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}",
            ])?;
            Ok(events.contains(REFUSAL))
        },
    )?;
    std::thread::sleep(Duration::from_secs(2));
    let during = pods(&up, &ns)?;
    ensure!(during == 1, "pods created while suspended: {during}");
    println!("scaled to 3 while suspended: still {during} pod, the ReplicaSet's creations refused");

    // ---- resume -------------------------------------------------------------------------------
    let t0 = Instant::now();
    let (ok, shown, err) = cli(&p, &["tenant", "resume", T])?;
    ensure!(
        ok && shown.contains("Active"),
        "tenant resume: {shown}{err}"
    );
    let back = within(
        Duration::from_secs(30),
        "three pods Running after resume",
        || Ok(running_pods(&up, &ns)? == 3),
    )?;
    println!(
        "FIGURE resume: 3 pods Running {:.2} s after resume was asked",
        (t0.elapsed().max(back)).as_secs_f64()
    );
    // The controls: every refused write goes through now.
    for w in &writes {
        allowed(&k, w, &[])?;
    }
    allowed(&robot, &["create", "configmap", "robot-during"], &[])?;
    within(
        Duration::from_secs(15),
        "the pod's token writing again",
        || Ok(attempt(&direct, &["-n", &ns, "create", "configmap", "bypass"], &[])?.0),
    )?;
    allowed(&direct, &["-n", &ns, "delete", "configmap", "before"], &[])?;
    allowed(
        &up,
        &["-n", &ns, "create", "configmap", "as-tenant"],
        &real_admin(T),
    )?;
    // ...and the mark stays the platform's: the tenant cannot set it either.
    refused(
        &up,
        &["label", "namespace", &ns, "paddock.io/suspended=true"],
        &shadow_admin(T),
    )?;
    println!(
        "after resume: the {} writes and the bypass writes go through",
        writes.len()
    );

    // ---- suspend --stop-workloads, resume -------------------------------------------------------
    p.cli(&["tenant", "suspend", T, "--stop-workloads"])?;
    let replicas = |k: &Kubectl| -> Result<String> {
        k.run(&[
            "-n",
            &ns,
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ])
    };
    let cron = || {
        up.run(&[
            "-n",
            &ns,
            "get",
            "cronjob",
            "tick",
            "-o",
            "jsonpath={.spec.suspend}",
        ])
    };
    ensure!(
        replicas(&up)? == "0",
        "Deployment not scaled to 0: {}",
        replicas(&up)?
    );
    ensure!(cron()? == "true", "CronJob not suspended: {}", cron()?);
    let recorded = up.run(&[
        "-n",
        &ns,
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.metadata.annotations.paddock\\.io/stopped}",
    ])?;
    ensure!(recorded == "2", "recorded replicas: {recorded:?}");
    within(Duration::from_secs(30), "the pods gone", || {
        Ok(pods(&up, &ns)? == 0)
    })?;
    p.cli(&["tenant", "resume", T])?;
    ensure!(
        replicas(&up)? == "2",
        "Deployment not brought back: {}",
        replicas(&up)?
    );
    ensure!(cron()? == "false", "CronJob still suspended: {}", cron()?);
    within(
        Duration::from_secs(30),
        "two pods Running after resume",
        || Ok(running_pods(&up, &ns)? == 2),
    )?;
    println!("--stop-workloads: Deployment 2 -> 0 -> 2, CronJob suspended and back");

    // ---- deletion protection ----------------------------------------------------------------
    p.cli(&["tenant", "create", PROTECTED, "--deletion-protection"])?;
    let (ok, _, err) = cli(&p, &["tenant", "delete", PROTECTED])?;
    ensure!(
        !ok && err.contains("paddock policy deletion-protection") && err.contains("protected"),
        "tenant delete of a protected tenant: ok={ok} {err}"
    );
    ensure!(
        phase(&p, PROTECTED)?.as_deref() == Some("Active"),
        "the protected tenant is being deleted"
    );
    p.cli(&["tenant", "protect", PROTECTED, "--unprotect"])?;
    p.cli(&["tenant", "delete", PROTECTED])?;
    ensure!(deleting(&p, PROTECTED)?, "not deleted after --unprotect");
    println!("protection: delete refused naming the policy, then started after --unprotect");

    // ---- TTL: deleted by the leader; the protected one held until lifted -----------------------
    let (_, list, warnings) = cli(&p, &["tenant", "list"])?;
    ensure!(
        warnings.contains(&format!("tenant {HELD}: its TTL (3s) ran out"))
            && warnings.contains("deletion protection is on"),
        "no warning that {HELD} is held by its protection:\n{list}{warnings}"
    );
    ensure!(
        phase(&p, HELD)?.as_deref() == Some("Active"),
        "{HELD} deleted despite its protection"
    );
    within(Duration::from_secs(40), "the TTL tenant's deletion", || {
        deleting(&p, TTL)
    })?;
    let after = ttl_created.elapsed().as_secs_f64();
    ensure!(
        after >= 20.0,
        "{TTL} deleted {after:.1} s after its creation, before its TTL"
    );
    println!("FIGURE TTL 20 s: deletion started {after:.1} s after the tenant's creation");
    let t0 = Instant::now();
    p.cli(&["tenant", "protect", HELD, "--unprotect"])?;
    within(
        Duration::from_secs(20),
        "the held tenant's deletion once unprotected",
        || deleting(&p, HELD),
    )?;
    println!(
        "FIGURE held tenant's deletion started {:.2} s after its protection was lifted",
        t0.elapsed().as_secs_f64()
    );
    println!(
        "test body {:.1} s after the control plane was up",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
