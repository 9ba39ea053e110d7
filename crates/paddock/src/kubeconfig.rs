//! Writing kubeconfigs. Certificates and keys are embedded so a kubeconfig is one file.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use base64::Engine;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A kubeconfig with one cluster, one user and one context.
pub fn render(
    server: &str,
    ca_pem: &[u8],
    context: &str,
    cert_pem: &[u8],
    key_pem: Option<&[u8]>,
) -> String {
    let key_line = match key_pem {
        Some(k) => format!("    client-key-data: {}\n", b64(k)),
        None => String::new(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: paddock\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {context}\n  user:\n    client-certificate-data: {cert}\n{key_line}contexts:\n- name: {context}\n  context:\n    cluster: paddock\n    user: {context}\ncurrent-context: {context}\npreferences: {{}}\n",
        ca = b64(ca_pem),
        cert = b64(cert_pem),
    )
}

/// The platform admin's kubeconfig.
pub fn admin_kubeconfig(server: &str, ca: &Path, cert: &Path, key: &Path) -> Result<String> {
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    Ok(render(
        server,
        &read(ca)?,
        "paddock-admin",
        &read(cert)?,
        Some(&read(key)?),
    ))
}

/// Writes a file readable by its owner only (it holds a private key).
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
