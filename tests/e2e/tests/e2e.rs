//! The end-to-end suite: ONE control plane and ONE paddock (etcd store) for the whole run; every
//! scenario of tests/e2e/scenarios/*.yaml runs against them, then the code-level checks (the
//! `kube` crate as a second client). Prints a per-scenario summary; fails if any scenario failed.
//!
//! `PADDOCK_E2E_SCENARIOS=ns,configmap` runs only scenarios whose name contains one of the words.
//! On failure the logs of every component are copied to target/e2e-logs/.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use paddock_e2e::scenario::{self, Env, Outcome, Status};
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::{ControlPlane, Paddock, StoreKind, kube_client};

fn selected(name: &str) -> bool {
    match std::env::var("PADDOCK_E2E_SCENARIOS") {
        Ok(f) if !f.trim().is_empty() => f.split(',').any(|w| name.contains(w.trim())),
        _ => true,
    }
}

/// Runs a scenario written as code against the running paddock (when selected): prints it,
/// its failure, and records its outcome.
fn run_code_scenario(
    outcomes: &mut Vec<Outcome>,
    paddock: &Result<Paddock>,
    name: &str,
    what: &str,
    f: impl FnOnce(&Paddock) -> Result<()>,
) {
    if !selected(name) {
        return;
    }
    eprintln!("---- scenario {name} ({what})");
    let o = code_scenario(name, || {
        let p = paddock
            .as_ref()
            .map_err(|e| anyhow::anyhow!("paddock is not running: {e:#}"))?;
        f(p)
    });
    if let Some(f) = &o.failure {
        eprintln!("FAILED {name}: {f}");
    }
    outcomes.push(o);
}

fn code_scenario(name: &str, f: impl FnOnce() -> Result<()>) -> Outcome {
    let t0 = Instant::now();
    let r = f();
    Outcome {
        name: name.to_owned(),
        status: if r.is_ok() {
            Status::Passed
        } else {
            Status::Failed
        },
        steps_passed: usize::from(r.is_ok()),
        steps_total: 1,
        elapsed: t0.elapsed(),
        failure: r.err().map(|e| format!("{e:#}")),
        cleanup_problems: Vec::new(),
    }
}

fn save_logs(cp: &ControlPlane) -> Result<()> {
    let dest = workspace_root().join("target").join("e2e-logs");
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::create_dir_all(&dest)?;
    for e in std::fs::read_dir(cp.dir().join("logs"))? {
        let p = e?.path();
        if let Some(n) = p.file_name() {
            std::fs::copy(&p, dest.join(n))?;
        }
    }
    eprintln!("component logs copied to {}", dest.display());
    Ok(())
}

#[test]
fn scenarios() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    eprintln!("control plane up in {:.1}s", cp.startup.as_secs_f64());
    let paddock = Paddock::start(&cp, StoreKind::Etcd);
    match &paddock {
        Ok(p) => eprintln!(
            "paddock ready at {} in {:.1}s",
            p.url(),
            p.startup.as_secs_f64()
        ),
        Err(e) => eprintln!("\n!!!! paddock did not start; its scenarios will fail:\n{e:#}\n"),
    }
    let env = Env {
        cp: &cp,
        paddock: paddock.as_ref().map_err(|e| format!("{e:#}")),
    };

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let all = scenario::load_dir(&dir)?;
    let mut outcomes = Vec::new();
    for sc in all.iter().filter(|s| selected(&s.name)) {
        eprintln!("---- scenario {} ({})", sc.name, sc.description.trim());
        for mut o in env.run_all(sc) {
            if let Ok(p) = &paddock {
                // A paddock that died (crash, or a signal from elsewhere) fails the scenario it died
                // in; it is restarted so that the remaining scenarios still tell something.
                match p.ensure_running() {
                    Ok(None) => {}
                    Ok(Some(status)) => {
                        o.status = Status::Failed;
                        let msg = format!(
                            "paddock exited ({status}) during this scenario and was restarted; see its log"
                        );
                        o.failure = Some(match o.failure.take() {
                            Some(f) => format!("{msg}\n{f}"),
                            None => msg,
                        });
                    }
                    Err(e) => eprintln!("restarting paddock failed: {e:#}"),
                }
            }
            if let Some(f) = &o.failure
                && o.status == Status::Failed
            {
                eprintln!("FAILED {}: {f}", o.name);
            }
            outcomes.push(o);
        }
    }

    run_code_scenario(
        &mut outcomes,
        &paddock,
        "kube-client",
        "the kube crate as a second client",
        |p| {
            let kc = p.tenant("kubers")?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            rt.block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(60),
                    kube_client::tenant_roundtrip(&kc, "from-kube-rs", &[]),
                )
                .await
                .context("timed out")?
            })?;
            // Upstream: the object lived in kubers-default and is gone now.
            let up = cp.kubectl_admin()?;
            let ns = up.run(&["get", "ns", "kubers-default", "-o", "name"])?;
            if ns.trim() != "namespace/kubers-default" {
                bail!("upstream namespace kubers-default missing: {ns}");
            }
            Ok(())
        },
    );
    run_code_scenario(
        &mut outcomes,
        &paddock,
        "impersonated-groups",
        "the identity upstream without system:authenticated sent",
        |p| paddock_e2e::identity_check::impersonated_groups(&cp, p, "whoami"),
    );
    run_code_scenario(
        &mut outcomes,
        &paddock,
        "guard-services",
        "no admission webhook: the guard's Service rule, bypassed translation",
        |p| paddock_e2e::guard_check::services_rule_without_webhook(&cp, p, "svcgrd"),
    );
    run_code_scenario(
        &mut outcomes,
        &paddock,
        "crd-first-writes",
        "issue 39: a cluster-scoped and a namespaced CRD and their first CRs, 50 times, 0 refused",
        |p| crd_first_writes(&cp, p),
    );

    let failed = scenario::print_summary(&outcomes);
    if failed > 0 {
        if let Ok(p) = &paddock {
            p.stop();
        }
        let _ = save_logs(&cp);
        bail!("{failed} of {} scenarios failed", outcomes.len());
    }
    Ok(())
}

/// Issue 39, acceptance 5 (paddock_e2e::crd_first): through paddock as a tenant, 50 rounds ten
/// at a time, no custom resource refused; the same method straight at the apiserver as its
/// admin (10 rounds) is the control. Well under a minute.
fn crd_first_writes(cp: &ControlPlane, p: &Paddock) -> Result<()> {
    let kc = p.tenant("crdfst")?;
    let tenant = paddock_e2e::crd_first::run(&kc, "first", "default", 50, 10)?;
    eprintln!("  through paddock: {tenant}");
    let direct = paddock_e2e::crd_first::run(&cp.admin_kubeconfig(), "direct", "default", 10, 10)?;
    eprintln!("  straight at the apiserver as its admin: {direct}");
    if !direct.refusals.is_empty() {
        bail!("the control refused: {:#?}", direct.refusals);
    }
    if !tenant.refusals.is_empty() || tenant.created != 100 {
        bail!(
            "{} of 100 first custom resources refused through paddock ({} created): {:#?}",
            tenant.refusals.len(),
            tenant.created,
            tenant.refusals
        );
    }
    Ok(())
}
