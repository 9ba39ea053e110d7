//! Issue 39, acceptance 3 on one cluster: namespaces created with `metadata.generateName`
//! through paddock (with its admission webhook and templates) are created, prefixed, labelled,
//! bound, templated, listed, usable, and deleted with the tenant; JSON, YAML and protobuf
//! bodies alike; a body paddock cannot read is refused with a Status. The same create straight
//! at the apiserver as its admin shows the name's shape.

use super::*;
use paddock_e2e::ns_bodies::{create, is_generated, protobuf_namespace};

const G: &str = "tplggg";
const GENERATED: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {generateName: dev-}\n";

/// Runs after the admin's mandatory `platform` template exists.
pub(crate) fn generate_name_checks(bed: &Bed) -> Result<()> {
    let (p, up) = (&bed.p, &bed.up);
    let kc = p.tenant(G)?;
    let kg = tenant(bed, G)?;

    // kubectl create -f with generateName (JSON), as the tenant.
    let name = kg.run_stdin(
        &["create", "-f", "-", "-o", "jsonpath={.metadata.name}"],
        Some(GENERATED),
    )?;
    let name = name.trim().to_owned();
    ensure!(is_generated(&name, "dev-"), "generated name {name:?}");
    let upstream = format!("{G}-{name}");
    let ns: Value = serde_json::from_str(&up.run(&["get", "ns", &upstream, "-o", "json"])?)?;
    ensure!(
        ns["metadata"]["labels"]["paddock.io/tenant"] == G
            && ns["metadata"]["generateName"] == format!("{G}-dev-"),
        "upstream namespace: {}",
        ns["metadata"]
    );
    ok(
        up,
        &[
            "get",
            "rolebinding",
            "paddock-tenant-admins",
            "-n",
            &upstream,
        ],
        None,
    )?;
    // Templated at set-up, before the create answered: the platform's and the built-in ones.
    ok(
        &kg,
        &["get", "configmap", "platform-info", "-n", &name],
        None,
    )?;
    ok(
        &kg,
        &[
            "get",
            "networkpolicy",
            "paddock-tenant-isolation",
            "-n",
            &name,
        ],
        None,
    )?;
    let ann = kg.run(&[
        "get",
        "namespace",
        &name,
        "-o",
        "jsonpath={.metadata.annotations.paddock\\.io/templates}",
    ])?;
    ensure!(ann.contains("platform=1/in-sync"), "{ann}");
    let seen = kg.run(&["get", "namespace", &name, "-o", "json"])?;
    let seen: Value = serde_json::from_str(&seen)?;
    ensure!(
        seen["metadata"]["generateName"] == "dev-" && seen["metadata"]["name"] == name.as_str(),
        "the tenant's view: {}",
        seen["metadata"]
    );
    let listed = kg.run(&["get", "namespaces", "-o", "name"])?;
    ensure!(
        listed.lines().any(|l| l == format!("namespace/{name}")),
        "{listed}"
    );
    ok(&kg, &["create", "configmap", "c", "-n", &name], None)?;

    // The same create straight at the apiserver as its admin: the same shape of name.
    let direct = up.run_stdin(
        &["create", "-f", "-", "-o", "jsonpath={.metadata.name}"],
        Some(GENERATED),
    )?;
    ensure!(is_generated(direct.trim(), "dev-"), "direct: {direct:?}");
    up.run(&["delete", "namespace", direct.trim(), "--wait=false"])?;

    // YAML and protobuf bodies are read too.
    let yaml = GENERATED.replace("dev-", "yml-").into_bytes();
    let (status, v) = create(&kc, "application/yaml", yaml)?;
    let yml = v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ensure!(status == 201 && is_generated(&yml, "yml-"), "{status} {v}");
    let pb = protobuf_namespace("pb-", &[]);
    let (status, v) = create(&kc, "application/vnd.kubernetes.protobuf", pb)?;
    ensure!(status == 201, "protobuf create: {status} {v}");
    let listed = kg.run(&["get", "namespaces", "-o", "name"])?;
    let pbs: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.strip_prefix("namespace/"))
        .filter(|n| is_generated(n, "pb-"))
        .collect();
    ensure!(pbs.len() == 1, "one pb- namespace: {listed}");
    for n in [yml.as_str(), pbs[0]] {
        ok(
            up,
            &[
                "get",
                "rolebinding",
                "paddock-tenant-admins",
                "-n",
                &format!("{G}-{n}"),
            ],
            None,
        )?;
    }

    // A body paddock cannot read: a Status naming why, and nothing created.
    let before = namespaces_of(up, &[G])?;
    let (status, v) = create(&kc, "application/cbor", b"\xa1\x64kind".to_vec())?;
    ensure!(
        status == 415
            && v["kind"] == "Status"
            && v["message"]
                .as_str()
                .is_some_and(|m| m.contains("JSON, YAML or protobuf")),
        "{status} {v}"
    );
    ensure!(
        namespaces_of(up, &[G])? == before,
        "a namespace was created"
    );

    eprintln!(
        "generateName: {name} (upstream {upstream}), YAML {yml}, protobuf {}; straight at the apiserver {}",
        pbs[0],
        direct.trim()
    );

    // Deleted with the tenant.
    p.cli(&["tenant", "delete", G, "--wait"])?;
    within(
        Duration::from_secs(120),
        "the tenant's namespaces gone",
        || Ok(namespaces_of(up, &[G])?.is_empty()),
    )?;
    Ok(())
}
