//! Isolation cases of OIDC tokens and tenant contexts (issue 40, acceptance 3), run by
//! tests/e2e/tests/oidc_sso.rs on its test bed (a real OIDC provider is needed). Each attack
//! has a control that must succeed:
//!
//! - token confusion: a token one tenant accepts, presented to another tenant that trusts the
//!   same issuer (its claim rule refuses), to one that trusts none, and without a tenant
//!   context at all;
//! - claim injection: groups `system:masters`, another tenant's prefixed names and paddock's
//!   own groups, through paddock and, bypassed, as the identity paddock asserts upstream;
//! - a context switched by editing the kubeconfig's tls-server-name: to another tenant, to a
//!   tenant that does not exist, to a name that is no tenant id, and a certificate of one
//!   tenant presented on another tenant's name.

use std::path::Path;

use anyhow::Result;
use serde_json::json;

use super::{A, B, Bed, C, CM_PATH, excerpt};
use paddock_e2e::oidc::with_server_name;

pub fn run(bed: &mut Bed, alice: &Path, token: &str) -> Result<()> {
    confusion(bed, token)?;
    injection(bed)?;
    edited_context(bed, alice)?;
    Ok(())
}

fn confusion(bed: &mut Bed, token: &str) -> Result<()> {
    let control = bed.get_as(A, CM_PATH, token)?;
    let carol = bed.mint("carol", json!({}))?;
    let carol_b = bed.get_as(B, CM_PATH, &carol)?;
    let at_b = bed.get_as(B, CM_PATH, token)?;
    bed.check(
        "confusion: A's user at B (same issuer, B's rule)",
        at_b.is_401_status() && carol_b.code == 200,
        format!(
            "{} {}; control carol at B {}",
            at_b.code,
            excerpt(&at_b.body),
            carol_b.code
        ),
    );
    let at_c = bed.get_as(C, CM_PATH, token)?;
    bed.check(
        "confusion: A's token at C (trusts nothing)",
        at_c.is_401_status() && control.code == 200,
        format!(
            "{} {}; control at A {}",
            at_c.code,
            excerpt(&at_c.body),
            control.code
        ),
    );
    // The paddock server name without a tenant (127.0.0.1): a claim alone never picks one.
    let bare = bed.get_as("127.0.0.1", CM_PATH, token)?;
    bed.check(
        "confusion: token without a tenant context",
        bare.is_401_status() && control.code == 200,
        format!(
            "{} {}; control with A's name {}",
            bare.code,
            excerpt(&bare.body),
            control.code
        ),
    );
    Ok(())
}

fn injection(bed: &mut Bed) -> Result<()> {
    let injected = [
        "system:masters",
        "paddock:tenant:ssobbb",
        "ssobbb-team",
        "paddock:ssobbb:tenant-admins",
        "system:serviceaccounts:ssobbb-team",
        "paddock:tenant-cluster-scope-admins",
    ];
    let mallory = bed.mint("mallory", json!({"groups": injected}))?;
    let secrets = "/api/v1/namespaces/team/secrets";
    let refused = bed.get_as(A, secrets, &mallory)?;
    // Namespaces are the user's own view (docs/security.md "Each user's own view"): none is
    // mallory's, so an empty list, as for any user without a binding, never a 403.
    let namespaces = bed.get_as(A, "/api/v1/namespaces", &mallory)?;
    let listed: serde_json::Value = serde_json::from_str(&namespaces.body).unwrap_or_default();
    let items = listed["items"].as_array().map(Vec::len);
    let admin = bed.mint("mallory", json!({"groups": ["tenant-admins"]}))?;
    let control = bed.get_as(A, secrets, &admin)?;
    bed.check(
        "injection: groups system:masters, B's and paddock's names",
        refused.code == 403 && namespaces.code == 200 && items == Some(0) && control.code == 200,
        format!(
            "secrets {}, namespaces {} with {items:?} items; control groups [tenant-admins] {}",
            refused.code, namespaces.code, control.code
        ),
    );
    // Bypassed: the identity paddock asserts for that token, straight at the apiserver.
    let up = bed.cp.kubectl_admin()?;
    let mut args: Vec<String> = [
        "get",
        "secrets",
        "-n",
        "kube-system",
        "--as=paddock:ssoaaa:sso:mallory",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for g in injected
        .iter()
        .map(|g| format!("paddock:ssoaaa:{g}"))
        .chain(["paddock:tenant:ssoaaa".into()])
    {
        args.push(format!("--as-group={g}"));
    }
    let (_, bypass) = up.run_raw(&args, None, &Default::default(), None)?;
    let (_, masters) = up.run_raw(
        &[
            "get".into(),
            "secrets".into(),
            "-n".into(),
            "kube-system".into(),
            "--as=someone".into(),
            "--as-group=system:masters".into(),
        ],
        None,
        &Default::default(),
        None,
    )?;
    bed.check(
        "injection bypassed: asserted identity upstream",
        !bypass.success() && bypass.stderr.contains("forbidden") && masters.success(),
        format!(
            "{}; control system:masters itself {}",
            bypass.stderr.lines().next().unwrap_or(""),
            if masters.success() {
                "allowed"
            } else {
                "refused"
            }
        ),
    );
    Ok(())
}

fn edited_context(bed: &mut Bed, alice: &Path) -> Result<()> {
    let control = bed.kubectl(
        alice,
        "alice",
        &["-n", "team", "get", "configmaps", "-o", "name"],
    )?;
    for (label, name) in [
        (
            "another tenant trusting the issuer",
            format!("{B}.tenants.paddock.internal"),
        ),
        (
            "a tenant trusting nothing",
            format!("{C}.tenants.paddock.internal"),
        ),
        (
            "a tenant that does not exist",
            "zzzzzz.tenants.paddock.internal".to_owned(),
        ),
        (
            "a name that is no tenant id",
            "x.tenants.paddock.internal".to_owned(),
        ),
    ] {
        let edited = bed.dir.join("alice-edited.kubeconfig");
        with_server_name(alice, &edited, A, &name)?;
        let out = bed.kubectl(
            &edited,
            "alice",
            &["-n", "team", "get", "configmaps", "-o", "name"],
        )?;
        let refused = !out.success()
            && (out.stderr.contains("Unauthorized") || out.stderr.contains("logged in"));
        bed.check(
            &format!("edited context: {label}"),
            refused && control.success(),
            format!(
                "{}; control {}",
                out.stderr.lines().last().unwrap_or(""),
                control
                    .stdout
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        )
    }
    // A certificate names its tenant itself: on another tenant's server name it is refused.
    let cert = bed.paddock.user(A, "bob", &[])?;
    for (t, want_ok) in [(A, true), (B, false)] {
        let edited = bed.dir.join(format!("bob-{t}.kubeconfig"));
        with_server_name(
            &cert,
            &edited,
            &format!("{A}-bob"),
            &format!("{t}.tenants.paddock.internal"),
        )?;
        let k = paddock_e2e::Kubectl::new(&edited)?
            .cache_dir(bed.dir.join("kubectl-cache").join("bob"));
        let (_, out) = k.run_raw(
            &["auth".into(), "whoami".into()],
            None,
            &Default::default(),
            None,
        )?;
        let refused = out.stderr.contains("Unauthorized") || out.stderr.contains("logged in");
        let ok = if want_ok {
            out.success()
        } else {
            !out.success() && refused
        };
        let label = if want_ok {
            "control: A's certificate on A's name"
        } else {
            "edited context: A's certificate on B's name"
        };
        let said = if out.success() {
            out.stdout.lines().find(|l| l.contains("bob")).unwrap_or("")
        } else {
            out.stderr.lines().last().unwrap_or("")
        };
        bed.check(label, ok, said.trim().to_owned());
    }
    Ok(())
}
