//! Metering against the real control plane, paddock as a real
//! process and real kubectl:
//! - **billing key**: set at `tenant create`, present on every upstream namespace of the
//!   tenant (the default ones and one the tenant creates later); changed with `tenant
//!   set-billing` and restamped on every namespace within seconds (a removed key is removed);
//!   another tenant's namespaces never carry it; the tenant's attempts to change or remove it
//!   are refused with a Status naming the policy, through paddock and bypassing it (the
//!   tenant's identity straight at the apiserver), with positive controls (its own labels
//!   still work both ways);
//! - **usage report**: a tenant with a known set of objects (running pods with requests and
//!   limits, PVCs, ConfigMaps, a Secret, a CRD ...); `paddock tenant usage -o json` matches the
//!   figures taken upstream with the admin kubeconfig, field by field;
//! - **/metrics** parsed with a real Prometheus exposition parser (prometheus_client from
//!   PyPI, tests/testbed/tools.sh pyprom), the tenant's series present with the same figures.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::kubectl::Kubectl;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};
use serde_json::{Value, json};

const T: &str = "bill01";
const OTHER: &str = "othr02";

fn kubectl_for(p: &Paddock, kubeconfig_text: &str, name: &str) -> Result<Kubectl> {
    let path = p.dir().join(format!("{name}.kubeconfig"));
    std::fs::write(&path, kubeconfig_text)?;
    Ok(Kubectl::new(path)?.log(p.log_path()))
}

/// Runs kubectl expecting a refusal; returns its stderr.
fn refused(k: &Kubectl, args: &[&str]) -> Result<String> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (line, out) = k.run_raw(&args, None, &BTreeMap::new(), None)?;
    ensure!(
        !out.success(),
        "{line}: expected a refusal, it succeeded: {}",
        out.stdout
    );
    Ok(out.stderr)
}

fn json_of(k: &Kubectl, args: &[&str]) -> Result<Value> {
    let out = k.run(args)?;
    serde_json::from_str(&out).with_context(|| format!("kubectl {args:?}: not JSON"))
}

/// The tenant's upstream namespaces (admin view).
fn upstream_namespaces(up: &Kubectl, tenant: &str) -> Result<Vec<Value>> {
    let v = json_of(
        up,
        &[
            "get",
            "namespaces",
            "-l",
            &format!("paddock.io/tenant={tenant}"),
            "-o",
            "json",
        ],
    )?;
    Ok(v["items"].as_array().cloned().unwrap_or_default())
}

/// Waits until every namespace of `tenant` carries exactly `labels` and `annotations` as its
/// billing key (and `absent` keys are gone); returns how long it took.
fn wait_stamped(
    up: &Kubectl,
    tenant: &str,
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
    absent: &[&str],
    min_namespaces: usize,
) -> Result<Duration> {
    let t0 = Instant::now();
    loop {
        let nss = upstream_namespaces(up, tenant)?;
        let mut problems = Vec::new();
        if nss.len() < min_namespaces {
            problems.push(format!("{} namespaces, want {min_namespaces}", nss.len()));
        }
        for ns in &nss {
            let name = ns["metadata"]["name"].as_str().unwrap_or("?");
            for (k, v) in labels {
                if ns["metadata"]["labels"][k].as_str() != Some(v) {
                    problems.push(format!(
                        "{name}: label {k} is {}",
                        ns["metadata"]["labels"][k]
                    ));
                }
            }
            for (k, v) in annotations {
                if ns["metadata"]["annotations"][k].as_str() != Some(v) {
                    problems.push(format!(
                        "{name}: annotation {k} is {}",
                        ns["metadata"]["annotations"][k]
                    ));
                }
            }
            for k in absent {
                if !ns["metadata"]["labels"][k].is_null()
                    || !ns["metadata"]["annotations"][k].is_null()
                {
                    problems.push(format!("{name}: {k} should be gone"));
                }
            }
        }
        if problems.is_empty() {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() > Duration::from_secs(20) {
            bail!("billing key not stamped after 20 s: {problems:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn billing_checks(p: &Paddock, up: &Kubectl) -> Result<(Kubectl, Kubectl)> {
    let kc = p.cli(&[
        "tenant",
        "create",
        T,
        "--billing-label",
        "cost-center=cc-1",
        "--billing-label",
        "example.com/team=blue",
        "--billing-annotation",
        "billing.example.com/owner=Team Blue <blue@example.com>",
    ])?;
    let a = kubectl_for(p, &kc, T)?;
    let other = kubectl_for(p, &p.cli(&["tenant", "create", OTHER])?, OTHER)?;
    let took = wait_stamped(
        up,
        T,
        &[("cost-center", "cc-1"), ("example.com/team", "blue")],
        &[
            ("billing.example.com/owner", "Team Blue <blue@example.com>"),
            ("paddock.io/billing-labels", "cost-center,example.com/team"),
            (
                "paddock.io/billing-annotations",
                "billing.example.com/owner",
            ),
        ],
        &[],
        4,
    )?;
    eprintln!("billing key on the default namespaces {took:?} after tenant create returned");
    // A namespace the tenant creates carries the key as soon as the create returns.
    a.run(&["create", "namespace", "team"])?;
    let ns = json_of(
        up,
        &["get", "namespace", &format!("{T}-team"), "-o", "json"],
    )?;
    ensure!(
        ns["metadata"]["labels"]["cost-center"] == "cc-1",
        "new namespace not stamped: {ns}"
    );
    // The tenant sees its key (it is its cost center) ...
    let own = json_of(&a, &["get", "namespace", "team", "-o", "json"])?;
    ensure!(
        own["metadata"]["labels"]["cost-center"] == "cc-1",
        "tenant view: {own}"
    );
    // ... and the other tenant's namespaces carry none of it.
    for ns in upstream_namespaces(up, OTHER)? {
        ensure!(
            ns["metadata"]["labels"]["cost-center"].is_null(),
            "other tenant stamped: {ns}"
        );
        ensure!(
            ns["metadata"]["annotations"]["paddock.io/billing-labels"].is_null(),
            "{ns}"
        );
    }

    // The admin changes it: one value changed, one label added, the annotation removed.
    p.cli(&[
        "tenant",
        "set-billing",
        T,
        "--label",
        "cost-center=cc-2",
        "--label",
        "env=prod",
        "--annotation",
        "billing.example.com/owner-",
    ])?;
    let took = wait_stamped(
        up,
        T,
        &[
            ("cost-center", "cc-2"),
            ("example.com/team", "blue"),
            ("env", "prod"),
        ],
        &[
            (
                "paddock.io/billing-labels",
                "cost-center,env,example.com/team",
            ),
            ("paddock.io/billing-annotations", ""),
        ],
        &["billing.example.com/owner"],
        5,
    )?;
    eprintln!("billing key change on all 5 namespaces {took:?} after set-billing returned");
    ensure!(took < Duration::from_secs(5), "restamp took {took:?}");
    let shown = json_of(&p.kubectl_admin()?, &["get", "tenants", T, "-o", "json"])?;
    ensure!(
        shown["spec"]["billing"]["labels"]["env"] == "prod",
        "admin API: {shown}"
    );
    // Bad keys are refused by the admin API with the reason.
    let (_, bad) = p.cli_raw(
        &[
            "tenant".into(),
            "set-billing".into(),
            T.into(),
            "--label".into(),
            "paddock.io/tenant=x".into(),
        ],
        Duration::from_secs(30),
    )?;
    ensure!(
        !bad.success() && bad.stderr.contains("reserved"),
        "reserved key: {}",
        bad.stderr
    );

    tenant_attacks(&a, up)?;
    Ok((a, other))
}

const POLICY_WORDS: &str = "billing key";

fn tenant_attacks(a: &Kubectl, up: &Kubectl) -> Result<()> {
    // Through paddock.
    for args in [
        vec![
            "label",
            "namespace",
            "team",
            "cost-center=mine",
            "--overwrite",
        ],
        vec!["label", "namespace", "team", "cost-center-"],
        vec!["label", "namespace", "default", "env-"],
        vec![
            "annotate",
            "namespace",
            "team",
            "paddock.io/billing-labels=",
            "--overwrite",
        ],
        vec![
            "annotate",
            "namespace",
            "team",
            "paddock.io/billing-labels-",
        ],
    ] {
        let err = refused(a, &args)?;
        ensure!(
            err.contains(POLICY_WORDS),
            "{args:?}: refusal does not name the policy: {err}"
        );
    }
    // A replace that drops every label.
    let mut ns = json_of(a, &["get", "namespace", "team", "-o", "json"])?;
    ns["metadata"]["labels"] = json!({});
    let (_, out) = a.run_raw(
        &["replace".into(), "-f".into(), "-".into()],
        Some(&ns.to_string()),
        &BTreeMap::new(),
        None,
    )?;
    ensure!(
        !out.success() && out.stderr.contains(POLICY_WORDS),
        "replace without labels: {}",
        out.stderr
    );
    // A new namespace may not bring its own key list.
    let forged = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "forged",
        "annotations": {"paddock.io/billing-labels": ""}}});
    let (_, out) = a.run_raw(
        &[
            "create".into(),
            "--validate=false".into(),
            "-f".into(),
            "-".into(),
        ],
        Some(&forged.to_string()),
        &BTreeMap::new(),
        None,
    )?;
    ensure!(
        !out.success() && out.stderr.contains(POLICY_WORDS),
        "a namespace with a forged key list: {}",
        out.stderr
    );
    // Control: the tenant still labels its own namespace.
    a.run(&["label", "namespace", "team", "app=web"])?;
    let ns = json_of(
        up,
        &["get", "namespace", &format!("{T}-team"), "-o", "json"],
    )?;
    ensure!(
        ns["metadata"]["labels"]["app"] == "web"
            && ns["metadata"]["labels"]["cost-center"] == "cc-2",
        "{ns}"
    );

    // Bypass: the tenant admin's cluster-scope identity straight at the apiserver. RBAC lets
    // it patch its namespaces (the control proves it); only the guard refuses the key.
    let as_tenant = [
        format!("--as=paddock:{T}:admin"),
        format!("--as-group=paddock:{T}:tenant-admins"),
        "--as-group=paddock:tenant-cluster-scope-admins".to_string(),
        format!("--as-group=paddock:tenant:{T}"),
        "--as-group=system:authenticated".to_string(),
    ];
    let bypass = |extra: &[&str]| -> Result<(bool, String)> {
        let mut args: Vec<String> = as_tenant.to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        let (_, out) = up.run_raw(&args, None, &BTreeMap::new(), None)?;
        Ok((out.success(), out.stderr))
    };
    let team = format!("{T}-team");
    for extra in [
        vec![
            "label",
            "namespace",
            team.as_str(),
            "cost-center=mine",
            "--overwrite",
        ],
        vec!["label", "namespace", team.as_str(), "env-"],
        vec![
            "annotate",
            "namespace",
            team.as_str(),
            "paddock.io/billing-labels=env",
            "--overwrite",
        ],
        vec![
            "annotate",
            "namespace",
            team.as_str(),
            "paddock.io/billing-annotations-",
        ],
    ] {
        let (ok, err) = bypass(&extra)?;
        ensure!(
            !ok && err.contains(POLICY_WORDS),
            "bypass {extra:?}: {ok} {err}"
        );
    }
    let (ok, err) = bypass(&["label", "namespace", team.as_str(), "bypass-control=yes"])?;
    ensure!(
        ok,
        "bypass control (a label of the tenant's own) refused: {err}"
    );
    Ok(())
}

// ---- usage ----------------------------------------------------------------------------------

fn pod(name: &str, req: (&str, &str), lim: (&str, &str)) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"},
    "spec": {"containers": [
        {"name": "a", "image": "busybox", "resources": {"requests": {"cpu": req.0, "memory": req.1}, "limits": {"cpu": lim.0, "memory": lim.1}}},
        {"name": "b", "image": "busybox", "resources": {"requests": {"cpu": "50m"}}}
    ]}})
}

fn make_objects(a: &Kubectl) -> Result<()> {
    let mut items = vec![
        pod("web-1", ("100m", "64Mi"), ("200m", "128Mi")),
        pod("web-2", ("250m", "32Mi"), ("1", "64Mi")),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1", "namespace": "team"}, "stringData": {"k": "v"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "reader"}, "rules": []}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "team"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
              "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    ];
    for (name, size) in [("data-1", "1Gi"), ("data-2", "500Mi")] {
        items.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "team"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}));
    }
    for i in 0..3 {
        items.push(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}"), "namespace": "team"}, "data": {"i": i.to_string()}}));
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    // --validate=false here and below: kubectl's client-side validation reads /openapi/v2 in
    // protobuf, which paddock answers in JSON (docs/testing.md, issue 13 item 3).
    let (line, out) = a.run_raw(
        &[
            "create".into(),
            "--validate=false".into(),
            "-f".into(),
            "-".into(),
        ],
        Some(&list.to_string()),
        &BTreeMap::new(),
        None,
    )?;
    ensure!(out.success(), "{line}: {}", out.stderr);
    // A pod that never runs (a node that does not exist): counted, its resources not.
    let mut pending = pod("waiting", ("300m", "16Mi"), ("300m", "16Mi"));
    pending["spec"]["nodeName"] = json!("no-such-node");
    let (line, out) = a.run_raw(
        &[
            "create".into(),
            "--validate=false".into(),
            "-f".into(),
            "-".into(),
        ],
        Some(&pending.to_string()),
        &BTreeMap::new(),
        None,
    )?;
    ensure!(out.success(), "{line}: {}", out.stderr);
    a.run(&[
        "wait",
        "-n",
        "team",
        "--for=jsonpath={.status.phase}=Running",
        "pod/web-1",
        "pod/web-2",
        "--timeout=60s",
    ])?;
    Ok(())
}

/// Thousandths of a quantity, for the forms this test writes (an independent reading).
fn milli(q: &str) -> Result<u64> {
    let (n, mul) = if let Some(n) = q.strip_suffix('m') {
        (n, 1)
    } else if let Some(n) = q.strip_suffix("Mi") {
        (n, 1000 << 20)
    } else if let Some(n) = q.strip_suffix("Gi") {
        (n, 1000 << 30)
    } else {
        (q, 1000)
    };
    Ok(n.parse::<u64>()
        .with_context(|| format!("quantity {q:?}"))?
        * mul)
}

/// The usage figures of `T`, computed from upstream with the admin kubeconfig.
fn upstream_usage(up: &Kubectl, report_objects: &[String]) -> Result<Value> {
    let nss: Vec<String> = upstream_namespaces(up, T)?
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    let in_tenant = |o: &Value| {
        o["metadata"]["namespace"]
            .as_str()
            .is_some_and(|n| nss.iter().any(|x| x == n))
    };
    let items = |res: &str, extra: &[&str]| -> Result<Vec<Value>> {
        let mut args = vec!["get", res, "-o", "json"];
        args.extend_from_slice(extra);
        Ok(json_of(up, &args)?["items"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    };
    let pods: Vec<Value> = items("pods", &["-A"])?
        .into_iter()
        .filter(|o| in_tenant(o))
        .collect();
    let running: Vec<&Value> = pods
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .collect();
    let sum = |what: &str, res: &str| -> Result<u64> {
        let mut total = 0;
        for p in &running {
            for c in p["spec"]["containers"].as_array().into_iter().flatten() {
                if let Some(q) = c["resources"][what][res].as_str() {
                    total += milli(q)?;
                }
            }
        }
        Ok(total)
    };
    let pvcs: Vec<Value> = items("persistentvolumeclaims", &["-A"])?
        .into_iter()
        .filter(|o| in_tenant(o))
        .collect();
    let mut storage = 0;
    for p in &pvcs {
        storage += milli(
            p["spec"]["resources"]["requests"]["storage"]
                .as_str()
                .unwrap_or("0"),
        )? / 1000;
    }
    let mut objects = serde_json::Map::new();
    let prefix = format!("{T}-");
    for res in report_objects {
        let n = match res.as_str() {
            "persistentvolumes"
            | "clusterroles.rbac.authorization.k8s.io"
            | "clusterrolebindings.rbac.authorization.k8s.io" => {
                items(res, &["-l", &format!("paddock.io/tenant={T}")])?
                    .iter()
                    .filter(|o| {
                        o["metadata"]["name"]
                            .as_str()
                            .is_some_and(|n| n.starts_with(&prefix))
                    })
                    .count()
            }
            "customresourcedefinitions.apiextensions.k8s.io" => {
                items(res, &["-l", &format!("paddock.io/tenant={T}")])?
                    .iter()
                    .filter(|o| {
                        o["spec"]["group"]
                            .as_str()
                            .is_some_and(|g| g.starts_with(&prefix))
                    })
                    .count()
            }
            _ => items(res, &["-A"])?.iter().filter(|o| in_tenant(o)).count(),
        };
        objects.insert(res.clone(), json!(n));
    }
    Ok(json!({
        "namespaces": nss.len(), "pods": pods.len(), "runningPods": running.len(),
        "cpuRequestsMillicores": sum("requests", "cpu")?, "cpuLimitsMillicores": sum("limits", "cpu")?,
        "memoryRequestsBytes": sum("requests", "memory")? / 1000, "memoryLimitsBytes": sum("limits", "memory")? / 1000,
        "storageRequestsBytes": storage, "objects": objects,
    }))
}

fn usage_checks(p: &Paddock, a: &Kubectl, up: &Kubectl) -> Result<Value> {
    make_objects(a)?;
    let t0 = Instant::now();
    loop {
        let report: Value = serde_json::from_str(&p.cli(&["tenant", "usage", T, "-o", "json"])?)?;
        let mut current = report["current"].clone();
        let observed = current.as_object_mut().and_then(|m| m.remove("observedAt"));
        ensure!(
            observed.is_some_and(|o| o.is_string()),
            "no observedAt: {report}"
        );
        let names: Vec<String> = current["objects"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let before = upstream_usage(up, &names)?;
        let after = upstream_usage(up, &names)?;
        let mut diffs = Vec::new();
        for (k, v) in before.as_object().into_iter().flatten() {
            if k == "objects" {
                for (r, n) in v.as_object().into_iter().flatten() {
                    if current["objects"][r] != *n {
                        diffs.push(format!(
                            "objects.{r}: report {} upstream {n}",
                            current["objects"][r]
                        ));
                    }
                }
            } else if current[k] != *v {
                diffs.push(format!("{k}: report {} upstream {v}", current[k]));
            }
        }
        ensure!(
            current.as_object().map(|m| m.len()) == before.as_object().map(|m| m.len()),
            "fields differ: {current} vs {before}"
        );
        if diffs.is_empty() && before == after {
            // The known set, as the test made it (not only "equal to upstream").
            ensure!(
                current["runningPods"] == 2 && current["pods"] == 3,
                "{current}"
            );
            ensure!(
                current["cpuRequestsMillicores"] == 450 && current["cpuLimitsMillicores"] == 1200,
                "{current}"
            );
            ensure!(
                current["memoryRequestsBytes"] == 96u64 << 20
                    && current["storageRequestsBytes"] == (1u64 << 30) + (500u64 << 20),
                "{current}"
            );
            ensure!(
                current["objects"]["configmaps"].as_u64() >= Some(3)
                    && current["objects"]["customresourcedefinitions.apiextensions.k8s.io"] == 1,
                "{current}"
            );
            eprintln!(
                "usage report matches upstream field by field after {:?}: {current}",
                t0.elapsed()
            );
            return Ok(report);
        }
        if t0.elapsed() > Duration::from_secs(30) {
            bail!(
                "usage report differs from upstream: {diffs:?}\nreport: {report}\nupstream: {before}"
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

const PARSER: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {"families": 0, "series": 0, "tenant": {}}
for fam in text_string_to_metric_families(sys.stdin.read()):
    out["families"] += 1
    for s in fam.samples:
        out["series"] += 1
        if s.labels.get("tenant") == sys.argv[1]:
            rest = ",".join("%s=%s" % (k, v) for k, v in sorted(s.labels.items()) if k != "tenant")
            key = s.name + ("{%s}" % rest if rest else "")
            out["tenant"][key] = s.value
print(json.dumps(out))
"#;

fn metrics_checks(p: &Paddock, a: &Kubectl, report: &Value) -> Result<()> {
    // Some traffic of the tenant, a watch among it.
    a.run(&[
        "get",
        "configmaps",
        "-n",
        "team",
        "--watch",
        "--request-timeout=2s",
    ])
    .ok();
    a.run(&["get", "pods", "-n", "team"])?;
    let text = p.kubectl_admin()?.run(&["get", "--raw", "/metrics"])?;
    let python = paddock_e2e::tools::pyprom()?;
    let mut cmd = std::process::Command::new(python);
    cmd.arg("-c").arg(PARSER).arg(T);
    let out = paddock_e2e::process::run(&mut cmd, Some(&text), Duration::from_secs(60))?;
    ensure!(
        out.success(),
        "the exposition parser refused /metrics: {}",
        out.stderr
    );
    let parsed: Value = serde_json::from_str(&out.stdout)?;
    let t = &parsed["tenant"];
    eprintln!(
        "/metrics: {} families, {} series; tenant {T}: {} series",
        parsed["families"],
        parsed["series"],
        t.as_object().map_or(0, |m| m.len())
    );
    let current = &report["current"];
    for (series, want) in [
        ("paddock_tenant_running_pods", &current["runningPods"]),
        ("paddock_tenant_namespaces", &current["namespaces"]),
        (
            "paddock_tenant_storage_requests_bytes",
            &current["storageRequestsBytes"],
        ),
    ] {
        ensure!(
            t[series].as_f64() == want.as_f64(),
            "{series}: {} want {want}",
            t[series]
        );
    }
    ensure!(
        t["paddock_tenant_cpu_requests_cores"].as_f64() == Some(0.45),
        "{t}"
    );
    ensure!(
        t["paddock_tenant_objects{resource=secrets}"].as_f64() >= Some(1.0),
        "{t}"
    );
    ensure!(
        t["paddock_tenant_response_bytes_total"].as_f64() > Some(0.0),
        "{t}"
    );
    ensure!(
        t["paddock_tenant_watch_seconds_total"].as_f64() > Some(0.0),
        "{t}"
    );
    ensure!(
        t["paddock_requests_total{code=2xx,verb=list}"].as_f64() >= Some(1.0),
        "{t}"
    );
    Ok(())
}

#[test]
fn billing_key_usage_report_and_metrics() -> Result<()> {
    let cp = ControlPlane::start()?;
    let p = Paddock::start_with_args(
        &cp,
        StoreKind::Embedded,
        "paddock",
        &["--usage-refresh".into(), "1s".into()],
    )?;
    let up = cp.kubectl_admin()?;
    let (a, _other) = billing_checks(&p, &up)?;
    let report = usage_checks(&p, &a, &up)?;
    metrics_checks(&p, &a, &report)?;
    Ok(())
}
