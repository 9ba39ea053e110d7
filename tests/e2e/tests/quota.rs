//! Tenant-wide quota (issue 15, docs/quota.md) against the real control plane, paddock as a
//! real process on etcd, real kubectl:
//! - the admin sets a quota at `tenant create --quota` and with `tenant quota set`; a bad
//!   resource name or quantity is refused naming it; `tenant quota get` shows used/hard;
//! - the tenant reads it read-only as `tenantquotas.paddock.io` (in its discovery, `kubectl
//!   get` with a used/hard column, `kubectl describe`), cannot change or delete it, cannot
//!   read another tenant's, and cannot reach the admin quota API (each with its control);
//! - `namespaces: 3`: the tenant's 4th namespace is refused with the apiserver's quota
//!   message shape; deleting one frees the slot within seconds; the used figures are the same
//!   after a paddock restart.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};
use serde_json::Value;

/// Runs kubectl expecting failure; returns stderr.
fn refused(k: &Kubectl, args: &[&str]) -> Result<String> {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let (line, out) = k.run_raw(&args, None, &Default::default(), None)?;
    if out.success() {
        bail!("expected a refusal: {line}\nstdout: {}", out.stdout);
    }
    Ok(out.stderr)
}

/// Polls `f` until it holds (at most `limit`); how long that took.
fn within(limit: Duration, what: &str, mut f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    let t0 = Instant::now();
    loop {
        if f()? {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > limit {
            bail!("{what}: not within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn used(k: &Kubectl, resource: &str) -> Result<String> {
    let q: Value =
        serde_json::from_str(&k.run(&["get", "tenantquota", "tenant-quota", "-o", "json"])?)?;
    Ok(q["status"]["used"][resource]
        .as_str()
        .unwrap_or("?")
        .to_string())
}

#[test]
fn tenant_quota_api_view_and_namespace_count() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let p = Paddock::start_with_args(
        &cp,
        StoreKind::Etcd,
        "paddock",
        &["--quota-recount-interval".into(), "1s".into()],
    )?;

    // --- admin: quota at creation, validation, get/set ---
    let kc = p.cli(&[
        "tenant",
        "create",
        "qtaone",
        "--quota",
        "namespaces=3,count/configmaps=20",
        "--quota",
        "pods=10",
    ])?;
    let kc_path = p.dir().join("qtaone.kubeconfig");
    std::fs::write(&kc_path, kc)?;
    let k = Kubectl::new(&kc_path)?
        .cache_dir(p.dir().join("kc-qtaone"))
        .log(p.log_path());
    let shown = p.cli(&["tenant", "quota", "get", "qtaone"])?;
    ensure!(
        shown.contains("namespaces") && shown.contains("count/configmaps") && shown.contains("10"),
        "{shown}"
    );
    for (bad, says) in [
        ("nodes=1", "not a resource a tenant quota can limit"),
        ("pods=lots", "quantities must match"),
    ] {
        let (_, out) = p.cli_raw(
            &[
                "tenant".into(),
                "quota".into(),
                "set".into(),
                "qtaone".into(),
                bad.into(),
            ],
            Duration::from_secs(30),
        )?;
        ensure!(
            !out.success() && out.stderr.contains(says),
            "{bad}: {}",
            out.stderr
        );
    }
    p.cli(&["tenant", "quota", "set", "qtaone", "requests.cpu=2"])?;
    let q: Value =
        serde_json::from_str(&p.cli(&["tenant", "quota", "get", "qtaone", "-o", "json"])?)?;
    ensure!(
        q["status"]["hard"]["requests.cpu"] == "2" && q["status"]["hard"]["pods"] == "10",
        "{q}"
    );

    // --- tenant: discovery, get, describe ---
    let resources = k.run(&["api-resources", "--api-group=paddock.io"])?;
    ensure!(
        resources.contains("tenantquotas") && resources.contains("TenantQuota"),
        "{resources}"
    );
    let table = k.run(&["get", "tenantquotas"])?;
    ensure!(
        table.contains("tenant-quota") && table.contains("namespaces: 0/3"),
        "{table}"
    );
    let described = k.run(&["describe", "tenantquota", "tenant-quota"])?;
    ensure!(
        described.contains("configmaps") && described.contains("TenantQuota"),
        "{described}"
    );

    // --- namespaces: 3 (the four default namespaces are the platform's) ---
    for ns in ["one", "two", "three"] {
        k.run(&["create", "namespace", ns])?;
    }
    let err = refused(&k, &["create", "namespace", "four"])?;
    ensure!(
        err.contains("exceeded quota: tenant-quota, requested: namespaces=1, used: namespaces=3, limited: namespaces=3"),
        "{err}"
    );
    ensure!(
        err.contains("Forbidden") || err.contains("forbidden"),
        "{err}"
    );
    // a dry run is answered the same and reserves nothing
    let err = refused(&k, &["create", "namespace", "four", "--dry-run=server"])?;
    ensure!(err.contains("exceeded quota"), "{err}");
    ensure!(
        used(&k, "namespaces")? == "3",
        "used after refusals: {}",
        used(&k, "namespaces")?
    );

    // --- deletes free the quota within seconds ---
    k.run(&[
        "delete",
        "namespace",
        "three",
        "--wait=true",
        "--timeout=60s",
    ])?;
    let freed = within(Duration::from_secs(20), "namespace slot freed", || {
        Ok(used(&k, "namespaces")? == "2")
    })?;
    eprintln!(
        "FIGURE quota freed {:.1}s after the namespace was gone",
        freed.as_secs_f64()
    );
    k.run(&["create", "namespace", "four"])?;

    // --- same figures after a restart ---
    let before = k.run(&[
        "get",
        "tenantquota",
        "tenant-quota",
        "-o",
        "jsonpath={.status.used}",
    ])?;
    p.terminate(Duration::from_secs(30))?;
    p.restart()?;
    let after = k.run(&[
        "get",
        "tenantquota",
        "tenant-quota",
        "-o",
        "jsonpath={.status.used}",
    ])?;
    ensure!(
        before == after,
        "used before restart {before}, after {after}"
    );

    // --- isolation: read-only, own only, no admin API; each with its control ---
    let err = refused(&k, &["delete", "tenantquota", "tenant-quota"])?;
    ensure!(
        err.contains("Forbidden") || err.contains("forbidden"),
        "{err}"
    );
    let err = refused(
        &k,
        &[
            "patch",
            "tenantquota",
            "tenant-quota",
            "--type=merge",
            "-p",
            r#"{"spec":{"hard":{"namespaces":"100"}}}"#,
        ],
    )?;
    ensure!(
        err.contains("forbidden") || err.contains("Forbidden"),
        "{err}"
    );
    ensure!(
        used(&k, "namespaces")? == "3",
        "control: the tenant still reads its own quota"
    );
    p.tenant("qtatwo")?;
    p.cli(&["tenant", "quota", "set", "qtatwo", "pods=99"])?;
    let other = p.kubectl_tenant("qtatwo")?;
    let err = refused(&other, &["get", "tenantquota", "qtaone"])?;
    ensure!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );
    let mine = other.run(&[
        "get",
        "tenantquota",
        "tenant-quota",
        "-o",
        "jsonpath={.status.hard}",
    ])?;
    ensure!(
        mine.contains("99") && !mine.contains("namespaces"),
        "qtatwo sees its own quota only: {mine}"
    );
    let err = refused(
        &k,
        &[
            "get",
            "--raw",
            "/apis/paddock.io/v1alpha1/tenants/qtaone/quota",
        ],
    )?;
    ensure!(
        err.contains("Forbidden") || err.contains("forbidden"),
        "{err}"
    );
    // control: the admin reads it
    ensure!(
        p.cli(&["tenant", "quota", "get", "qtaone"])?
            .contains("namespaces")
    );
    Ok(())
}
