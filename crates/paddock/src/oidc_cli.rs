//! `paddock user oidc-kubeconfig`: a kubeconfig for a person who signs in with OpenID Connect,
//! with one context per tenant (docs/operations.md "Single sign-on"). Each context's cluster
//! is the same paddock server with `tls-server-name: <tid>.tenants.paddock.internal` (the
//! tenant is chosen by the connection, never by a claim); each user entry runs the exec
//! credential plugin `kubectl oidc-login get-token` (int128/kubelogin) with the issuer and
//! client id the tenant's policy trusts. No secret is embedded: the plugin signs the person
//! in and caches the tokens on their machine.

use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine;
use paddock_core::TenantId;
use paddock_core::identity::oidc::{JwtAuthenticator, tenant_server_name};

use crate::admin_client::AdminClient;

/// Whom the kubeconfig is for.
#[derive(clap::Args)]
pub struct OidcArgs {
    /// A tenant the person uses (repeatable; one context each, the first is current).
    #[arg(long = "tenant", required = true)]
    pub tenants: Vec<String>,
    /// The issuer URL, when a tenant trusts more than one.
    #[arg(long)]
    pub issuer: Option<String>,
    /// The OAuth client id (default: the issuer's first audience in the tenant's policy).
    #[arg(long)]
    pub client_id: Option<String>,
    /// More scopes for the plugin to ask for (repeatable), e.g. email, groups.
    #[arg(long = "extra-scope")]
    pub extra_scopes: Vec<String>,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The tenant's authenticator for `issuer` (or its only one).
fn choose(
    tenant: &str,
    jwt: Vec<JwtAuthenticator>,
    issuer: Option<&str>,
) -> Result<JwtAuthenticator> {
    let mut matching: Vec<JwtAuthenticator> = jwt
        .into_iter()
        .filter(|a| issuer.is_none_or(|i| a.issuer.url == i))
        .collect();
    match matching.len() {
        0 => bail!(
            "tenant {tenant} trusts no OIDC issuer{} (set one with `paddock tenant policy {tenant} --patch-file`)",
            issuer.map(|i| format!(" {i}")).unwrap_or_default()
        ),
        1 => Ok(matching.remove(0)),
        _ => bail!("tenant {tenant} trusts several issuers: choose one with --issuer"),
    }
}

/// Renders the kubeconfig from the tenants' policies.
pub async fn kubeconfig(
    client: &AdminClient,
    admin_kubeconfig: &Path,
    args: &OidcArgs,
) -> Result<String> {
    let cred = paddock_upstream::upstream::UpstreamCredential::from_kubeconfig(admin_kubeconfig)
        .with_context(|| format!("reading {}", admin_kubeconfig.display()))?;
    let (mut clusters, mut users, mut contexts) = (String::new(), String::new(), String::new());
    for t in &args.tenants {
        let tid = TenantId::parse(t).map_err(|e| anyhow::anyhow!("--tenant {t}: {e}"))?;
        let policy = client.tenant_policy(t, None, false).await?;
        let jwt: Vec<JwtAuthenticator> = match &policy.spec["jwt"] {
            serde_json::Value::Null => Vec::new(),
            v => serde_json::from_value(v.clone())
                .with_context(|| format!("tenant {t}: the policy's jwt list"))?,
        };
        let auth = choose(t, jwt, args.issuer.as_deref())?;
        let client_id = match &args.client_id {
            Some(c) => c.clone(),
            None => auth
                .issuer
                .audiences
                .first()
                .cloned()
                .context("no audience")?,
        };
        if !auth.issuer.audiences.contains(&client_id) {
            bail!(
                "tenant {t} does not accept the audience {client_id:?} ({:?})",
                auth.issuer.audiences
            );
        }
        clusters.push_str(&format!(
            "- name: paddock-{t}\n  cluster:\n    server: {}\n    certificate-authority-data: {}\n    tls-server-name: {}\n",
            cred.server,
            b64(&cred.ca_pem),
            tenant_server_name(&tid)
        ));
        let mut exec_args = vec![
            "oidc-login".to_owned(),
            "get-token".to_owned(),
            format!("--oidc-issuer-url={}", auth.issuer.url),
            format!("--oidc-client-id={client_id}"),
        ];
        if let Some(ca) = &auth.issuer.certificate_authority {
            exec_args.push(format!(
                "--certificate-authority-data={}",
                b64(ca.as_bytes())
            ));
        }
        exec_args.extend(
            args.extra_scopes
                .iter()
                .map(|s| format!("--oidc-extra-scope={s}")),
        );
        let quoted: Vec<String> = exec_args
            .iter()
            .map(|a| format!("      - {a:?}\n"))
            .collect();
        users.push_str(&format!(
            "- name: oidc-{t}\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: kubectl\n      args:\n{}      interactiveMode: IfAvailable\n      provideClusterInfo: false\n",
            quoted.concat()
        ));
        contexts.push_str(&format!(
            "- name: {t}\n  context:\n    cluster: paddock-{t}\n    user: oidc-{t}\n"
        ));
    }
    Ok(format!(
        "apiVersion: v1\nkind: Config\nclusters:\n{clusters}users:\n{users}contexts:\n{contexts}current-context: {}\npreferences: {{}}\n",
        args.tenants[0]
    ))
}
