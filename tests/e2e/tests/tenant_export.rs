//! A tenant exported and imported as another tenant on the same paddock and cluster (issue 41
//! acceptance 4, the same-cluster half; docs/operations.md "Export, import and move"), against
//! the real control plane, paddock as a real process, real kubectl and helm:
//!
//! - the source tenant holds two CRDs (namespaced and cluster-scoped) with a CR each, a
//!   namespace, a ConfigMap, a Secret, a ServiceAccount, a Role and RoleBinding, a ClusterRole
//!   and ClusterRoleBinding, a Deployment and its Service, and a Helm release;
//! - `paddock tenant export --secrets` writes an archive in which the upstream prefix appears
//!   nowhere, whose manifest lists CRDs first, marks every Secret, and leaves out what
//!   Kubernetes and paddock make (checked entry by entry); without `--secrets` there is no Secret;
//! - a truncated, a damaged and a foreign archive, one naming a kind the target refuses (a
//!   Node), and one whose objects a server-side dry run refuses (a ClusterRoleBinding to
//!   `system:masters` beside a harmless ConfigMap) are each refused with a clear error, and the
//!   target tenant is unchanged after each (its view compared before and after);
//! - `--dry-run` writes nothing; the import recreates everything: `kubectl get
//!   all,cm,secret,crd,widgets,gadgets -A -o json` of both tenants, normalised, are equal,
//!   `helm list` shows the release in the new tenant, and upstream the objects are the new
//!   tenant's (its prefix, its label) while the source's are untouched;
//! - importing the same archive again is refused (the objects exist), nothing changed.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_core::portable::archive::{self, Entry, Manifest};
use paddock_e2e::portable::{self, BASE_KINDS, Helm, KINDS};
use paddock_e2e::{ControlPlane, Paddock, StoreKind};

const SRC: &str = "expsrc";
const DST: &str = "expdst";

/// `paddock tenant import <DST>` of `tar` fails naming `words`, and DST's view of `kinds` is
/// `before`.
fn refused(
    p: &Paddock,
    tar: &str,
    words: &[&str],
    (kinds, before): (&str, &serde_json::Value),
) -> Result<()> {
    let k = p.kubectl_tenant(DST)?;
    let out = portable::cli(p, &["tenant", "import", DST], Some(tar))?;
    ensure!(
        !out.success() && words.iter().all(|w| out.stderr.contains(w)),
        "expected the import refused naming {words:?}: exit {:?}\n{}{}",
        out.code,
        out.stdout,
        out.stderr
    );
    println!("refused as expected: {}", out.stderr.trim());
    portable::same(
        before,
        &portable::snapshot(&k, kinds)?,
        "the target after a refusal",
    )
}

/// An archive of `objects` (YAML texts), written as paddock writes one.
fn crafted(objects: &[&str]) -> Result<String> {
    let mut entries = Vec::new();
    let mut files = Vec::new();
    for (i, y) in objects.iter().enumerate() {
        let v: serde_json::Value = serde_norway::from_str(y)?;
        let (api_version, kind, namespace, name) = paddock_core::portable::objects::identity(&v);
        entries.push(Entry {
            file: archive::file_name(i + 1, &kind),
            sha256: archive::sha256_hex(y.as_bytes()),
            secret: false,
            api_version,
            kind,
            namespace,
            name,
        });
        files.push(y.as_bytes().to_vec());
    }
    let m = Manifest {
        format: archive::FORMAT.into(),
        source_tenant: "crafty".into(),
        created: String::new(),
        secrets: false,
        volume_data: "not included".into(),
        objects: entries.len(),
        entries,
    };
    Ok(String::from_utf8(archive::write(&m, &files)?)?)
}

#[test]
fn export_and_import_on_one_cluster() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let started = Instant::now();
    let p = Paddock::start(&cp, StoreKind::Embedded)?;
    let up = cp.kubectl_admin()?;
    let src = p.kubectl_tenant(SRC)?;
    let dst = p.kubectl_tenant(DST)?;
    let helm = Helm::new(&cp.dir().join("helm-export"))?;
    portable::populate(&src, &helm)?;
    paddock_e2e::process::poll_within(
        Duration::from_secs(90),
        Duration::from_millis(500),
        "the source's 2 pods Running",
        || Ok(portable::web_pods_running(&src)? == 2),
    )?;

    // ---- export ------------------------------------------------------------------------------
    let t0 = Instant::now();
    let tar = portable::export(&p, SRC, true)?;
    println!(
        "FIGURE export: {} bytes in {:.2} s",
        tar.len(),
        t0.elapsed().as_secs_f64()
    );
    ensure!(
        !tar.contains(&format!("{SRC}-")),
        "the upstream prefix {SRC}- appears in the archive"
    );
    let m = portable::manifest(&tar)?;
    let entries = m["entries"].as_array().context("no entries")?;
    let listed: Vec<String> = entries
        .iter()
        .map(|e| {
            format!(
                "{} {}/{}",
                e["kind"].as_str().unwrap_or(""),
                e["namespace"].as_str().unwrap_or(""),
                e["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    println!("manifest: {} objects: {listed:#?}", m["objects"]);
    ensure!(m["format"] == archive::FORMAT && m["sourceTenant"] == SRC && m["secrets"] == true);
    ensure!(
        listed[0].starts_with("CustomResourceDefinition")
            && listed[1].starts_with("CustomResourceDefinition"),
        "CRDs are not first: {listed:?}"
    );
    for want in [
        "Namespace /apps",
        "ConfigMap apps/settings",
        "Secret apps/creds",
        "ServiceAccount apps/robot",
        "Role apps/reader",
        "RoleBinding apps/reader",
        "ClusterRole /widget-reader",
        "ClusterRoleBinding /widget-readers",
        "Deployment apps/web",
        "Service apps/web",
        "Widget apps/w1",
        "Gadget /g1",
        "Secret apps/sh.helm.release.v1.rel.v1",
        "ConfigMap apps/rel-tiny",
    ] {
        ensure!(
            listed.iter().any(|l| l == want),
            "{want} not exported: {listed:?}"
        );
    }
    for never in [
        "ConfigMap apps/kube-root-ca.crt",
        "ServiceAccount apps/default",
        "ReplicaSet ",
        "Pod ",
        "Event ",
        "Endpoints ",
        "EndpointSlice ",
    ] {
        ensure!(
            !listed.iter().any(|l| l.starts_with(never)),
            "{never} exported: {listed:?}"
        );
    }
    ensure!(
        entries
            .iter()
            .all(|e| (e["kind"] == "Secret") == (e["secret"] == true)),
        "a Secret not marked, or a mark on another kind"
    );
    let plain = portable::export(&p, SRC, false)?;
    let pm = portable::manifest(&plain)?;
    ensure!(
        pm["entries"]
            .as_array()
            .is_some_and(|es| es.iter().all(|e| e["kind"] != "Secret")),
        "an export without --secrets holds a Secret"
    );

    // ---- refusals: nothing written -----------------------------------------------------------
    let before = portable::snapshot(&dst, BASE_KINDS)?;
    let before = (BASE_KINDS, &before);
    refused(&p, &tar[..tar.len() / 2], &["truncated"], before)?;
    let damaged = tar.replacen("colour: green", "colour: gre3n", 1);
    ensure!(damaged != tar, "nothing to damage");
    refused(&p, &damaged, &["damaged", "sha256"], before)?;
    refused(
        &p,
        &"x".repeat(4096),
        &["not a paddock tenant export"],
        before,
    )?;
    let node = crafted(&["apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n"])?;
    refused(&p, &node, &["refuses", "Node"], before)?;
    let masters = crafted(&[
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: harmless\n  namespace: default\n",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: own-everything\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: Group\n  name: system:masters\n",
    ])?;
    refused(
        &p,
        &masters,
        &["dry run", "ClusterRoleBinding own-everything"],
        before,
    )?;
    // Its control: the harmless ConfigMap alone is imported (then removed again).
    let harmless = crafted(&[
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: harmless\n  namespace: default\n",
    ])?;
    let out = portable::cli(&p, &["tenant", "import", DST], Some(&harmless))?;
    ensure!(out.success(), "the harmless archive: {}", out.stderr);
    dst.run(&["get", "configmap", "harmless"])?;
    dst.run(&["delete", "configmap", "harmless"])?;

    // ---- dry run, then the import ------------------------------------------------------------
    let out = portable::cli(&p, &["tenant", "import", DST, "--dry-run"], Some(&tar))?;
    ensure!(out.success(), "import --dry-run: {}", out.stderr);
    let summary: serde_json::Value = serde_json::from_str(&out.stdout)?;
    ensure!(summary["dryRun"] == true, "{summary}");
    portable::same(
        before.1,
        &portable::snapshot(&dst, BASE_KINDS)?,
        "after --dry-run",
    )?;
    let t0 = Instant::now();
    let out = portable::cli(&p, &["tenant", "import", DST], Some(&tar))?;
    ensure!(out.success(), "import: {}{}", out.stdout, out.stderr);
    println!(
        "FIGURE import of {} objects: {:.2} s ({})",
        m["objects"],
        t0.elapsed().as_secs_f64(),
        out.stderr.trim()
    );
    paddock_e2e::process::poll_within(
        Duration::from_secs(90),
        Duration::from_millis(500),
        "the imported Deployment's 2 pods Running",
        || Ok(portable::web_pods_running(&dst)? == 2),
    )?;
    portable::same(
        &portable::snapshot(&src, KINDS)?,
        &portable::snapshot(&dst, KINDS)?,
        "the source and the imported tenant",
    )?;
    let releases = helm.run(&dst, &["list", "-n", "apps"])?;
    ensure!(
        releases.contains("rel") && releases.contains("deployed"),
        "helm list in the imported tenant: {releases}"
    );
    // Straight at the apiserver: the copies are the new tenant's, the source's untouched.
    let label = up.run(&[
        "-n",
        &format!("{DST}-apps"),
        "get",
        "configmap",
        "settings",
        "-o",
        "jsonpath={.data.colour}",
    ])?;
    ensure!(label == "green", "upstream {DST}-apps/settings: {label}");
    up.run(&["get", "crd", &format!("widgets.{DST}-example.com")])?;
    up.run(&[
        "get",
        "clusterrolebinding",
        &format!("{DST}-widget-readers"),
    ])?;
    up.run(&["-n", &format!("{SRC}-apps"), "get", "configmap", "settings"])?;

    // ---- again: refused, nothing changed -----------------------------------------------------
    let now = portable::snapshot(&dst, KINDS)?;
    refused(&p, &tar, &["dry run", "already exists"], (KINDS, &now))?;
    println!(
        "export and import on one cluster: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
