//! Kubeconfigs that present a bearer token: a tenant pod's service-account token straight at
//! the apiserver (the bypass runs of the isolation, policy, quota and templates suites), and
//! paddock's own upstream identity as a deployment has it, a ServiceAccount bound to the
//! chart's ClusterRole (the deploy test, and `loadbench --paddock-upstream chart`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::ControlPlane;

/// A kubeconfig `<dir>/<name>.kubeconfig` for the cluster of `from` (its server and CA), as a
/// user holding `token`.
pub fn token_kubeconfig(dir: &Path, name: &str, from: &Path, token: &str) -> Result<PathBuf> {
    let text =
        std::fs::read_to_string(from).with_context(|| format!("reading {}", from.display()))?;
    let v: Value = serde_norway::from_str(&text).context("parsing a kubeconfig")?;
    let cluster = &v["clusters"][0]["cluster"];
    let server = cluster["server"].as_str().context("server")?;
    let ca_line = match (
        cluster["certificate-authority-data"].as_str(),
        cluster["certificate-authority"].as_str(),
    ) {
        (Some(d), _) => format!("certificate-authority-data: {d}"),
        (None, Some(f)) => format!("certificate-authority: {f}"),
        _ => bail!("no CA in {}", from.display()),
    };
    let out = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    {ca_line}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"
    );
    let p = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(&p, out).with_context(|| format!("writing {}", p.display()))?;
    Ok(p)
}

/// A kubeconfig for ServiceAccount `sa` in `ns` (a TokenRequest token, the test bed's CA).
pub fn sa_kubeconfig(cp: &ControlPlane, ns: &str, sa: &str) -> Result<PathBuf> {
    let token = sa_token(cp, ns, sa)?;
    sa_kubeconfig_with(
        cp,
        &format!("{sa}.kubeconfig"),
        sa,
        &format!("token: {token}"),
    )
}

/// A kubeconfig for ServiceAccount `sa` in `ns` whose token paddock reads from a file (as
/// the chart's in-cluster kubeconfig does: `tokenFile`); the file, and the token in it.
pub fn sa_token_file_kubeconfig(
    cp: &ControlPlane,
    ns: &str,
    sa: &str,
) -> Result<(PathBuf, PathBuf, String)> {
    let token = sa_token(cp, ns, sa)?;
    let file = cp.dir().join(format!("{sa}.token"));
    std::fs::write(&file, &token)?;
    let credential = format!("tokenFile: {}", file.display());
    let path = sa_kubeconfig_with(cp, &format!("{sa}-file.kubeconfig"), sa, &credential)?;
    Ok((path, file, token))
}

/// A TokenRequest token of ServiceAccount `sa` in `ns`, valid for two hours.
fn sa_token(cp: &ControlPlane, ns: &str, sa: &str) -> Result<String> {
    let token = cp
        .kubectl_admin()?
        .run(&["create", "token", sa, "-n", ns, "--duration=2h"])?;
    Ok(token.trim().to_owned())
}

/// `<test bed>/<file_name>`: a kubeconfig for the test bed's apiserver (its CA) as user `sa`
/// holding `credential` (a `token:` or `tokenFile:` line).
fn sa_kubeconfig_with(
    cp: &ControlPlane,
    file_name: &str,
    sa: &str,
    credential: &str,
) -> Result<PathBuf> {
    let path = cp.dir().join(file_name);
    let ca = cp.dir().join("pki").join("ca.crt");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: {sa}\n  user:\n    {credential}\ncontexts:\n- name: t\n  context: {{cluster: t, user: {sa}}}\ncurrent-context: t\n",
            cp.apiserver_url()?,
            ca.display(),
        ),
    )?;
    Ok(path)
}

/// A ServiceAccount `name` in `paddock-system` (made if missing) bound to a ClusterRole of the
/// same name with `rules`, and, as the chart does, to a Role of that name in `paddock-system`
/// with the leader election's rights on Leases; a kubeconfig holding a token of it.
pub fn service_account(cp: &ControlPlane, name: &str, rules: &Value) -> Result<PathBuf> {
    let lease_rules = paddock_reconciler::rights::lease_role_rules();
    let objects = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "paddock-system"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "paddock-system"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "paddock-system"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": name, "namespace": "paddock-system"}, "rules": lease_rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": name, "namespace": "paddock-system"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "paddock-system"}]},
    ]});
    cp.kubectl_admin()?
        .run_stdin(&["apply", "-f", "-"], Some(&objects.to_string()))?;
    sa_kubeconfig(cp, "paddock-system", name)
}
