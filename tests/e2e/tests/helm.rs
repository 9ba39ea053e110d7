//! helm 3 through paddock: charts written for the tests
//! (tests/e2e/charts) with CRDs, validating/mutating webhooks, aggregated ClusterRoles, hooks,
//! `--create-namespace` and a chart that brings its own Namespace; each one installed,
//! upgraded, rolled back and uninstalled, with kubectl checks in between. Every scenario runs
//! first directly (the upstream admin) and then through paddock (a tenant admin), so a failure
//! is paddock's only when the direct run passes.
//!
//! A scenario stops at its first failing step (later steps would only repeat it). The test fails
//! when a step fails directly, when a scenario fails through paddock at a step that is not listed
//! in docs/testing.md (between the `helm-known-failures` markers) with its cause, and when a
//! listed step passes (the list only shrinks), except for rows marked `(intermittent)`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use paddock_e2e::process::{self, Output, split_words, truncate};
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind, tools};

const TENANT: &str = "helmtt";

/// A row whose step ends with this fails through paddock only sometimes (a race the cause
/// depends on); its passing is reported, not a failure. Failing at another step still is.
const INTERMITTENT: &str = "(intermittent)";

/// One step: `helm ...` or `kubectl ...` (placeholders `{rel}`, `{ns}`, `{charts}`), and what
/// its stdout must contain (`=` prefix: be exactly, after trimming).
struct Step(&'static str, &'static str, &'static str);

struct Scenario {
    name: &'static str,
    rel: &'static str,
    ns: &'static str,
    /// Created with kubectl before the scenario (otherwise helm or the chart creates it).
    precreate: bool,
    steps: Vec<Step>,
    /// Best effort, failures ignored.
    cleanup: Vec<&'static str>,
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "crds",
            rel: "gadgets",
            ns: "helm-crds",
            precreate: true,
            steps: vec![
                Step(
                    "install",
                    "helm install {rel} {charts}/crds -n {ns} --wait --timeout 120s",
                    "STATUS: deployed",
                ),
                Step(
                    "cr-created",
                    "kubectl -n {ns} get gadget {rel}-gadget -o jsonpath={.spec.size}",
                    "=v1",
                ),
                Step(
                    "upgrade",
                    "helm upgrade {rel} {charts}/crds -n {ns} --set version=2 --wait --timeout 120s",
                    "REVISION: 2",
                ),
                Step(
                    "cr-upgraded",
                    "kubectl -n {ns} get gadget {rel}-gadget -o jsonpath={.spec.size}",
                    "=v2",
                ),
                Step(
                    "rollback",
                    "helm rollback {rel} 1 -n {ns} --wait --timeout 120s",
                    "Rollback was a success",
                ),
                Step(
                    "cr-rolled-back",
                    "kubectl -n {ns} get gadget {rel}-gadget -o jsonpath={.spec.size}",
                    "=v1",
                ),
                Step("history", "helm history {rel} -n {ns}", "Rollback to 1"),
                Step(
                    "uninstall",
                    "helm uninstall {rel} -n {ns} --wait --timeout 120s",
                    "uninstalled",
                ),
                Step("cr-gone", "kubectl -n {ns} get gadgets -o name", "="),
            ],
            cleanup: vec![],
        },
        Scenario {
            name: "webhooks",
            rel: "guard",
            ns: "helm-webhooks",
            precreate: true,
            steps: vec![
                Step(
                    "install",
                    "helm install {rel} {charts}/webhooks -n {ns} --wait --timeout 120s",
                    "STATUS: deployed",
                ),
                Step(
                    "service-ref",
                    "kubectl get validatingwebhookconfiguration {rel}-validate -o jsonpath={.webhooks[0].clientConfig.service.namespace}",
                    "={ns}",
                ),
                Step(
                    "upgrade",
                    "helm upgrade {rel} {charts}/webhooks -n {ns} --set version=2 --wait --timeout 120s",
                    "REVISION: 2",
                ),
                Step(
                    "upgraded",
                    "kubectl get mutatingwebhookconfiguration {rel}-mutate -o jsonpath={.metadata.annotations.chart-version}",
                    "=2",
                ),
                Step(
                    "rollback",
                    "helm rollback {rel} 1 -n {ns} --wait --timeout 120s",
                    "Rollback was a success",
                ),
                Step(
                    "uninstall",
                    "helm uninstall {rel} -n {ns} --wait --timeout 120s",
                    "uninstalled",
                ),
                Step(
                    "gone",
                    "kubectl get validatingwebhookconfiguration {rel}-validate --ignore-not-found -o name",
                    "=",
                ),
            ],
            cleanup: vec![],
        },
        Scenario {
            name: "aggregated-roles",
            rel: "agg",
            ns: "helm-rbac",
            precreate: true,
            steps: vec![
                Step(
                    "install",
                    "helm install {rel} {charts}/aggregated-roles -n {ns} --wait --timeout 120s",
                    "STATUS: deployed",
                ),
                Step(
                    "aggregated-into-view",
                    "kubectl get clusterrole view -o jsonpath={.rules[*].resources}",
                    "gadgets",
                ),
                Step(
                    "upgrade",
                    "helm upgrade {rel} {charts}/aggregated-roles -n {ns} --set version=2 --wait --timeout 120s",
                    "REVISION: 2",
                ),
                Step(
                    "rollback",
                    "helm rollback {rel} 1 -n {ns} --wait --timeout 120s",
                    "Rollback was a success",
                ),
                Step(
                    "uninstall",
                    "helm uninstall {rel} -n {ns} --wait --timeout 120s",
                    "uninstalled",
                ),
            ],
            cleanup: vec![],
        },
        Scenario {
            name: "hooks",
            rel: "hk",
            ns: "helm-hooks",
            precreate: true,
            steps: vec![
                Step(
                    "install",
                    "helm install {rel} {charts}/hooks -n {ns} --wait --timeout 120s",
                    "STATUS: deployed",
                ),
                Step(
                    "hook-job-deleted",
                    "kubectl -n {ns} get job {rel}-migrate --ignore-not-found -o name",
                    "=",
                ),
                Step(
                    "upgrade",
                    "helm upgrade {rel} {charts}/hooks -n {ns} --set version=2 --wait --timeout 120s",
                    "REVISION: 2",
                ),
                Step(
                    "post-upgrade-hook",
                    "kubectl -n {ns} get configmap {rel}-upgraded -o jsonpath={.data.version}",
                    "=2",
                ),
                Step(
                    "rollback",
                    "helm rollback {rel} 1 -n {ns} --wait --timeout 120s",
                    "Rollback was a success",
                ),
                Step(
                    "post-rollback-hook",
                    "kubectl -n {ns} get configmap {rel}-upgraded -o jsonpath={.data.version}",
                    "=1",
                ),
                Step(
                    "uninstall",
                    "helm uninstall {rel} -n {ns} --wait --timeout 120s",
                    "uninstalled",
                ),
            ],
            cleanup: vec![],
        },
        Scenario {
            name: "create-namespace",
            rel: "fresh",
            ns: "helm-created",
            precreate: false,
            steps: vec![
                Step(
                    "install",
                    "helm install {rel} {charts}/hooks -n {ns} --create-namespace --wait --timeout 120s",
                    "STATUS: deployed",
                ),
                Step(
                    "namespace",
                    "kubectl get namespace {ns} -o name",
                    "=namespace/{ns}",
                ),
                Step("list", "helm list -n {ns} -q", "={rel}"),
                Step(
                    "upgrade",
                    "helm upgrade {rel} {charts}/hooks -n {ns} --set version=2 --wait --timeout 120s",
                    "REVISION: 2",
                ),
                Step(
                    "rollback",
                    "helm rollback {rel} 1 -n {ns} --wait --timeout 120s",
                    "Rollback was a success",
                ),
                Step(
                    "uninstall",
                    "helm uninstall {rel} -n {ns} --wait --timeout 120s",
                    "uninstalled",
                ),
            ],
            cleanup: vec![],
        },
        Scenario {
            // A cluster admin gets an empty list for a namespace that does not exist.
            name: "list-absent-namespace",
            rel: "nothing",
            ns: "helm-absent",
            precreate: false,
            steps: vec![Step("list", "helm list -n {ns} -q", "=")],
            cleanup: vec![],
        },
        Scenario {
            name: "own-namespace",
            rel: "own",
            ns: "default",
            precreate: false,
            steps: vec![
                Step(
                    "install",
                    "helm install {rel} {charts}/own-namespace -n {ns} --wait --timeout 120s",
                    "STATUS: deployed",
                ),
                Step(
                    "in-namespace",
                    "kubectl -n helm-own get configmap {rel}-settings -o jsonpath={.data.version}",
                    "=1",
                ),
                Step(
                    "upgrade",
                    "helm upgrade {rel} {charts}/own-namespace -n {ns} --set version=2 --wait --timeout 120s",
                    "REVISION: 2",
                ),
                Step(
                    "rollback",
                    "helm rollback {rel} 1 -n {ns} --wait --timeout 120s",
                    "Rollback was a success",
                ),
                Step(
                    "uninstall",
                    "helm uninstall {rel} -n {ns} --wait --timeout 120s",
                    "uninstalled",
                ),
            ],
            cleanup: vec!["kubectl delete namespace helm-own --ignore-not-found --wait=false"],
        },
    ]
}

/// One identity's tools: helm with its own cache/config/data dirs, kubectl.
struct Client {
    helm: PathBuf,
    home: PathBuf,
    kubectl: Kubectl,
}

impl Client {
    fn run(&self, line: &str) -> Result<(String, Output)> {
        let words = split_words(line)?;
        let (tool, args) = words.split_first().context("empty step")?;
        match tool.as_str() {
            "helm" => {
                let mut cmd = Command::new(&self.helm);
                cmd.arg("--kubeconfig")
                    .arg(self.kubectl.kubeconfig())
                    .args(args)
                    .env_remove("KUBECONFIG")
                    .env("HELM_CACHE_HOME", self.home.join("cache"))
                    .env("HELM_CONFIG_HOME", self.home.join("config"))
                    .env("HELM_DATA_HOME", self.home.join("data"));
                let out = process::run(&mut cmd, None, Duration::from_secs(180))?;
                Ok((line.to_owned(), out))
            }
            "kubectl" => self.kubectl.run_raw(args, None, &BTreeMap::new(), None),
            t => bail!("unknown tool {t}"),
        }
    }
}

/// How a scenario went: the first failing step (None: all passed) and its report.
struct Outcome {
    failed_at: Option<String>,
    report: String,
}

fn run_scenario(c: &Client, sc: &Scenario, charts: &Path) -> Result<Outcome> {
    let fill = |s: &str| {
        s.replace("{rel}", sc.rel)
            .replace("{ns}", sc.ns)
            .replace("{charts}", &charts.display().to_string())
    };
    let mut outcome = Outcome {
        failed_at: None,
        report: String::new(),
    };
    if sc.precreate {
        c.run(&fill("kubectl create namespace {ns}"))?;
    }
    for Step(name, line, expect) in &sc.steps {
        let (cmd, out) = c.run(&fill(line))?;
        let expect = fill(expect);
        let held = out.success()
            && match expect.strip_prefix('=') {
                Some(exact) => out.stdout.trim() == exact,
                None => out.stdout.contains(&expect),
            };
        if !held {
            outcome.failed_at = Some((*name).to_owned());
            outcome.report = format!(
                "step {name}: `{cmd}` exit {:?}{}, expected stdout {expect:?}\n    stdout: {}\n    stderr: {}",
                out.code,
                if out.timed_out { " (timed out)" } else { "" },
                truncate(out.stdout.trim(), 600),
                truncate(out.stderr.trim(), 1200)
            );
            break;
        }
    }
    // Best effort; a failed step may have left anything behind.
    let _ = c.run(&fill(
        "helm uninstall {rel} -n {ns} --ignore-not-found --wait --timeout 60s",
    ));
    for line in &sc.cleanup {
        let _ = c.run(&fill(line));
    }
    if sc.precreate || sc.name == "create-namespace" {
        let _ = c.run(&fill(
            "kubectl delete namespace {ns} --ignore-not-found --wait=false",
        ));
    }
    Ok(outcome)
}

/// The table between the `helm-known-failures` markers in docs/testing.md: scenario -> the step
/// at which it fails through paddock.
fn known_failures() -> Result<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(workspace_root().join("docs").join("testing.md"))?;
    let (_, rest) = text
        .split_once("<!-- helm-known-failures:begin -->")
        .context("docs/testing.md has no helm-known-failures:begin marker")?;
    let (table, _) = rest
        .split_once("<!-- helm-known-failures:end -->")
        .context("docs/testing.md has no helm-known-failures:end marker")?;
    let mut known = BTreeMap::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(sc), Some(step)) = (cols.get(1), cols.get(2)) else {
            bail!("malformed row in docs/testing.md: {line}");
        };
        known.insert(
            sc.trim_matches('`').to_owned(),
            step.trim_matches('`').to_owned(),
        );
    }
    Ok(known)
}

#[test]
fn helm_charts_directly_and_through_paddock() -> Result<()> {
    let helm = tools::helm()?;
    let known = known_failures()?;
    let charts = workspace_root().join("tests").join("e2e").join("charts");
    let cp = ControlPlane::start().context("starting the control plane")?;
    let paddock = Paddock::start(&cp, StoreKind::Etcd)?;
    let direct = Client {
        helm: helm.clone(),
        home: cp.dir().join("helm").join("admin"),
        kubectl: cp.kubectl_admin()?,
    };
    let tenant = Client {
        helm,
        home: cp.dir().join("helm").join(TENANT),
        kubectl: paddock.kubectl_tenant(TENANT)?,
    };
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    eprintln!(
        "{:<18} {:<22} {:<22}",
        "SCENARIO", "DIRECT", "THROUGH PADDOCK"
    );
    for sc in scenarios() {
        seen.insert(sc.name);
        let d = run_scenario(&direct, &sc, &charts)?;
        let p = run_scenario(&tenant, &sc, &charts)?;
        let show = |o: &Outcome| match &o.failed_at {
            None => "pass".to_owned(),
            Some(s) => format!("fails at {s}"),
        };
        eprintln!("{:<18} {:<22} {:<22}", sc.name, show(&d), show(&p));
        if d.failed_at.is_some() {
            problems.push(format!("{} fails directly: {}", sc.name, d.report));
            continue;
        }
        let listed = known
            .get(sc.name)
            .map(|s| match s.strip_suffix(INTERMITTENT) {
                Some(step) => (step.trim(), true),
                None => (s.as_str(), false),
            });
        match (&p.failed_at, listed) {
            (None, None) => {}
            (None, Some((step, true))) => eprintln!(
                "  {} passed this time; docs/testing.md lists it as failing intermittently at {step}",
                sc.name
            ),
            (None, Some((step, false))) => problems.push(format!(
                "{} passes through paddock but docs/testing.md lists it as failing at {step}: shrink the list",
                sc.name
            )),
            (Some(at), Some((step, _))) if at == step => {
                eprintln!("  known failure ({}): {}", sc.name, p.report);
            }
            (Some(_), _) => problems.push(format!(
                "{} passes directly, fails through paddock: {}",
                sc.name, p.report
            )),
        }
    }
    for name in known.keys() {
        if !seen.contains(name.as_str()) {
            problems.push(format!(
                "docs/testing.md lists unknown helm scenario {name}"
            ));
        }
    }
    if !problems.is_empty() {
        bail!("{} problems:\n  {}", problems.len(), problems.join("\n  "));
    }
    Ok(())
}
