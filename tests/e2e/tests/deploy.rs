//! deploy/: the Helm chart and the start-up self-check of paddock's upstream rights.
//!
//! - `helm lint deploy/chart` passes; `helm template` with the default and with the HA values
//!   is accepted by the test bed's apiserver (`kubectl apply --dry-run=server`);
//! - the ClusterRole the chart renders is exactly `required_rights()` (paddock-reconciler's rights.rs);
//! - paddock started with a ServiceAccount lacking rights of that table refuses to start and
//!   lists exactly those; with a ServiceAccount bound to the chart's ClusterRole (and nothing
//!   else) it starts, creates a tenant, serves it and deletes it;
//! - (ignored by default, `make test-static`): the statically linked binary the Dockerfile
//!   packages is built, checked static with `file`/`ldd`, and run against the test bed with the
//!   TLS etcd cluster reached by host name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use paddock_e2e::paddock::{paddock_binary, static_binary};
use paddock_e2e::process::{self, describe, free_port};
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::token::{sa_token_file_kubeconfig, service_account};
use paddock_e2e::tools::helm;
use paddock_e2e::{ControlPlane, EtcdCluster, Kubectl, Paddock, StoreKind};
use serde_json::Value;

fn chart() -> PathBuf {
    workspace_root().join("deploy").join("chart")
}

/// `helm template` of the chart with `values` files; the rendered YAML.
fn render(helm: &Path, values: &[&str], namespace: &str) -> Result<String> {
    let mut cmd = Command::new(helm);
    cmd.args(["template", "paddock"])
        .arg(chart())
        .args(["--namespace", namespace]);
    for v in values {
        cmd.arg("-f").arg(chart().join(v));
    }
    let out = process::run(&mut cmd, None, Duration::from_secs(60))?;
    if !out.success() {
        bail!("{} failed: {}", describe(&cmd), out.stderr);
    }
    Ok(out.stdout)
}

/// The documents of a multi-document YAML stream, as JSON.
fn documents(yaml: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for doc in yaml.split("\n---") {
        let v: Value = serde_norway::from_str(doc).context("rendered YAML")?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// A rule set: (group, resource, verb) triples, so the comparison ignores how rules are split.
fn triples(rules: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for r in rules.as_array().into_iter().flatten() {
        for g in r["apiGroups"].as_array().into_iter().flatten() {
            for res in r["resources"].as_array().into_iter().flatten() {
                for v in r["verbs"].as_array().into_iter().flatten() {
                    out.insert((
                        g.as_str().unwrap_or_default().to_owned(),
                        res.as_str().unwrap_or_default().to_owned(),
                        v.as_str().unwrap_or_default().to_owned(),
                    ));
                }
            }
        }
    }
    out
}

fn admin(cp: &ControlPlane) -> Result<Kubectl> {
    cp.kubectl_admin()
}

/// Runs `paddock serve` (embedded store) with `kubeconfig`; expects it to stop: its stderr.
fn serve_refused(cp: &ControlPlane, name: &str, kubeconfig: &Path) -> Result<String> {
    let bin = paddock_binary()?;
    let dir = cp.dir().join(name);
    let port = free_port()?;
    let mut init = Command::new(&bin);
    init.args(["ca", "init", "--dir"]).arg(dir.join("certs"));
    let out = process::run(&mut init, None, Duration::from_secs(60))?;
    if !out.success() {
        bail!("ca init: {}", out.stderr);
    }
    let mut serve = Command::new(&bin);
    serve
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--certs-dir",
        ])
        .arg(dir.join("certs"))
        .arg("--upstream-kubeconfig")
        .arg(kubeconfig)
        .args(["--store", "embedded", "--data-dir"])
        .arg(dir.join("data"))
        .args(["--log-format", "text"]);
    let out = process::run(&mut serve, None, Duration::from_secs(60))?;
    if out.success() || out.timed_out {
        bail!(
            "paddock started with a credential lacking rights:\n{}",
            out.stderr
        );
    }
    Ok(out.stderr)
}

/// The rendered paddock.toml is read by paddock's own loader: no unknown key, every value
/// parses; `paddock serve` gets as far as the first file the test cannot provide.
fn config_is_paddocks(docs: &[Value]) -> Result<()> {
    let cm = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap")
        .context("no ConfigMap rendered")?;
    let toml = cm["data"]["paddock.toml"]
        .as_str()
        .context("no paddock.toml in the ConfigMap")?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("paddock.toml");
    std::fs::write(&path, toml)?;
    let mut serve = Command::new(paddock_binary()?);
    serve
        .args(["serve", "--config"])
        .arg(&path)
        .env("PADDOCK_ALLOW_NON_LOOPBACK", "1");
    let out = process::run(&mut serve, None, Duration::from_secs(30))?;
    assert!(!out.success());
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("/etc/paddock/") && last.contains("does not exist"),
        "the chart's paddock.toml was not accepted up to its files: {last}"
    );
    Ok(())
}

/// The re-read interval of paddock's token file, plus slack for a loaded machine.
fn bearer_reread_bound() -> Duration {
    paddock_upstream::bearer::TOKEN_FILE_REREAD + Duration::from_secs(30)
}

#[test]
fn chart_and_self_check() -> Result<()> {
    let helm = helm()?;
    for values in [&[][..], &["values-ha.yaml"][..]] {
        let mut lint = Command::new(&helm);
        lint.arg("lint").arg(chart());
        for v in values {
            lint.arg("-f").arg(chart().join(v));
        }
        let out = process::run(&mut lint, None, Duration::from_secs(60))?;
        assert!(
            out.success(),
            "{}:\n{}{}",
            describe(&lint),
            out.stdout,
            out.stderr
        );
        eprintln!(
            "{}: {}",
            describe(&lint),
            out.stdout.lines().last().unwrap_or_default()
        );
    }

    // The chart's ClusterRole is the table paddock checks at start.
    let default = render(&helm, &[], "paddock-system")?;
    let docs = documents(&default)?;
    let role = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRole")
        .context("no ClusterRole rendered")?;
    let declared = paddock_reconciler::rights::cluster_role_rules();
    assert_eq!(
        triples(&role["rules"]),
        triples(&declared),
        "deploy/chart/templates/clusterrole.yaml differs from required_rights() in crates/paddock-reconciler/src/rights.rs"
    );
    assert_eq!(role["rules"], declared, "same rules, same order");
    // The one namespaced right, the leader election's Lease: a Role in the release namespace.
    let lease_role = docs
        .iter()
        .find(|d| d["kind"] == "Role")
        .context("no Role rendered")?;
    assert_eq!(lease_role["metadata"]["namespace"], "paddock-system");
    assert_eq!(
        lease_role["rules"],
        paddock_reconciler::rights::lease_role_rules(),
        "deploy/chart/templates/role.yaml differs from LEASE_RIGHT in crates/paddock-reconciler/src/rights.rs"
    );

    config_is_paddocks(&docs)?;

    let cp = ControlPlane::start()?;
    let kc = admin(&cp)?;
    kc.run(&["create", "namespace", "paddock-system"])?;
    for (name, values) in [("default", &[][..]), ("HA", &["values-ha.yaml"][..])] {
        let yaml = render(&helm, values, "paddock-system")?;
        let kinds: Vec<String> = documents(&yaml)?
            .iter()
            .map(|d| d["kind"].as_str().unwrap_or_default().to_owned())
            .collect();
        for k in [
            "Deployment",
            "Service",
            "PodDisruptionBudget",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "ConfigMap",
            "Secret",
        ] {
            assert!(kinds.iter().any(|x| x == k), "{name}: no {k} in {kinds:?}");
        }
        let out = kc.run_stdin(&["apply", "--dry-run=server", "-f", "-"], Some(&yaml))?;
        eprintln!("{name} values, server dry-run:\n{}", out.trim_end());
        assert_eq!(
            out.lines()
                .filter(|l| l.contains("(server dry run)"))
                .count(),
            kinds.len(),
            "{name}: every object accepted:\n{out}"
        );
    }

    // A credential lacking two rights: paddock names exactly those and stops.
    let mut rules: Vec<Value> = declared.as_array().cloned().unwrap_or_default();
    for r in &mut rules {
        let res = r["resources"][0].as_str().unwrap_or_default().to_owned();
        if let Some(verbs) = r["verbs"].as_array_mut() {
            verbs.retain(|v| {
                !(res == "namespaces" && v == "delete" || res == "clusterroles" && v == "escalate")
            });
        }
    }
    let lacking = service_account(&cp, "paddock-lacking", &Value::Array(rules))?;
    let stderr = serve_refused(&cp, "paddock-lacking", &lacking)?;
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("lacks 2 right(s) it needs: delete namespaces, escalate clusterroles.rbac.authorization.k8s.io"),
        "{last}\n--- stderr:\n{stderr}"
    );

    // Exactly the chart's ClusterRole: paddock starts, provisions a tenant and serves it. Its
    // token is read from a file, as in a pod.
    service_account(&cp, "paddock-least", &declared)?;
    let (least, token_file, old_token) =
        sa_token_file_kubeconfig(&cp, "paddock-system", "paddock-least")?;
    let p = Paddock::start_with_args(
        &cp,
        StoreKind::Embedded,
        "paddock-least",
        &["--upstream-kubeconfig".into(), least.display().to_string()],
    );
    let p = p.context("paddock with exactly the chart's ClusterRole")?;
    let t = p.kubectl_tenant("leastt")?;
    t.run(&["create", "configmap", "c", "--from-literal=a=b"])?;
    t.run(&["get", "configmap", "c"])?;

    // The token rotates (the kubelet replaces the projected token file) and the old one stops
    // working: paddock follows the file within a minute (client-go's re-read interval), without
    // a restart. Here the new token is another ServiceAccount's with the same ClusterRole, and
    // the old ServiceAccount is deleted, which invalidates its tokens.
    service_account(&cp, "paddock-least2", &declared)?;
    let (_, file2, _) = sa_token_file_kubeconfig(&cp, "paddock-system", "paddock-least2")?;
    let staged = token_file.with_extension("staged");
    std::fs::copy(&file2, &staged)?;
    std::fs::rename(&staged, &token_file)?;
    let rotated = std::time::Instant::now();
    admin(&cp)?.run(&[
        "delete",
        "serviceaccount",
        "paddock-least",
        "-n",
        "paddock-system",
    ])?;
    // The control: the old token is refused straight at the apiserver before paddock is judged.
    let old_kubeconfig = cp.dir().join("paddock-least-old.kubeconfig");
    std::fs::write(
        &old_kubeconfig,
        std::fs::read_to_string(&least)?.replace(
            &format!("tokenFile: {}", token_file.display()),
            &format!("token: {old_token}"),
        ),
    )?;
    let old = Kubectl::new(&old_kubeconfig)?;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match old.run(&["get", "namespaces"]) {
            Err(e) if format!("{e:#}").contains("Unauthorized") => break,
            _ if std::time::Instant::now() > deadline => {
                bail!("the deleted ServiceAccount's token still accepted after 30 s")
            }
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
    let refused_after = rotated.elapsed();
    let mut worked_after = None;
    while rotated.elapsed() < bearer_reread_bound() {
        if t.run(&["get", "configmap", "c"]).is_ok() {
            worked_after = Some(rotated.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let worked_after = worked_after.with_context(|| {
        format!(
            "tenant requests still failing {:?} after the upstream token file rotated",
            bearer_reread_bound()
        )
    })?;
    eprintln!(
        "token file rotated: the old token refused directly {refused_after:?} after, tenant requests through paddock work {worked_after:?} after"
    );
    // Requests are served as soon as the token is re-read; the upstream's health (a probe a
    // second, two good ones in a row) follows within seconds, and the usage report, which
    // refuses a cluster it does not count as answering, waits for it.
    p.wait_ready(Duration::from_secs(15))?;
    // The usage report with exactly these rights counts every kind but secrets (paddock holds
    // no `list` on secrets: docs/metering.md).
    let usage: Value = serde_json::from_str(&p.cli(&["tenant", "usage", "leastt", "-o", "json"])?)?;
    assert_eq!(
        usage["current"]["uncounted"],
        serde_json::json!(["/api/v1/secrets"]),
        "usage with the least ClusterRole: {usage}"
    );
    // tenant deletion (lists and deletes what the tenant owns cluster-wide) with it too
    let out = p.cli(&["tenant", "delete", "leastt", "--wait"])?;
    eprintln!("tenant deleted with the least ClusterRole: {}", out.trim());
    let left = admin(&cp)?.run(&["get", "ns", "-l", "paddock.io/tenant=leastt", "-o", "name"])?;
    assert_eq!(
        left.trim(),
        "",
        "namespaces left after the tenant's deletion"
    );
    p.stop();
    Ok(())
}

#[test]
#[ignore = "builds paddock for x86_64-unknown-linux-gnu with crt-static (minutes); make test-static"]
fn static_binary_runs() -> Result<()> {
    let bin = workspace_root().join(static_binary()?);

    let file = process::run(
        Command::new("file").arg(&bin),
        None,
        Duration::from_secs(10),
    )?;
    eprintln!("file: {}", file.stdout.trim());
    // glibc with crt-static links a static PIE: `file` says "static-pie linked"
    assert!(
        file.stdout.contains("statically linked") || file.stdout.contains("static-pie linked"),
        "{}",
        file.stdout
    );
    let ldd = process::run(Command::new("ldd").arg(&bin), None, Duration::from_secs(10))?;
    eprintln!("ldd: {}{}", ldd.stdout.trim(), ldd.stderr.trim());
    assert!(
        !ldd.stdout.contains("=>") && ldd.stdout.contains("statically linked"),
        "dynamic dependencies: {}",
        ldd.stdout
    );

    // Run it: paddock serve on the TLS etcd cluster, reached by host name (glibc's static
    // resolver reads /etc/hosts), against the real apiserver; a tenant through it.
    let cp = ControlPlane::start()?;
    let etcd = EtcdCluster::start_in(&cp)?;
    let mut args = etcd.paddock_args("/paddock-static");
    let eps: Vec<String> = etcd
        .endpoints()
        .iter()
        .map(|e| e.replace("127.0.0.1", "localhost"))
        .collect();
    if let Some(i) = args.iter().position(|a| a == "--etcd-endpoints") {
        args[i + 1] = eps.join(",");
    }
    let dir = cp.dir().join("static");
    let certs = dir.join("certs");
    let port = free_port()?;
    let url = format!("https://127.0.0.1:{port}");
    let mut init = Command::new(&bin);
    init.args(["ca", "init", "--dir"])
        .arg(&certs)
        .args(["--server-url", &url]);
    let out = process::run(&mut init, None, Duration::from_secs(60))?;
    assert!(out.success(), "{}", out.stderr);
    let log = std::fs::File::create(dir.join("serve.log"))?;
    let mut serve = Command::new(&bin);
    serve
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--certs-dir",
        ])
        .arg(&certs)
        .arg("--upstream-kubeconfig")
        .arg(cp.admin_kubeconfig())
        .args(["--public-url", &url])
        .args(&args)
        .stdout(log.try_clone()?)
        .stderr(log);
    let mut child = serve.spawn()?;
    cp.record_pid("paddock-static", child.id())?;
    let admin_kc = certs.join("admin.kubeconfig");
    let mut created = None;
    for _ in 0..60 {
        let mut c = Command::new(&bin);
        c.args(["tenant", "create", "static", "--kubeconfig"])
            .arg(&admin_kc);
        let out = process::run(&mut c, None, Duration::from_secs(30))?;
        if out.success() {
            created = Some(out.stdout);
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = child.kill();
    let _ = child.wait();
    let kubeconfig = created.with_context(|| process::tail_file(&dir.join("serve.log"), 30))?;
    assert!(kubeconfig.contains("client-certificate-data"));
    assert!(
        etcd.keys("/paddock-static/tenants/")?
            .contains(&"/paddock-static/tenants/static".to_string())
    );
    Ok(())
}
