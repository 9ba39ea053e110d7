//! Helpers of the export, import and move tests (issue 41 acceptance 4 and 5;
//! `tests/tenant_export.rs`, `tests/clusters_move.rs`): the source tenant's objects (CRDs and
//! their CRs, RBAC, a Helm release, ConfigMaps, Secrets, a Deployment), `paddock tenant
//! export|import` with the archive on stdout/stdin, and a tenant's view normalised so that two
//! tenants' views compare equal when they hold the same objects.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Map, Value};

use crate::process::{self, Output};
use crate::{Kubectl, Paddock};

/// What the comparison reads: `kubectl get <KINDS> -A -o json`.
pub const KINDS: &str = "all,cm,secret,crd,widgets,gadgets";
/// The same without the custom kinds, for a tenant that does not have their CRDs (yet).
pub const BASE_KINDS: &str = "all,cm,secret,crd";

/// The source tenant's objects, applied by its admin.
pub const OBJECTS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: v1
kind: Namespace
metadata: {name: apps, labels: {team: blue}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: apps}
data: {colour: green, size: "3"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: apps}
stringData: {password: hunter2}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot, namespace: apps}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: apps}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: apps}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: robot, namespace: apps}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-reader}
rules: [{apiGroups: [example.com], resources: [widgets, gadgets], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: widget-readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: devs}, {kind: ServiceAccount, name: robot, namespace: apps}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: apps}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: robot
      containers: [{name: pause, image: registry.k8s.io/pause:3.10}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: apps}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
"#;

/// The custom resources, applied once their CRDs are established.
pub const CUSTOM: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: apps}
spec: {size: 3, colour: green}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1}
spec: {gears: 7}
"#;

/// A tenant's objects: [`OBJECTS`], [`CUSTOM`] and the Helm release `rel` of a one-ConfigMap
/// chart in namespace `apps`.
pub fn populate(k: &Kubectl, helm: &Helm) -> Result<()> {
    k.run_stdin(&["apply", "-f", "-"], Some(OBJECTS))?;
    k.run(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "crd/gadgets.example.com",
        "--timeout=60s",
    ])?;
    // The CRDs' kinds reach paddock's catalog on the first miss (at most one re-read a second).
    crate::process::poll_within(
        Duration::from_secs(30),
        Duration::from_millis(500),
        "the custom resources created",
        || {
            let (_, out) = k.run_raw(
                &["apply".into(), "-f".into(), "-".into()],
                Some(CUSTOM),
                &Default::default(),
                None,
            )?;
            Ok(out.success())
        },
    )?;
    helm.run(
        k,
        &[
            "install",
            "rel",
            &helm.chart()?.to_string_lossy(),
            "-n",
            "apps",
        ],
    )?;
    Ok(())
}

/// helm with a home of its own.
pub struct Helm {
    pub bin: PathBuf,
    pub home: PathBuf,
}

impl Helm {
    pub fn new(home: &Path) -> Result<Self> {
        Ok(Helm {
            bin: crate::tools::helm()?,
            home: home.to_owned(),
        })
    }

    /// A chart of one ConfigMap, written under the home.
    pub fn chart(&self) -> Result<PathBuf> {
        let dir = self.home.join("chart");
        std::fs::create_dir_all(dir.join("templates"))?;
        std::fs::write(
            dir.join("Chart.yaml"),
            "apiVersion: v2\nname: tiny\nversion: 0.1.0\n",
        )?;
        std::fs::write(
            dir.join("templates").join("cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-tiny\ndata:\n  release: {{ .Release.Name }}\n",
        )?;
        Ok(dir)
    }

    /// Runs helm as the kubeconfig of `k`; requires success; stdout.
    pub fn run(&self, k: &Kubectl, args: &[&str]) -> Result<String> {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--kubeconfig")
            .arg(k.kubeconfig())
            .args(args)
            .env_remove("KUBECONFIG")
            .env("HELM_CACHE_HOME", self.home.join("cache"))
            .env("HELM_CONFIG_HOME", self.home.join("config"))
            .env("HELM_DATA_HOME", self.home.join("data"));
        let out = process::run(&mut cmd, None, Duration::from_secs(180))?;
        ensure!(out.success(), "helm {args:?}: {}{}", out.stdout, out.stderr);
        Ok(out.stdout)
    }
}

/// `paddock <args>` with the platform admin's kubeconfig and `stdin`.
pub fn cli(p: &Paddock, args: &[&str], stdin: Option<&str>) -> Result<Output> {
    let mut cmd = Command::new(crate::paddock::paddock_binary()?);
    cmd.args(args).arg("--kubeconfig").arg(p.admin_kubeconfig());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PADDOCK_") {
            cmd.env_remove(k);
        }
    }
    process::run(&mut cmd, stdin, Duration::from_secs(600))
}

/// `paddock tenant export <id> [--secrets]`: the archive (all ASCII: YAML, JSON, tar headers).
pub fn export(p: &Paddock, id: &str, secrets: bool) -> Result<String> {
    let mut args = vec!["tenant", "export", id];
    if secrets {
        args.push("--secrets");
    }
    let out = cli(p, &args, None)?;
    ensure!(out.success(), "tenant export {id}: {}", out.stderr);
    Ok(out.stdout)
}

/// The archive's manifest (its first entry).
pub fn manifest(tar: &str) -> Result<Value> {
    let body = tar.get(512..).context("an archive shorter than a header")?;
    let end = body.find('\0').context("no end to the manifest")?;
    Ok(serde_json::from_str(&body[..end])?)
}

/// `kubectl get <kinds> -A -o json` of a tenant, normalised: what a cluster assigns (ids,
/// versions, times, IPs, nodes, generated pod names, token volumes, the cluster's CA) and
/// status taken out, items sorted by kind, namespace and name.
pub fn snapshot(k: &Kubectl, kinds: &str) -> Result<Value> {
    let out = k.run(&["get", kinds, "-A", "-o", "json"])?;
    let v: Value = serde_json::from_str(&out)?;
    let mut items: Vec<Value> = v["items"]
        .as_array()
        .context("no items")?
        .iter()
        .map(normalise)
        .collect();
    items.sort_by_key(|i| {
        (
            i["kind"].as_str().unwrap_or("").to_owned(),
            i["metadata"]["namespace"].as_str().unwrap_or("").to_owned(),
            i["metadata"]["name"].as_str().unwrap_or("").to_owned(),
        )
    });
    Ok(Value::Array(items))
}

fn normalise(item: &Value) -> Value {
    let mut o = item.as_object().cloned().unwrap_or_default();
    o.remove("status");
    let kind = o
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if let Some(Value::Object(m)) = o.get_mut("metadata") {
        for f in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
            "selfLink",
        ] {
            m.remove(f);
        }
        if let Some(Value::Array(refs)) = m.get_mut("ownerReferences") {
            for r in refs.iter_mut().filter_map(Value::as_object_mut) {
                r.remove("uid");
            }
        }
        // paddock's own objects (the `kubernetes` Service) say which tenant they serve.
        if let Some(Value::Object(labels)) = m.get_mut("labels")
            && let Some(v) = labels.get_mut("paddock.io/managed-for")
        {
            *v = Value::from("<tenant>");
        }
        if kind == "Pod" {
            // A generated name's random tail.
            m.remove("name");
        }
    }
    let name = o["metadata"]["name"].as_str().unwrap_or("").to_owned();
    match kind.as_str() {
        "Pod" => {
            if let Some(Value::Object(spec)) = o.get_mut("spec") {
                pod_spec(spec);
            }
        }
        "Service" => {
            if let Some(Value::Object(spec)) = o.get_mut("spec") {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
        }
        "ConfigMap" if name == "kube-root-ca.crt" => {
            o.remove("data");
        }
        _ => {}
    }
    Value::Object(o)
}

fn pod_spec(spec: &mut Map<String, Value>) {
    spec.remove("nodeName");
    let token = |v: &Value| {
        v["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("kube-api-access-"))
    };
    if let Some(Value::Array(vols)) = spec.get_mut("volumes") {
        vols.retain(|v| !token(v));
    }
    if let Some(Value::Array(cs)) = spec.get_mut("containers") {
        for c in cs.iter_mut() {
            if let Some(Value::Array(mounts)) = c.get_mut("volumeMounts") {
                mounts.retain(|m| !token(m));
            }
        }
    }
}

/// The two snapshots are equal; otherwise the first item that differs.
pub fn same(a: &Value, b: &Value, what: &str) -> Result<()> {
    if a == b {
        return Ok(());
    }
    let (xs, ys) = (
        a.as_array().cloned().unwrap_or_default(),
        b.as_array().cloned().unwrap_or_default(),
    );
    let key = |v: &Value| {
        format!(
            "{} {}/{}",
            v["kind"].as_str().unwrap_or(""),
            v["metadata"]["namespace"].as_str().unwrap_or(""),
            v["metadata"]["name"].as_str().unwrap_or("")
        )
    };
    for (x, y) in xs.iter().zip(&ys) {
        if x != y {
            bail!(
                "{what}: {} differs:\n{}\n---\n{}",
                key(x),
                serde_json::to_string_pretty(x)?,
                serde_json::to_string_pretty(y)?
            );
        }
    }
    let kx: Vec<String> = xs.iter().map(key).collect();
    let ky: Vec<String> = ys.iter().map(key).collect();
    bail!(
        "{what}: {} items against {}:\n{kx:?}\n{ky:?}",
        xs.len(),
        ys.len()
    )
}

/// Running pods of `app=web` in the tenant's namespace `apps`.
pub fn web_pods_running(k: &Kubectl) -> Result<usize> {
    let phases = k.run(&[
        "-n",
        "apps",
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
