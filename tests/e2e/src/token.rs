//! Kubeconfigs that present a bearer token (a tenant pod's service-account token) straight at
//! the apiserver: the bypass runs of the isolation, policy, quota and templates suites.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

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
