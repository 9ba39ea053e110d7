//! Real clients, each scenario run directly (the upstream admin) and
//! through paddock (a tenant admin) on one shared control plane and paddock, so that a failure
//! is paddock's only when the direct run passes:
//! - kubectl 1.27 … 1.33 (the pinned binaries beside `kubectl`): the commonest commands
//!   (create, apply, diff, explain in both output forms, get -A, describe, auth can-i, rollout,
//!   delete); 1.27 and 1.28 read `/openapi/v2` in protobuf for apply/diff/explain;
//! - the Python client (`kubernetes` from PyPI in a venv under target/): CRUD, list/watch, a
//!   custom resource through the dynamic client (tests/e2e/clients/python_client.py).
//!
//! `PADDOCK_CLIENTS=1.27,python` runs only the clients whose name contains one of the words.
//!
//! Known failures would be listed in docs/testing.md between the `client-known-failures`
//! markers; the list is empty and the test fails on any failure through paddock.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use paddock_e2e::process::{self, truncate};
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind, tools};

const TENANT: &str = "clitst";
const VERSIONS: [&str; 7] = ["1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33"];

const SPROCKET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sprockets.pyclient.example.com}
spec:
  group: pyclient.example.com
  scope: Namespaced
  names: {plural: sprockets, singular: sprocket, kind: Sprocket}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              teeth: {type: integer}
"#;

fn deployment(ns: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: {ns}\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: registry.example/web:1\n"
    )
}

/// One kubectl command and what it must show: `stdout` contains each of `want` (exit 0), or
/// with `exit` the given exit code.
struct Check {
    args: Vec<String>,
    stdin: Option<String>,
    want: Vec<String>,
    exit: i32,
}

fn check(args: &str, want: &[&str]) -> Check {
    Check {
        args: args.split(' ').map(str::to_owned).collect(),
        stdin: None,
        want: want.iter().map(|s| (*s).to_owned()).collect(),
        exit: 0,
    }
}

fn kubectl_steps(ns: &str) -> Vec<Check> {
    let mut diff = check("diff -f -", &["-  replicas: 1", "+  replicas: 2"]);
    diff.stdin = Some(deployment(ns, 2));
    diff.exit = 1;
    let mut apply = check("apply -f -", &["deployment.apps/web created"]);
    apply.stdin = Some(deployment(ns, 1));
    let mut apply_again = check("apply -f -", &["deployment.apps/web configured"]);
    apply_again.stdin = Some(deployment(ns, 2));
    vec![
        check(&format!("create namespace {ns}"), &["created"]),
        check(
            &format!("create configmap settings -n {ns} --from-literal=k=v"),
            &["configmap/settings created"],
        ),
        apply,
        diff,
        apply_again,
        check(
            "explain deployment.spec.replicas",
            &["replicas", "<integer>"],
        ),
        check(
            "explain deployment.spec.replicas --output=plaintext-openapiv2",
            &["replicas", "<integer>"],
        ),
        check("get configmaps -A", &[ns, "settings"]),
        check(
            &format!("describe deployment web -n {ns}"),
            &["Replicas:", "web"],
        ),
        check(&format!("auth can-i create deployments -n {ns}"), &["yes"]),
        check(
            &format!("rollout status deployment/web -n {ns} --timeout=90s"),
            &["successfully rolled out"],
        ),
        check(
            &format!("rollout restart deployment/web -n {ns}"),
            &["restarted"],
        ),
        check(
            &format!("rollout history deployment/web -n {ns}"),
            &["REVISION"],
        ),
        check(
            &format!("delete deployment web -n {ns}"),
            &["deployment.apps \"web\" deleted"],
        ),
        check(
            &format!("delete namespace {ns} --wait=false"),
            &["namespace \"{ns}\" deleted"],
        ),
    ]
}

/// Runs the steps; the first failure, described.
fn run_kubectl(k: &Kubectl, ns: &str) -> Option<String> {
    for c in kubectl_steps(ns) {
        let want: Vec<String> = c.want.iter().map(|w| w.replace("{ns}", ns)).collect();
        let (line, out) = match k.run_raw(&c.args, c.stdin.as_deref(), &BTreeMap::new(), None) {
            Ok(r) => r,
            Err(e) => return Some(format!("{}: {e:#}", c.args.join(" "))),
        };
        let held = out.code == Some(c.exit) && want.iter().all(|w| out.stdout.contains(w));
        if !held {
            let _ = k.run_raw(
                &[
                    "delete".into(),
                    "namespace".into(),
                    ns.into(),
                    "--wait=false".into(),
                ],
                None,
                &BTreeMap::new(),
                None,
            );
            return Some(format!(
                "`{line}` exit {:?} (want {}), stdout must contain {want:?}\n    stdout: {}\n    stderr: {}",
                out.code,
                c.exit,
                truncate(out.stdout.trim(), 800),
                truncate(out.stderr.trim(), 800)
            ));
        }
    }
    None
}

fn run_python(python: &Path, kubeconfig: &Path, ns: &str) -> Option<String> {
    let script = workspace_root().join("tests/e2e/clients/python_client.py");
    let mut cmd = Command::new(python);
    cmd.arg(&script).arg(kubeconfig).arg(ns);
    match process::run(&mut cmd, None, Duration::from_secs(180)) {
        Ok(out) if out.success() && out.stdout.contains("\nOK") => None,
        Ok(out) => Some(format!(
            "exit {:?}\n    stdout: {}\n    stderr: {}",
            out.code,
            truncate(out.stdout.trim(), 800),
            truncate(out.stderr.trim(), 2000)
        )),
        Err(e) => Some(format!("{e:#}")),
    }
}

/// The rows between the `client-known-failures` markers of docs/testing.md: `client` ->
/// the step it fails at through paddock.
fn known_failures() -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(workspace_root().join("docs").join("testing.md"))?;
    let (_, rest) = text
        .split_once("<!-- client-known-failures:begin -->")
        .context("docs/testing.md has no client-known-failures:begin marker")?;
    let (table, _) = rest
        .split_once("<!-- client-known-failures:end -->")
        .context("docs/testing.md has no client-known-failures:end marker")?;
    let mut known = BTreeMap::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        if let (Some(c), Some(s)) = (cols.get(1), cols.get(2)) {
            known.insert(
                c.trim_matches('`').to_owned(),
                s.trim_matches('`').to_owned(),
            );
        }
    }
    Ok(known)
}

fn selected(client: &str) -> bool {
    match std::env::var("PADDOCK_CLIENTS") {
        Ok(f) if !f.trim().is_empty() => f.split(',').any(|w| client.contains(w.trim())),
        _ => true,
    }
}

#[test]
fn real_clients_directly_and_through_paddock() -> Result<()> {
    let known = known_failures()?;
    let kubectl_dir = paddock_e2e::kubectl::find_kubectl()?
        .parent()
        .context("kubectl has no directory")?
        .to_owned();
    let python = tools::python_kubernetes()?;
    let cp = ControlPlane::start().context("starting the control plane")?;
    let paddock = Paddock::start(&cp, StoreKind::Etcd)?;
    let admin = cp.kubectl_admin()?;
    let tenant = paddock.kubectl_tenant(TENANT)?;
    for k in [&admin, &tenant] {
        k.run_stdin(&["apply", "-f", "-"], Some(SPROCKET_CRD))?;
        k.run(&[
            "wait",
            "--for=condition=Established",
            "crd/sprockets.pyclient.example.com",
            "--timeout=60s",
        ])?;
    }

    // (client, direct outcome, paddock outcome, seconds); None = passed.
    let mut rows: Vec<(String, Option<String>, Option<String>, u64)> = Vec::new();
    for v in VERSIONS {
        if !selected(&format!("kubectl-{v}")) {
            continue;
        }
        let t0 = std::time::Instant::now();
        let bin = kubectl_dir.join(format!("kubectl.{v}"));
        if !bin.is_file() {
            bail!(
                "{} is missing (the test bed has kubectl 1.27 to 1.33)",
                bin.display()
            );
        }
        let ns = format!("kc-{}", v.replace('.', "-"));
        // Directly and through paddock at the same time: two clusters' worth of waiting.
        let (d, p) = std::thread::scope(|s| {
            let d = s.spawn(|| run_kubectl(&admin.clone().with_bin(&bin), &ns));
            let p = s.spawn(|| run_kubectl(&tenant.clone().with_bin(&bin), &ns));
            (d.join().ok().flatten(), p.join().ok().flatten())
        });
        rows.push((format!("kubectl-{v}"), d, p, t0.elapsed().as_secs()));
    }
    if selected("python") {
        let t0 = std::time::Instant::now();
        let (d, p) = std::thread::scope(|s| {
            let d = s.spawn(|| run_python(&python, &cp.admin_kubeconfig(), "py-client"));
            let p = s.spawn(|| {
                let kc = paddock.tenant(TENANT).ok()?;
                run_python(&python, &kc, "py-client")
            });
            (d.join().ok().flatten(), p.join().ok().flatten())
        });
        rows.push(("python".into(), d, p, t0.elapsed().as_secs()));
    }

    eprintln!(
        "{:<14} {:<8} {:<8} {:>8}",
        "CLIENT", "DIRECT", "PADDOCK", "SECONDS"
    );
    let mut problems = Vec::new();
    for (client, d, p, secs) in &rows {
        let show = |o: &Option<String>| if o.is_none() { "pass" } else { "FAIL" };
        eprintln!("{client:<14} {:<8} {:<8} {secs:>8}", show(d), show(p));
        match (d, p, known.get(client)) {
            (Some(e), _, _) => problems.push(format!("{client} fails directly: {e}")),
            (None, None, Some(_)) => problems.push(format!(
                "{client} passes through paddock but docs/testing.md lists it as failing: shrink the list"
            )),
            (None, Some(e), Some(k)) if e.contains(k.as_str()) => {
                eprintln!("  known failure ({client}): {e}");
            }
            (None, Some(e), _) => problems.push(format!(
                "{client} passes directly, fails through paddock: {e}"
            )),
            (None, None, None) => {}
        }
    }
    if !problems.is_empty() {
        bail!("{} problems:\n  {}", problems.len(), problems.join("\n  "));
    }
    Ok(())
}
