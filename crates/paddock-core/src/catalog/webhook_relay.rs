//! The relay between the apiserver and a tenant's own admission webhooks (docs/webhooks.md).
//!
//! A tenant's webhook configuration names its webhook by the tenant's Service
//! (`service: {namespace: cert-manager, name: cert-manager-webhook}`) and trusts the tenant's CA
//! (`caBundle`). Upstream, the apiserver would dial `<name>.<tid>-<ns>.svc` (a name the
//! webhook's certificate does not carry) and send the AdmissionReview in upstream names
//! (`<tid>-cert-manager.io/v1`, namespace `<tid>-app`), which the tenant's webhook does not
//! know. So paddock stores, upstream, a client config that points at paddock's own admission
//! listener, on a path that carries the whole tenant client config:
//!
//! `<paddock's admission URL>/tenant-webhook/v1/<tid>/<ns>/<name>/<port>/ca<N>/<N hex segments>[<tenant path>]`
//!
//! and trusts paddock's CA. paddock then translates the review into the tenant's names, calls
//! the tenant's Service with the tenant's CA and TLS name `<name>.<ns>.svc` (as the apiserver of
//! a cluster of its own would), and translates the answer back (`relay_review`).
//!
//! Why the path: the client config is translated field by field, in every encoding, with no
//! other place to keep the tenant's values; the path is written by paddock only (a tenant can
//! write no `url`, and the guard keeps tenants from writing webhook configurations upstream)
//! and reads back to exactly what the tenant wrote. Every segment is a DNS-1123 subdomain,
//! which the apiserver demands of a service path; the CA is hex in segments of at most
//! [`CA_SEGMENT`] characters.

use serde_json::{Map, Value, json};

use crate::error::TranslateError;
use crate::tenant::TenantId;

/// The marker that starts the relay part of a path.
pub const RELAY_PATH: &str = "/tenant-webhook/v1/";
/// Longest hex segment of the CA (a DNS-1123 subdomain has at most 253 characters).
const CA_SEGMENT: usize = 250;
/// Largest tenant `caBundle` relayed: its hex travels in the URL path of every call, which must
/// stay well inside an HTTP/2 header list (16 KiB by default).
pub const MAX_CA_BUNDLE: usize = 6 << 10;

/// Where the apiserver reaches paddock's admission listener, and the CA that signs its serving
/// certificate: what every relayed client config names upstream. Set by the server for the
/// cluster whose apiserver calls this paddock (`Catalog::with_webhook_relay`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRelay {
    /// paddock's admission URL (`https://host:port[/prefix]`).
    pub url: String,
    /// paddock's CA, PEM.
    pub ca_pem: String,
}

/// A tenant's webhook as the tenant configured it: what a relayed path carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayTarget {
    pub tenant: TenantId,
    /// The Service's namespace, in the tenant's names.
    pub namespace: String,
    pub name: String,
    pub port: u16,
    /// The tenant's `service.path` (None when it gave none).
    pub path: Option<String>,
    /// The tenant's `caBundle` (bytes of PEM; empty when it gave none).
    pub ca_bundle: Vec<u8>,
}

impl RelayTarget {
    /// The relay path (from [`RELAY_PATH`] on).
    pub fn to_path(&self) -> String {
        let hex = hex::encode(&self.ca_bundle);
        let segments: Vec<&str> = hex
            .as_bytes()
            .chunks(CA_SEGMENT)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        let mut p = format!(
            "{RELAY_PATH}{}/{}/{}/{}/ca{}",
            self.tenant,
            self.namespace,
            self.name,
            self.port,
            segments.len()
        );
        for s in segments {
            p.push('/');
            p.push_str(s);
        }
        if let Some(tp) = &self.path {
            p.push_str(tp);
        }
        p
    }

    /// Reads a relay path back: everything from [`RELAY_PATH`] on (a prefix before it, from
    /// paddock's admission URL, is skipped).
    pub fn parse(path: &str) -> Result<RelayTarget, TranslateError> {
        let bad = |what: &str| TranslateError::bad(format!("not a tenant webhook path: {what}"));
        let at = path.find(RELAY_PATH).ok_or_else(|| bad("no marker"))?;
        let segs: Vec<&str> = path[at + RELAY_PATH.len()..].split('/').collect();
        let [tenant, namespace, name, port, ca, rest @ ..] = segs.as_slice() else {
            return Err(bad("too short"));
        };
        let tenant = TenantId::parse(tenant).map_err(|_| bad("tenant"))?;
        let port = port.parse::<u16>().map_err(|_| bad("port"))?;
        let count = ca
            .strip_prefix("ca")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n <= rest.len())
            .ok_or_else(|| bad("ca count"))?;
        let (hex, after) = rest.split_at(count);
        let ca_bundle = hex::decode(hex.concat()).map_err(|_| bad("ca"))?;
        if namespace.is_empty() || name.is_empty() {
            return Err(bad("service"));
        }
        Ok(RelayTarget {
            tenant,
            namespace: (*namespace).to_owned(),
            name: (*name).to_owned(),
            port,
            // What follows the CA is the tenant's path, whose leading slash the split took.
            path: (!after.is_empty()).then(|| format!("/{}", after.join("/"))),
            ca_bundle,
        })
    }

    /// The namespace of the Service upstream.
    pub fn upstream_namespace(&self) -> String {
        self.tenant.upstream_name(&self.namespace)
    }

    /// The TLS name the tenant's webhook serves, as a cluster of its own dials it.
    pub fn server_name(&self) -> String {
        format!("{}.{}.svc", self.name, self.namespace)
    }

    /// The client config as the tenant wrote it (with the apiserver's default port).
    pub(crate) fn tenant_client_config(&self) -> Map<String, Value> {
        let mut service =
            json!({"namespace": self.namespace, "name": self.name, "port": self.port});
        if let Some(p) = &self.path {
            service["path"] = Value::String(p.clone());
        }
        let mut cc = Map::new();
        cc.insert("service".into(), service);
        if !self.ca_bundle.is_empty() {
            cc.insert(
                "caBundle".into(),
                Value::String(b64_encode(&self.ca_bundle)),
            );
        }
        cc
    }
}

/// The client config of a webhook served by paddock at `url` + `path`, trusting `ca_pem`. A URL
/// `https://<name>.<namespace>.svc[:port][/prefix]` becomes a service reference (the apiserver
/// resolves it itself, through the Service's endpoints when it runs with
/// `--enable-aggregator-routing`, as when it has no route to Service addresses, and checks the
/// serving certificate against `<name>.<namespace>.svc`), so the webhook works from pods with
/// no DNS on the apiserver's host. Any other URL is used as it is.
pub fn paddock_client_config(url: &str, path: &str, ca_pem: &str) -> Value {
    let ca_bundle = b64_encode(ca_pem.as_bytes());
    let url = url.trim_end_matches('/');
    let rest = url.strip_prefix("https://").unwrap_or(url);
    let (authority, prefix) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse::<u16>().ok()),
        None => (authority, Some(443)),
    };
    if let ([name, namespace, "svc"], Some(port)) =
        (host.split('.').collect::<Vec<_>>().as_slice(), port)
        && !name.is_empty()
        && !namespace.is_empty()
    {
        return json!({
            "service": {"namespace": namespace, "name": name, "port": port, "path": format!("{prefix}{path}")},
            "caBundle": ca_bundle,
        });
    }
    json!({"url": format!("{url}{path}"), "caBundle": ca_bundle})
}

/// A webhook configuration as a cluster without the relay must hold it (docs/clusters.md
/// "Governance on every cluster"): every relayed `clientConfig` turned back into the
/// tenant's Service, in its upstream namespace, with the tenant's CA. The home (the cluster
/// whose apiserver calls this paddock) stores the relayed form; a spanning tenant's copy on
/// another cluster names the tenant's Service there, whose `failurePolicy` decides when it
/// cannot be reached. Whether anything changed.
pub fn unrelay_configuration(obj: &mut Value) -> bool {
    let Some(webhooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return false;
    };
    let mut changed = false;
    for w in webhooks {
        let cc = &w["clientConfig"];
        let at = cc["service"]["path"].as_str().or(cc["url"].as_str());
        let Some(target) = at
            .filter(|p| p.contains(RELAY_PATH))
            .and_then(|p| RelayTarget::parse(p).ok())
        else {
            continue;
        };
        let mut tenant = target.tenant_client_config();
        tenant["service"]["namespace"] = Value::String(target.upstream_namespace());
        w["clientConfig"] = Value::Object(tenant);
        changed = true;
    }
    changed
}

pub(crate) fn b64_encode(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

pub(crate) fn b64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

#[cfg(test)]
#[path = "webhook_relay_tests.rs"]
mod tests;
