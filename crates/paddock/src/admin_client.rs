//! The admin CLI's client for paddock's admin API (`/apis/paddock.io/v1alpha1`), using the
//! platform-admin kubeconfig.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use http::Method;
use paddock_upstream::upjson;
use paddock_upstream::upstream::{Upstream, UpstreamCredential};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::IssueArgs;

use paddock_api::List;
use paddock_api::certificate::{IssueRequest, IssueSpec, IssuedCertificate};
use paddock_api::paths::{ISSUED_CERTIFICATES, TENANTS};
use paddock_api::policy::TenantPolicy;
use paddock_api::quota::QuotaSpec;
use paddock_api::tenant::{Tenant, TenantSpec};
use paddock_api::user::TenantUser;

/// A connection to one paddock.
pub struct AdminClient {
    up: Upstream,
}

pub(crate) fn check(a: upjson::UpAnswer, what: &str) -> Result<Value> {
    if a.status.is_success() {
        Ok(a.body)
    } else {
        bail!("{what}: {} ({})", a.message(), a.status)
    }
}

/// A successful answer read as `T` (a type of paddock-api).
pub(crate) fn check_as<T: DeserializeOwned>(a: upjson::UpAnswer, what: &str) -> Result<T> {
    let v = check(a, what)?;
    serde_json::from_value(v).with_context(|| format!("{what}: unexpected answer"))
}

impl AdminClient {
    /// Reads the admin kubeconfig.
    pub fn new(kubeconfig: &Path) -> Result<Self> {
        let cred = UpstreamCredential::from_kubeconfig(kubeconfig).with_context(|| {
            format!(
                "admin kubeconfig {} (create it with `paddock ca init`)",
                kubeconfig.display()
            )
        })?;
        Ok(AdminClient {
            up: Upstream::new(cred, std::time::Duration::from_secs(60))?,
        })
    }

    /// The connection, for requests whose bodies are not JSON (`portable_cli`).
    pub(crate) fn upstream(&self) -> &Upstream {
        &self.up
    }

    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<upjson::UpAnswer> {
        upjson::call(
            &self.up,
            method,
            path,
            body.map(|_| "application/json"),
            body,
        )
        .await
        .with_context(|| format!("cannot reach paddock at {}", self.up.server()))
    }

    /// The `Tenant` object `tenant create` posts (placement, `clusters`, is set by the caller).
    pub fn tenant_body(
        id: &str,
        display: Option<&str>,
        labels: &serde_json::Map<String, Value>,
        limits: &serde_json::Map<String, Value>,
        billing: &Value,
        quota: &paddock_api::quota::Quantities,
    ) -> Tenant {
        Tenant::request(
            id,
            labels.clone(),
            TenantSpec {
                display_name: Some(display.unwrap_or(id).to_string()),
                limits: Some(Value::Object(limits.clone())),
                billing: Some(billing.clone()),
                quota: (!quota.is_empty()).then(|| {
                    json!(QuotaSpec {
                        hard: quota.clone(),
                        ..QuotaSpec::default()
                    })
                }),
                ..TenantSpec::default()
            },
        )
    }

    /// POST a tenant.
    pub async fn create_tenant(&self, id: &str, body: &Tenant) -> Result<Tenant> {
        check_as(
            self.call(Method::POST, TENANTS, Some(&body.to_value()))
                .await?,
            &format!("creating tenant {id}"),
        )
    }

    /// Changes a tenant's fair-share overrides (a JSON merge patch: null removes one).
    pub async fn set_limits(
        &self,
        id: &str,
        patch: &serde_json::Map<String, Value>,
    ) -> Result<Tenant> {
        check_as(
            self.call(
                Method::PATCH,
                &format!("{TENANTS}/{id}/limits"),
                Some(&Value::Object(patch.clone())),
            )
            .await?,
            &format!("setting the limits of tenant {id}"),
        )
    }

    /// A tenant's policy: read, merge-patched, or reset to the server's default.
    pub async fn tenant_policy(
        &self,
        id: &str,
        patch: Option<&Value>,
        reset: bool,
    ) -> Result<TenantPolicy> {
        let path = format!("{TENANTS}/{id}/policy");
        let answer = match (patch, reset) {
            (Some(p), _) => self.call(Method::PATCH, &path, Some(p)).await?,
            (None, true) => self.call(Method::DELETE, &path, None).await?,
            (None, false) => self.call(Method::GET, &path, None).await?,
        };
        check_as(answer, &format!("the policy of tenant {id}"))
    }

    /// The items of a list of the admin API (`path` under `/apis/paddock.io/v1alpha1`
    /// or the full path); `what` names the action in an error.
    pub async fn list_items<T: DeserializeOwned>(&self, path: &str, what: &str) -> Result<Vec<T>> {
        let list: List<T> = check_as(self.call(Method::GET, path, None).await?, what)?;
        Ok(list.items)
    }

    /// One object of the admin API.
    pub async fn get_object<T: DeserializeOwned>(&self, path: &str, what: &str) -> Result<T> {
        check_as(self.call(Method::GET, path, None).await?, what)
    }

    /// Deletes one object of the admin API.
    pub async fn delete_object(&self, path: &str, what: &str) -> Result<()> {
        check(self.call(Method::DELETE, path, None).await?, what).map(drop)
    }

    /// All tenants.
    pub async fn list_tenants(&self) -> Result<Vec<Tenant>> {
        self.list_items(TENANTS, "listing tenants").await
    }

    /// One tenant.
    pub async fn get_tenant(&self, id: &str) -> Result<Tenant> {
        self.get_object(&format!("{TENANTS}/{id}"), &format!("getting tenant {id}"))
            .await
    }

    /// Deletes a tenant; with `wait`, shows progress until it is gone.
    pub async fn delete_tenant(&self, id: &str, wait: bool, timeout: Duration) -> Result<()> {
        check(
            self.call(Method::DELETE, &format!("{TENANTS}/{id}"), None)
                .await?,
            &format!("deleting tenant {id}"),
        )?;
        eprintln!("tenant {id}: deletion started");
        if !wait {
            return Ok(());
        }
        let start = Instant::now();
        let mut last = String::new();
        loop {
            let a = self
                .call(Method::GET, &format!("{TENANTS}/{id}"), None)
                .await?;
            if a.status == http::StatusCode::NOT_FOUND {
                eprintln!(
                    "tenant {id}: deleted ({:.1}s)",
                    start.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            let progress = serde_json::from_value::<Tenant>(a.body)
                .ok()
                .and_then(|t| t.status)
                .and_then(|s| s.progress.as_str().map(str::to_string))
                .unwrap_or_default();
            if progress != last && !progress.is_empty() {
                eprintln!("tenant {id}: {progress}");
                last = progress;
            }
            if start.elapsed() > timeout {
                bail!(
                    "tenant {id} still terminating after {}s: {last}",
                    timeout.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Issues a certificate (key generated here, never sent) and renders a kubeconfig.
    pub async fn issue_kubeconfig(&self, args: &IssueArgs) -> Result<String> {
        let subject = paddock_pki::Subject {
            user: args.user.clone(),
            groups: args.groups.clone(),
            tenant: Some(args.tenant.clone()),
        };
        let (key_pem, csr_pem) = match &args.csr {
            Some(p) => (
                None,
                std::fs::read_to_string(p)
                    .with_context(|| format!("reading CSR {}", p.display()))?,
            ),
            None => {
                let (k, c) = paddock_pki::generate_key_and_csr(&subject)?;
                (Some(k), c)
            }
        };
        let validity = match &args.validity {
            Some(v) => Some(
                paddock_api::duration::parse_duration(v)
                    .map_err(anyhow::Error::msg)?
                    .as_secs(),
            ),
            None => None,
        };
        let body = serde_json::to_value(IssueRequest::new(IssueSpec {
            tenant: Some(args.tenant.clone()),
            user: args.user.clone(),
            groups: args.groups.clone(),
            csr: csr_pem.clone(),
            validity_seconds: validity,
        }))?;
        let v: IssuedCertificate = check_as(
            self.call(Method::POST, ISSUED_CERTIFICATES, Some(&body))
                .await?,
            &format!("issuing a certificate for {}/{}", args.tenant, args.user),
        )?;
        let cert = v
            .status
            .certificate
            .as_deref()
            .context("no certificate in the answer")?;
        let ca = v
            .status
            .ca_certificate
            .as_deref()
            .context("no CA in the answer")?;
        let server = v.status.server.as_deref().unwrap_or(self.up.server());
        if let (Some(path), Some(k)) = (&args.key_out, &key_pem) {
            crate::kubeconfig::write_private(path, k.as_bytes())?;
        }
        eprintln!(
            "certificate serial {} for {}/{}",
            v.metadata.name, args.tenant, args.user
        );
        let context = format!("{}-{}", args.tenant, args.user);
        Ok(crate::kubeconfig::render(
            server,
            ca.as_bytes(),
            &context,
            cert.as_bytes(),
            key_pem.as_deref().map(str::as_bytes),
        ))
    }

    /// Issued certificates.
    pub async fn list_certs(&self, tenant: Option<&str>) -> Result<Vec<IssuedCertificate>> {
        let path = match tenant {
            Some(t) => format!("{ISSUED_CERTIFICATES}?tenant={t}"),
            None => ISSUED_CERTIFICATES.to_string(),
        };
        self.list_items(&path, "listing certificates").await
    }

    /// The users of tenant `tenant` (certificates issued, identities seen).
    pub async fn list_users(&self, tenant: &str) -> Result<Vec<TenantUser>> {
        self.list_items(
            &format!("{TENANTS}/{tenant}/users"),
            &format!("listing the users of tenant {tenant}"),
        )
        .await
    }

    /// Revokes by serial.
    pub async fn revoke(&self, serial: &str) -> Result<()> {
        check(
            self.call(
                Method::POST,
                &format!("{ISSUED_CERTIFICATES}/{serial}/revocation"),
                Some(&json!({})),
            )
            .await?,
            &format!("revoking {serial}"),
        )?;
        Ok(())
    }
}
