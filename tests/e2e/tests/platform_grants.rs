//! Platform grants (docs/security.md "Platform grants"): a tenant whose
//! policy names a shared built-in kind in `platformKinds` writes it as a cluster admin would;
//! a tenant without the grant is still refused, and the grant reaches no other kind.
//! Each step runs directly against the apiserver first (the cluster admin's answer), then
//! through paddock; the bypass runs (each tenant's cluster identity straight at the apiserver)
//! show that upstream RBAC grants exactly the granted tenant's admins exactly those kinds.
//!
//! One control plane, one paddock; about a minute on a quiet machine.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

const GRANTED: &str = "grantd";
const PLAIN: &str = "plainn";

fn ingress_class(name: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {{name: {name}}}\nspec: {{controller: example.com/ingress}}\n"
    )
}

fn runtime_class(name: &str) -> String {
    format!(
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {{name: {name}}}\nhandler: runc\n"
    )
}

/// An unschedulable Node with no kubelet behind it, as the conformance Node lifecycle test makes.
fn fake_node(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\nspec: {{unschedulable: true}}\n"
    )
}

/// A CSR for a signer of the test's own (nothing signs it), as the conformance CSR test makes.
fn csr(name: &str) -> Result<String> {
    use base64::Engine as _;
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(vec!["e2e.example.com".to_owned()])?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "e2e.example.com");
    let pem = params.serialize_request(&key)?.pem()?;
    let request = base64::engine::general_purpose::STANDARD.encode(pem);
    Ok(format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: {name}}}\nspec: {{request: {request}, signerName: example.com/e2e, usages: [digital signature, server auth]}}\n"
    ))
}

/// The riskiest grants (docs/security.md "Platform grants"): Nodes and CSRs. The granted
/// tenant's admin creates, labels and deletes a fake Node and creates, approves and deletes a
/// CSR, as the conformance tests do (directly first); the other tenant is refused both. The
/// failed checks, each (what, detail).
fn nodes_and_csrs(up: &Kubectl, kg: &Kubectl, kp: &Kubectl) -> Result<Vec<(String, String)>> {
    let mut failed = Vec::new();
    let mut expect = |what: &str, ok: bool, r: &std::result::Result<String, String>| {
        if !ok {
            failed.push((what.to_owned(), format!("{r:?}")));
        }
    };
    let refused =
        |r: &std::result::Result<String, String>, why: &str| matches!(r, Err(e) if e.contains(why));
    for (who, k, n) in [("direct", up, "direct"), ("granted", kg, "granted")] {
        let node = format!("{n}-node");
        let r = step(k, &["create", "-f", "-"], Some(&fake_node(&node)))?;
        expect(&format!("{who}: create a Node"), r.is_ok(), &r);
        let r = step(k, &["label", "node", &node, "team=platform"], None)?;
        expect(&format!("{who}: label the Node"), r.is_ok(), &r);
        let name = format!("{n}-csr");
        let r = step(k, &["create", "-f", "-"], Some(&csr(&name)?))?;
        expect(&format!("{who}: create a CSR"), r.is_ok(), &r);
        let r = step(k, &["certificate", "approve", &name], None)?;
        expect(&format!("{who}: approve the CSR"), r.is_ok(), &r);
        if who == "granted" {
            let r = step(kp, &["create", "-f", "-"], Some(&fake_node("plain-node")))?;
            expect(
                "other tenant: create a Node refused",
                refused(&r, "shared read-only"),
                &r,
            );
            let r = step(
                kp,
                &["label", "node", &node, "team=other", "--overwrite"],
                None,
            )?;
            expect(
                "other tenant: label the granted tenant's Node refused",
                refused(&r, "shared read-only"),
                &r,
            );
            let r = step(kp, &["certificate", "approve", &name], None)?;
            expect(
                "other tenant: approve the CSR refused",
                refused(&r, "orbidden"),
                &r,
            );
        }
        let r = step(k, &["delete", "node", &node], None)?;
        expect(&format!("{who}: delete the Node"), r.is_ok(), &r);
        let r = step(k, &["delete", "csr", &name], None)?;
        expect(&format!("{who}: delete the CSR"), r.is_ok(), &r);
    }
    Ok(failed)
}

fn storage_class(name: &str) -> String {
    format!(
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {{name: {name}}}\nprovisioner: example.com/none\n"
    )
}

/// Runs a step; Ok(stdout) when it succeeded, Err(stdout+stderr) when it failed.
fn step(
    k: &Kubectl,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<std::result::Result<String, String>> {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let (_, out) = k.run_raw(&args, stdin, &BTreeMap::new(), None)?;
    Ok(if out.success() {
        Ok(out.stdout)
    } else {
        Err(format!("{}{}", out.stdout, out.stderr))
    })
}

/// The admins' cluster (shadow) identity of tenant `t` at the apiserver.
fn shadow_admin(t: &str) -> Vec<String> {
    vec![
        format!("--as=paddock:cluster:{t}:paddock:{t}:admin"),
        format!("--as-group=paddock:cluster:{t}:paddock:{t}:tenant-admins"),
        format!("--as-group=paddock:tenant:{t}"),
        "--as-group=paddock:tenant-cluster-scope-admins".to_owned(),
    ]
}

fn with(args: &[&str], extra: &[String]) -> Vec<String> {
    args.iter()
        .map(|s| (*s).to_owned())
        .chain(extra.iter().cloned())
        .collect()
}

#[test]
fn platform_grants() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let paddock = Paddock::start(&cp, StoreKind::Etcd).context("starting paddock")?;
    let result = run(&cp, &paddock);
    if result.is_err() {
        eprintln!("paddock log: {}", paddock.log_path().display());
    }
    result
}

fn run(cp: &ControlPlane, paddock: &Paddock) -> Result<()> {
    let up = cp.kubectl_admin()?;
    let kg = paddock.kubectl_tenant(GRANTED)?;
    let kp = paddock.kubectl_tenant(PLAIN)?;
    let mut failures: Vec<String> = Vec::new();
    let mut check = |what: &str, ok: bool, detail: String| {
        if !ok {
            failures.push(format!("{what}: {detail}"));
        }
    };

    // The cluster admin's answers (direct), the baseline of every step below.
    let direct = step(
        &up,
        &["create", "-f", "-"],
        Some(&ingress_class("direct-ic")),
    )?;
    check(
        "direct: create an IngressClass",
        direct.is_ok(),
        format!("{direct:?}"),
    );
    let direct = step(&up, &["delete", "ingressclass", "direct-ic"], None)?;
    check(
        "direct: delete an IngressClass",
        direct.is_ok(),
        format!("{direct:?}"),
    );

    // Before the grant: refused as a shared read-only kind, through paddock and at the
    // apiserver (the bypass).
    let r = step(
        &kg,
        &["create", "-f", "-"],
        Some(&ingress_class("early-ic")),
    )?;
    check(
        "before the grant: create refused",
        matches!(&r, Err(e) if e.contains("shared read-only")),
        format!("{r:?}"),
    );
    let (_, out) = up.run_raw(
        &with(
            &[
                "auth",
                "can-i",
                "create",
                "ingressclasses.networking.k8s.io",
            ],
            &shadow_admin(GRANTED),
        ),
        None,
        &BTreeMap::new(),
        None,
    )?;
    check(
        "before the grant: bypass can-i",
        out.stdout.trim() == "no",
        out.stdout.clone(),
    );

    let granted = paddock.cli(&[
        "tenant",
        "policy",
        GRANTED,
        "--patch",
        r#"{"platformKinds":["ingressclasses.networking.k8s.io","runtimeclasses.node.k8s.io","nodes.","certificatesigningrequests.certificates.k8s.io"]}"#,
    ])?;
    check(
        "the policy shows the grant",
        granted.contains("ingressclasses.networking.k8s.io"),
        granted.clone(),
    );
    // An unknown or ungrantable kind is refused with the list of grantable ones.
    let bad = paddock.cli(&[
        "tenant",
        "policy",
        GRANTED,
        "--patch",
        r#"{"platformKinds":["clusterroles.rbac.authorization.k8s.io"]}"#,
    ]);
    check(
        "an ungrantable kind is refused",
        matches!(&bad, Err(e) if format!("{e:#}").contains("cannot be granted")),
        format!("{bad:?}"),
    );

    // Granted: the tenant's admin writes the shared kind under its own name, as directly.
    let r = step(
        &kg,
        &["create", "-f", "-"],
        Some(&ingress_class("granted-ic")),
    )?;
    check(
        "granted: create an IngressClass",
        r.is_ok(),
        format!("{r:?}"),
    );
    let r = step(
        &up,
        &["get", "ingressclass", "granted-ic", "-o", "name"],
        None,
    )?;
    check(
        "granted: upstream has it unprefixed",
        r.as_deref().ok().map(str::trim) == Some("ingressclass.networking.k8s.io/granted-ic"),
        format!("{r:?}"),
    );
    let r = step(
        &kg,
        &[
            "get",
            "ingressclass",
            "granted-ic",
            "-o",
            "jsonpath={.spec.controller}",
        ],
        None,
    )?;
    check(
        "granted: read it back",
        r.as_deref().ok() == Some("example.com/ingress"),
        format!("{r:?}"),
    );
    let r = step(
        &kg,
        &["label", "ingressclass", "granted-ic", "team=platform"],
        None,
    )?;
    check("granted: patch it", r.is_ok(), format!("{r:?}"));
    let r = step(
        &kg,
        &["create", "-f", "-"],
        Some(&runtime_class("granted-rc")),
    )?;
    check(
        "granted: create a RuntimeClass",
        r.is_ok(),
        format!("{r:?}"),
    );
    for (what, detail) in nodes_and_csrs(&up, &kg, &kp)? {
        check(&what, false, detail);
    }
    // Upstream, the rights belong to the grant group, which paddock asserts only on requests of
    // the granted kinds by the tenant's admins: the admins' cluster identity alone has none.
    let can_i = |t: &str, grant_group: bool| -> Result<String> {
        let mut extra = shadow_admin(t);
        if grant_group {
            extra.push(format!("--as-group=paddock:platform-grant:{t}"));
        }
        let (_, out) = up.run_raw(
            &with(
                &[
                    "auth",
                    "can-i",
                    "create",
                    "ingressclasses.networking.k8s.io",
                ],
                &extra,
            ),
            None,
            &BTreeMap::new(),
            None,
        )?;
        Ok(out.stdout.trim().to_owned())
    };
    let a = can_i(GRANTED, true)?;
    check(
        "granted: bypass can-i with the grant group",
        a == "yes",
        a.clone(),
    );
    let a = can_i(GRANTED, false)?;
    check(
        "granted: bypass can-i without the grant group",
        a == "no",
        a.clone(),
    );
    let a = can_i(PLAIN, true)?;
    check(
        "other tenant: bypass can-i with its own grant group",
        a == "no",
        a.clone(),
    );

    // The grant reaches no other kind...
    let r = step(
        &kg,
        &["create", "-f", "-"],
        Some(&storage_class("granted-sc")),
    )?;
    check(
        "granted: a StorageClass is still refused",
        matches!(&r, Err(e) if e.contains("shared read-only")),
        format!("{r:?}"),
    );
    let r = step(&kg, &["get", "volumeattachments"], None)?;
    check(
        "granted: VolumeAttachments still refused",
        matches!(&r, Err(e) if e.contains("Forbidden") || e.contains("forbidden")),
        format!("{r:?}"),
    );
    // ...and no other tenant, through paddock or at the apiserver.
    let r = step(
        &kp,
        &["create", "-f", "-"],
        Some(&ingress_class("plain-ic")),
    )?;
    check(
        "other tenant: create refused",
        matches!(&r, Err(e) if e.contains("shared read-only")),
        format!("{r:?}"),
    );
    let r = step(&kp, &["delete", "ingressclass", "granted-ic"], None)?;
    check(
        "other tenant: delete of the granted tenant's object refused",
        matches!(&r, Err(e) if e.contains("shared read-only")),
        format!("{r:?}"),
    );
    let (_, out) = up.run_raw(
        &with(&["create", "-f", "-"], &shadow_admin(PLAIN)),
        Some(&ingress_class("bypass-ic")),
        &BTreeMap::new(),
        None,
    )?;
    check(
        "other tenant: bypass create refused",
        !out.success() && out.stderr.contains("forbidden"),
        format!("{}{}", out.stdout, out.stderr),
    );
    let r = step(
        &kp,
        &["get", "ingressclass", "granted-ic", "-o", "name"],
        None,
    )?;
    check(
        "other tenant: still reads the shared kind",
        r.is_ok(),
        format!("{r:?}"),
    );

    // The granted tenant deletes, as a cluster admin would.
    let r = step(&kg, &["delete", "ingressclass", "granted-ic"], None)?;
    check("granted: delete it", r.is_ok(), format!("{r:?}"));
    let r = step(&kg, &["delete", "runtimeclass", "granted-rc"], None)?;
    check(
        "granted: delete the RuntimeClass",
        r.is_ok(),
        format!("{r:?}"),
    );

    // Revoked: refused again, and the upstream rights are gone.
    paddock.cli(&[
        "tenant",
        "policy",
        GRANTED,
        "--patch",
        r#"{"platformKinds":[]}"#,
    ])?;
    let r = step(&kg, &["create", "-f", "-"], Some(&ingress_class("late-ic")))?;
    check(
        "revoked: create refused",
        matches!(&r, Err(e) if e.contains("shared read-only")),
        format!("{r:?}"),
    );
    let r = step(
        &up,
        &[
            "get",
            "clusterrole",
            &format!("paddock:platform-grant:{GRANTED}"),
        ],
        None,
    )?;
    check(
        "revoked: the grant role is gone upstream",
        matches!(&r, Err(e) if e.contains("NotFound")),
        format!("{r:?}"),
    );

    if !failures.is_empty() {
        bail!(
            "{} platform grant check(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    Ok(())
}
