//! The apiserver's cost of the identity paddock forwards as. In the test bed paddock
//! forwards with the upstream admin's certificate (`system:masters`), so the apiserver's
//! impersonation checks pass at the privileged-group authorizer and RBAC is never walked for
//! them. A deployment forwards as a least-privilege identity (the chart's ClusterRole:
//! impersonate users and groups; the `paddock.io/tenant` extra too until issue 37): then
//! every `Impersonate-*` value is its own authorization through RBAC. This makes such an identity (a client
//! certificate signed by the test bed's CA, bound to the chart's impersonation rules) to
//! measure that cost, and the saving of leaving out `Impersonate-Group: system:authenticated`
//! (the apiserver adds that group itself to every impersonated non-anonymous user).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use http::Method;
use serde_json::json;

use crate::client::{Api, Cred, Proto};

const USER: &str = "paddock-bench-gateway";

/// A client credential of user [`USER`] (no groups) bound to impersonation rights only.
pub async fn least_privilege(pki: &Path, admin: &Cred, dir: &Path) -> Result<Cred> {
    std::fs::create_dir_all(dir)?;
    let (key, csr, crt) = (
        dir.join("gateway.key"),
        dir.join("gateway.csr"),
        dir.join("gateway.crt"),
    );
    let ext = dir.join("gateway.ext");
    std::fs::write(
        &ext,
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n",
    )?;
    let run = |args: &[&str]| -> Result<()> {
        let out = Command::new("openssl").args(args).output()?;
        if !out.status.success() {
            bail!(
                "openssl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    };
    let p = |x: &Path| x.to_string_lossy().into_owned();
    run(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        &p(&key),
        "-out",
        &p(&csr),
        "-subj",
        &format!("/CN={USER}"),
    ])?;
    run(&[
        "x509",
        "-req",
        "-in",
        &p(&csr),
        "-CA",
        &p(&pki.join("ca.crt")),
        "-CAkey",
        &p(&pki.join("ca.key")),
        "-CAcreateserial",
        "-days",
        "2",
        "-sha256",
        "-extfile",
        &p(&ext),
        "-out",
        &p(&crt),
    ])?;
    // The impersonation rules of deploy/chart/templates/clusterrole.yaml.
    let api = Api::new(admin, Proto::H2)?;
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": USER},
        "rules": [
            {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]},
            {"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"]}
        ]
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": USER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": USER},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]
    });
    for (path, body) in [
        ("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            binding,
        ),
    ] {
        let (s, b) = api
            .call(
                Method::POST,
                path,
                Some(bytes::Bytes::from(body.to_string())),
            )
            .await?;
        if !(s.is_success() || s == http::StatusCode::CONFLICT) {
            bail!("{path}: {s}: {}", String::from_utf8_lossy(&b));
        }
    }
    Ok(Cred {
        server: admin.server.clone(),
        ca: admin.ca.clone(),
        cert: std::fs::read(&crt).context("the gateway certificate")?,
        key: std::fs::read(&key).context("the gateway key")?,
    })
}

/// `headers` (what paddock sends: no `system:authenticated`, which the apiserver adds) plus
/// `Impersonate-Group: system:authenticated`, as paddock sent it until session 7.
pub fn with_authenticated(headers: &http::HeaderMap) -> http::HeaderMap {
    let mut out = headers.clone();
    out.append(
        "impersonate-group",
        http::HeaderValue::from_static("system:authenticated"),
    );
    out
}

/// Apiserver CPU per small GET (ms) of the tenant's identity impersonated by: the admin, the
/// least-privilege identity, the least-privilege identity without the explicit
/// `system:authenticated` group. Two sets of pairs (admin vs least-privilege; with vs
/// without the group) at concurrency `conc`; returns the markdown rows and the three medians.
#[allow(clippy::too_many_arguments)]
pub async fn bench(
    admin: &Cred,
    gateway: &Cred,
    imp: &http::HeaderMap,
    prefix: &str,
    conc: usize,
    n: usize,
    reps: usize,
    procs: crate::load::Procs,
    peak_hwm: &mut u64,
) -> Result<(String, [f64; 3])> {
    use crate::load::{Side, Work, pairs};
    use crate::stats::ratio;
    use std::fmt::Write as _;
    let side = |c: &Cred, h: http::HeaderMap| -> Result<Side> {
        Ok(Side {
            api: Api::new(c, Proto::H2)?.with_headers(h),
            prefix: prefix.to_owned(),
        })
    };
    let by_admin = side(admin, with_authenticated(imp))?;
    let by_gateway = side(gateway, with_authenticated(imp))?;
    let trimmed = side(gateway, imp.clone())?;
    // The gateway's identity must work before it is measured.
    by_gateway
        .api
        .get_drain(
            &format!("/api/v1/namespaces/{prefix}bench/configmaps/small"),
            "application/json",
        )
        .await
        .context("a GET impersonated by the least-privilege identity")?;
    trimmed
        .api
        .get_drain(
            &format!("/api/v1/namespaces/{prefix}bench/configmaps/small"),
            "application/json",
        )
        .await
        .context("a GET impersonated without the system:authenticated group")?;
    let a = pairs(
        Work::Get,
        &by_admin,
        &by_gateway,
        None,
        None,
        conc,
        n,
        reps,
        procs,
        0,
        peak_hwm,
        "ga",
    )
    .await;
    let b = pairs(
        Work::Get,
        &by_gateway,
        &trimmed,
        None,
        None,
        conc,
        n,
        reps,
        procs,
        0,
        peak_hwm,
        "gb",
    )
    .await;
    for s in [&a, &b] {
        if let (errs @ 1.., first) = s.errors() {
            bail!("{errs} errors, first: {}", first.unwrap_or_default());
        }
    }
    let cpu = [
        a.apiserver_cpu_per_k_direct(),
        a.apiserver_cpu_per_k_paddock(),
        b.apiserver_cpu_per_k_paddock(),
    ];
    let mut d = String::new();
    let _ = writeln!(
        d,
        "### Who impersonates: the tenant's identity sent by the admin (`system:masters`, as in this test bed), by a least-privilege identity (the chart's impersonation rules), and by it without `Impersonate-Group: system:authenticated` (small GET, HTTP/2, concurrency {conc}, {reps} pairs each)\n"
    );
    let _ = writeln!(
        d,
        "| impersonated by | apiserver CPU per GET | req/s ratio | p50 |\n|---|---|---|---|"
    );
    let _ = writeln!(
        d,
        "| admin | {:.0} µs | 1.00 | {:.2} ms |",
        cpu[0] * 1000.0,
        a.direct_p50()
    );
    let _ = writeln!(
        d,
        "| least-privilege identity | {:.0} µs | {} (÷ admin) | {:.2} ms |",
        cpu[1] * 1000.0,
        ratio(a.rps_ratio()),
        a.paddock_p50()
    );
    let _ = writeln!(
        d,
        "| least-privilege, no explicit system:authenticated | {:.0} µs | {} (÷ with it) | {:.2} ms |\n",
        cpu[2] * 1000.0,
        ratio(b.rps_ratio()),
        b.paddock_p50()
    );
    Ok((d, cpu))
}
