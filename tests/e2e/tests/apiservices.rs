//! A tenant's read-only view of APIServices (docs/security.md "APIServices"), against the real
//! apiserver, whose crd-autoregistration controller makes one APIService per CRD group. Tenants
//! `apisva` and `apisvb` each install a CRD in group `widgets.example.com` (upstream
//! `<tid>-widgets.example.com`, APIService `v1.<tid>-widgets.example.com`). Through paddock,
//! `apisva` lists, gets, tables and watches APIServices as the cluster admin does, minus the
//! groups it does not see: built-in groups' as they are, its own under its names, never
//! `apisvb`'s; its writes are refused with a Status. Straight at the apiserver, its real
//! identity reads none, its cluster identity reads all and writes none, even once a tenant
//! ClusterRole grants it every verb (the guard's `-refused` policy).
//!
//! One control plane, one paddock; about a minute on a quiet machine.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use paddock_e2e::process::poll_within;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

const A: &str = "apisva";
const B: &str = "apisvb";
const GROUP: &str = "widgets.example.com";

fn crd(plural: &str, group: &str) -> String {
    let kind = format!(
        "{}{}",
        plural[..1].to_uppercase(),
        &plural[1..plural.len() - 1]
    );
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {plural}.{group}}}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{plural: {plural}, singular: {}, kind: {kind}}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n",
        &plural[..plural.len() - 1]
    )
}

/// Runs a step; Ok(stdout) when it succeeded, Err(stdout+stderr) when it failed.
fn step(
    k: &Kubectl,
    args: &[String],
    stdin: Option<&str>,
) -> Result<std::result::Result<String, String>> {
    let (_, out) = k.run_raw(args, stdin, &BTreeMap::new(), None)?;
    Ok(if out.success() {
        Ok(out.stdout)
    } else {
        Err(format!("{}{}", out.stdout, out.stderr))
    })
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

/// `args` followed by `extra` (an identity's `--as` flags).
fn with(a: &[&str], extra: &[String]) -> Vec<String> {
    args(a).into_iter().chain(extra.iter().cloned()).collect()
}

/// The tenant admin's real identity at the apiserver.
fn real_admin(t: &str) -> Vec<String> {
    vec![
        format!("--as=paddock:{t}:admin"),
        format!("--as-group=paddock:{t}:tenant-admins"),
        format!("--as-group=paddock:tenant:{t}"),
    ]
}

/// The tenant admins' cluster (shadow) identity at the apiserver.
fn shadow_admin(t: &str) -> Vec<String> {
    vec![
        format!("--as=paddock:cluster:{t}:paddock:{t}:admin"),
        format!("--as-group=paddock:cluster:{t}:paddock:{t}:tenant-admins"),
        format!("--as-group=paddock:tenant:{t}"),
        "--as-group=paddock:tenant-cluster-scope-admins".to_owned(),
    ]
}

/// The names of `kubectl get apiservices` (a JSON list, not a Table).
fn names(k: &Kubectl) -> Result<BTreeSet<String>> {
    let out = k.run(&[
        "get",
        "apiservices",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
    ])?;
    Ok(out.lines().map(str::to_owned).collect())
}

/// What tenant `t` should see of the cluster admin's `direct` names: built-in groups' as they
/// are, its own CRD groups' under its names, metrics.k8s.io's (open to every tenant); no other
/// tenant's, no other platform group (none exists in the test bed but the built-in ones).
fn tenant_view(t: &str, direct: &BTreeSet<String>) -> BTreeSet<String> {
    let own = format!("{t}-");
    direct
        .iter()
        .filter_map(|n| {
            let (version, group) = n.split_once('.')?;
            if let Some(g) = group.strip_prefix(&own) {
                Some(format!("{version}.{g}"))
            } else if paddock_core::catalog::is_builtin_group(group) || group == "metrics.k8s.io" {
                Some(n.clone())
            } else {
                None
            }
        })
        .collect()
}

#[test]
fn apiservices() -> Result<()> {
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
    let ka = paddock.kubectl_tenant(A)?;
    let kb = paddock.kubectl_tenant(B)?;
    let mut failures: Vec<String> = Vec::new();
    let mut check = |what: &str, ok: bool, detail: String| {
        if !ok {
            failures.push(format!("{what}: {detail}"));
        }
    };

    // Both tenants install the same CRD group; the apiserver makes each one's APIService.
    let gizmos = format!("gizmos.{GROUP}");
    for k in [&ka, &kb] {
        k.run_stdin(&["apply", "-f", "-"], Some(&crd("gizmos", GROUP)))?;
        k.run(&[
            "wait",
            "--for=condition=Established",
            &format!("crd/{gizmos}"),
            "--timeout=60s",
        ])?;
    }
    let upstream_a = format!("v1.{A}-{GROUP}");
    let upstream_b = format!("v1.{B}-{GROUP}");
    let took = poll_within(
        Duration::from_secs(60),
        Duration::from_millis(250),
        "both tenants' APIServices upstream",
        || {
            let n = names(&up)?;
            Ok(n.contains(&upstream_a) && n.contains(&upstream_b))
        },
    )?;
    eprintln!("both APIServices upstream {took:?} after the CRDs were Established");
    let own = format!("v1.{GROUP}");

    // --- The list: the cluster admin's (direct) minus other tenants' groups, own translated.
    let direct = names(&up)?;
    let want = tenant_view(A, &direct);
    let got = names(&ka)?;
    check(
        "list: the tenant's view of the cluster admin's list",
        got == want,
        format!(
            "missing {:?}, extra {:?}",
            want.difference(&got).collect::<Vec<_>>(),
            got.difference(&want).collect::<Vec<_>>()
        ),
    );
    check(
        "list: v1.apps and the own group, not the other tenant's",
        got.contains("v1.apps") && got.contains(&own) && !got.iter().any(|n| n.contains(B)),
        format!("{got:?}"),
    );
    eprintln!(
        "direct: {} APIServices; {A} sees {} ({} dropped)",
        direct.len(),
        got.len(),
        direct.len().saturating_sub(got.len())
    );
    // kubectl's Table (server-side printing), as `kubectl get apiservices` shows it.
    let table = step(&ka, &args(&["get", "apiservices"]), None)?;
    check(
        "table: names the own group and v1.apps, no tenant id",
        matches!(&table, Ok(t) if t.contains(&own) && t.contains("v1.apps") && t.contains("Local")
            && !t.contains(A) && !t.contains(B)),
        format!("{table:?}"),
    );
    // The other tenant sees its own under the same name, not A's.
    let got_b = names(&kb)?;
    check(
        "list of the other tenant: its own view",
        got_b == tenant_view(B, &direct),
        format!("{got_b:?}"),
    );

    // --- Get by name: the same object as the cluster admin's, in the tenant's names.
    let mine = step(&ka, &args(&["get", "apiservice", &own, "-o", "json"]), None)?;
    let theirs = up.run(&["get", "apiservice", &upstream_a, "-o", "json"])?;
    match mine {
        Ok(mine) => {
            let mine: serde_json::Value = serde_json::from_str(&mine)?;
            let mut want: serde_json::Value = serde_json::from_str(&theirs)?;
            want["metadata"]["name"] = serde_json::json!(own);
            want["spec"]["group"] = serde_json::json!(GROUP);
            for f in ["metadata", "spec", "status"] {
                if f == "metadata" {
                    for m in ["name", "uid", "resourceVersion", "labels"] {
                        check(
                            &format!("get: metadata.{m}"),
                            mine[f][m] == want[f][m],
                            format!("{} != {}", mine[f][m], want[f][m]),
                        );
                    }
                } else {
                    check(
                        &format!("get: {f}"),
                        mine[f] == want[f],
                        format!("{} != {}", mine[f], want[f]),
                    );
                }
            }
        }
        Err(e) => check("get the own group's APIService", false, e),
    }
    let yaml = step(&ka, &args(&["get", "apiservice", &own, "-o", "yaml"]), None)?;
    check(
        "get -o yaml",
        matches!(&yaml, Ok(y) if y.contains(&format!("name: {own}")) && y.contains(&format!("group: {GROUP}")) && !y.contains(A)),
        format!("{yaml:?}"),
    );
    let apps = step(
        &ka,
        &args(&["get", "apiservice", "v1.apps", "-o", "name"]),
        None,
    )?;
    check(
        "get v1.apps",
        apps.as_deref().map(str::trim) == Ok("apiservice.apiregistration.k8s.io/v1.apps"),
        format!("{apps:?}"),
    );
    // The other tenant's, by its upstream name: NotFound, as a name nobody has.
    for name in [upstream_b.as_str(), "v1.nobody-has.example.com"] {
        let r = step(&ka, &args(&["get", "apiservice", name]), None)?;
        check(
            &format!("get {name}: NotFound"),
            matches!(&r, Err(e) if e.contains("NotFound") && e.contains(&format!("\"{name}\" not found"))),
            format!("{r:?}"),
        );
    }

    // --- Writes: refused with a Status that names the policy; nothing changes upstream.
    for (what, a) in [
        ("delete", args(&["delete", "apiservice", &own])),
        ("delete v1.apps", args(&["delete", "apiservice", "v1.apps"])),
        (
            "label",
            args(&["label", "apiservice", "v1.apps", "pwned=yes"]),
        ),
    ] {
        let r = step(&ka, &a, None)?;
        check(
            &format!("{what}: refused"),
            matches!(&r, Err(e) if e.contains("Forbidden") && e.contains("apiservices.apiregistration.k8s.io are shared read-only in this cluster")),
            format!("{r:?}"),
        );
    }
    let r = step(&ka, &args(&["delete", "apiservice", &upstream_b]), None)?;
    check(
        "delete of the other tenant's: NotFound (never found)",
        matches!(&r, Err(e) if e.contains("NotFound")),
        format!("{r:?}"),
    );
    let still = names(&up)?;
    check(
        "nothing deleted upstream",
        still.contains(&upstream_a) && still.contains(&upstream_b) && still.contains("v1.apps"),
        format!("{still:?}"),
    );

    // --- Watches: a raw watch, and a Table watch while both tenants add a group.
    let raw = step(
        &ka,
        &args(&[
            "get",
            "--raw",
            "/apis/apiregistration.k8s.io/v1/apiservices?watch=1&timeoutSeconds=3",
        ]),
        None,
    )?;
    check(
        "raw watch: own group and v1.apps, no tenant id",
        matches!(&raw, Ok(w) if w.contains(&format!("\"name\":\"{own}\"")) && w.contains("\"name\":\"v1.apps\"")
            && !w.contains(A) && !w.contains(B)),
        format!("{raw:?}"),
    );
    let late = "late.example.org";
    let (watched, ()) = std::thread::scope(|s| -> Result<(String, ())> {
        let w = s.spawn(|| {
            ka.run_raw(
                &args(&["get", "apiservices", "-w", "--request-timeout=12s"]),
                None,
                &BTreeMap::new(),
                Some(Duration::from_secs(30)),
            )
        });
        std::thread::sleep(Duration::from_secs(2));
        for k in [&kb, &ka] {
            k.run_stdin(&["apply", "-f", "-"], Some(&crd("things", late)))?;
        }
        let (_, out) = w
            .join()
            .map_err(|_| anyhow::anyhow!("the watch thread panicked"))??;
        Ok((format!("{}{}", out.stdout, out.stderr), ()))
    })?;
    check(
        "table watch: the own new group arrives, the other tenant's never",
        watched.contains(&format!("v1.{late}"))
            && watched.contains(&own)
            && !watched.contains(A)
            && !watched.contains(B),
        watched.clone(),
    );

    // --- Straight at the apiserver: the real identity reads none; the cluster identity reads
    // all (the shared cluster-scope role) and writes none.
    let can_i = |verb: &str, who: &[String]| -> Result<String> {
        let (_, out) = up.run_raw(
            &with(
                &["auth", "can-i", verb, "apiservices.apiregistration.k8s.io"],
                who,
            ),
            None,
            &BTreeMap::new(),
            None,
        )?;
        Ok(out.stdout.trim().to_owned())
    };
    for (what, verb, who, want) in [
        ("real identity: list", "list", real_admin(A), "no"),
        ("cluster identity: list", "list", shadow_admin(A), "yes"),
        ("cluster identity: watch", "watch", shadow_admin(A), "yes"),
        ("cluster identity: delete", "delete", shadow_admin(A), "no"),
    ] {
        let a = can_i(verb, &who)?;
        check(&format!("bypass can-i, {what}"), a == want, a.clone());
    }
    let r = step(&up, &with(&["get", "apiservices"], &real_admin(A)), None)?;
    check(
        "bypass: the real identity's list is refused",
        matches!(&r, Err(e) if e.contains("Forbidden")),
        format!("{r:?}"),
    );
    // With every verb granted by a ClusterRole of the tenant's own (written through paddock,
    // bound to its admin), RBAC lets the cluster identity write APIServices; the guard does not.
    ka.run_stdin(
        &["apply", "-f", "-"],
        Some(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: apiservice-writer}\nrules: [{apiGroups: [apiregistration.k8s.io], resources: [apiservices, apiservices/status], verbs: ['*']}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: apiservice-writer}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: apiservice-writer}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: admin}]\n",
        ),
    )?;
    poll_within(
        Duration::from_secs(20),
        Duration::from_millis(250),
        "the tenant ClusterRole's grant upstream",
        || Ok(can_i("create", &shadow_admin(A))? == "yes"),
    )?;
    // Named under the tenant's prefix and labelled: rules 3 and 4 would let it through, only
    // `-refused` refuses it. The deletes break rule 3 too: any guard's refusal will do.
    let evil = format!(
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: {A}-v1.evil.example.org, labels: {{paddock.io/tenant: {A}}}}}\nspec: {{group: evil.example.org, version: {A}-v1, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true, service: {{namespace: {A}-default, name: evil, port: 443}}}}\n"
    );
    let create = with(&["create", "--dry-run=server", "-f", "-"], &shadow_admin(A));
    let mut last = Ok(String::new());
    let refused = poll_within(
        Duration::from_secs(20),
        Duration::from_millis(250),
        "the guard's refusal",
        || {
            last = step(&up, &create, Some(&evil))?;
            Ok(matches!(&last, Err(e) if e.contains("paddock-tenant-guard-refused")))
        },
    );
    check(
        "bypass with RBAC: create a prefixed, labelled APIService refused by -refused",
        refused.is_ok(),
        format!("{last:?}"),
    );
    for (what, name) in [
        ("delete v1.apps", "v1.apps"),
        ("delete the own group's", upstream_a.as_str()),
    ] {
        let a = with(
            &["delete", "--dry-run=server", "apiservice", name],
            &shadow_admin(A),
        );
        let r = step(&up, &a, None)?;
        check(
            &format!("bypass with RBAC: {what} refused by the guard"),
            matches!(&r, Err(e) if e.contains("ValidatingAdmissionPolicy 'paddock-tenant-guard")),
            format!("{r:?}"),
        );
    }
    // The positive control: the same RBAC lets the cluster identity read, and the cluster
    // admin may write (the refusal is the guard's, for tenants only).
    let r = step(
        &up,
        &args(&["create", "--dry-run=server", "-f", "-"]),
        Some(&evil),
    )?;
    check(
        "control: the cluster admin's create (dry run)",
        r.is_ok(),
        format!("{r:?}"),
    );

    if !failures.is_empty() {
        bail!(
            "{} APIService check(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    Ok(())
}
