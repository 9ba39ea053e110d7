//! A tenant's namespace create, read before anything else (docs/clusters.md "Namespaces
//! created with generateName"): a body paddock cannot read (neither JSON, YAML nor protobuf)
//! is refused with a `Status`, and a create with `generateName` is given its name here, as the
//! apiserver would give it (`paddock_core::wire::namespace_body::generated_name`), so that
//! the prefix, the admission webhook, the tenant quota, a spanning tenant's placement and the
//! set-up after the create all see the namespace's real name. A generated name that exists
//! already (a 409) is tried again with another, up to the apiserver's eight attempts.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use paddock_core::TenantId;
use paddock_core::wire::namespace_body::{GENERATE_ATTEMPTS, NamespaceBody, generated_name};

use crate::body::ReqBody;
use crate::clusters::span::{GeneratedName, PreRead};
use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;

/// The placement label of a one-cluster tenant's namespace must name its cluster, as a
/// spanning tenant's must name one of its clusters (there the placement checks it): a
/// namespace labelled for another cluster would say it lives where it does not.
fn refuse_foreign_cluster(
    state: &AppState,
    tenant: &TenantId,
    read: &NamespaceBody,
) -> Result<(), ServerError> {
    let bad = |e: paddock_core::clusters::span::SpanError| ServerError::BadRequest(e.to_string());
    let Some(want) = crate::clusters::span::requested(read).map_err(bad)? else {
        return Ok(());
    };
    let Some(rec) = state.cache.tenant(tenant.as_str()) else {
        return Ok(());
    };
    let clusters = rec.cluster_names();
    if clusters.len() == 1 && clusters[0] != want {
        return Err(bad(
            paddock_core::clusters::span::SpanError::NotTenantCluster(want, clusters[0].into()),
        ));
    }
    Ok(())
}

/// Whether a request is a namespace create (`POST /api/v1/namespaces`).
pub fn is_namespace_create<B>(req: &Request<B>) -> bool {
    req.method() == http::Method::POST
        && req.uri().path().trim_end_matches('/') == "/api/v1/namespaces"
}

/// Serves a tenant's namespace create: the body read and judged, a name generated for
/// `generateName`, then the routed pipeline (`super::serve_routed`), again with another name
/// after a conflict.
pub async fn serve(
    state: &Arc<AppState>,
    tenant: &TenantId,
    user: &Arc<str>,
    groups: &Arc<[String]>,
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    let (mut parts, mut body) = req.into_parts();
    // Read already when paddock itself sends it (an import, stack/portable).
    let raw = match parts.extensions.remove::<PreRead>() {
        Some(pre) => pre.0,
        None => {
            paddock_upstream::limit::collect_limited(&mut body, state.config.max_body_bytes).await?
        }
    };
    // The audit records the body the tenant sent, not one with a generated name.
    if let Some(slot) = parts.extensions.get::<crate::observe::audit::AuditBody>() {
        let _ = slot.0.set(raw.clone());
    }
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let read = NamespaceBody::read(content_type, &raw)?;
    refuse_foreign_cluster(state, tenant, &read)?;
    let base = match (read.name(), read.generate_name()) {
        (None, Some(base)) => base,
        // Named (or neither: the apiserver's 400): sent as it came.
        _ => {
            parts.extensions.insert(PreRead(raw));
            let req = Request::from_parts(parts, ReqBody::read_already());
            return super::serve_routed(state, tenant, user, groups, req).await;
        }
    };
    let mut attempt = 1;
    loop {
        let name = generated_name(&base, random_u32()?);
        let mut named = read.clone();
        named.set_name(&name)?;
        let (bytes, ct) = named.encoded_over(&raw, &read)?;
        let mut p = parts.clone();
        // A YAML body goes on as JSON.
        p.headers
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
        p.extensions.insert(PreRead(Bytes::from(bytes)));
        p.extensions.insert(GeneratedName);
        let req = Request::from_parts(p, ReqBody::read_already());
        let resp = super::serve_routed(state, tenant, user, groups, req).await?;
        if resp.status() != StatusCode::CONFLICT || attempt >= GENERATE_ATTEMPTS {
            return Ok(resp);
        }
        tracing::debug!(%tenant, namespace = %name, attempt,
            "a generated namespace name exists already; trying another");
        paddock_upstream::body::drain(resp.into_body()).await;
        attempt += 1;
    }
}

/// A source of random numbers for one generated name (the apiserver's are not secret either;
/// the crypto provider's generator is the one paddock has).
fn random_u32() -> Result<impl FnMut() -> u32, ServerError> {
    let mut bytes = [0u8; 4 * paddock_core::wire::namespace_body::GENERATED_LEN];
    paddock_pki::crypto_provider()
        .secure_random
        .fill(&mut bytes)
        .map_err(|_| ServerError::Internal("no randomness for a generated name".into()))?;
    let mut words = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect::<Vec<_>>()
        .into_iter();
    Ok(move || words.next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_a_namespace_post_is_a_namespace_create() {
        let req = |m: &str, p: &str| Request::builder().method(m).uri(p).body(()).unwrap();
        assert!(is_namespace_create(&req("POST", "/api/v1/namespaces")));
        assert!(is_namespace_create(&req("POST", "/api/v1/namespaces/")));
        assert!(is_namespace_create(&req(
            "POST",
            "/api/v1/namespaces?dryRun=All"
        )));
        assert!(!is_namespace_create(&req("GET", "/api/v1/namespaces")));
        assert!(!is_namespace_create(&req(
            "POST",
            "/api/v1/namespaces/web/configmaps"
        )));
        assert!(!is_namespace_create(&req(
            "POST",
            "/apis/x.io/v1/namespaces"
        )));
    }

    #[test]
    fn random_names_differ() {
        let a = generated_name("dev-", random_u32().unwrap());
        let b = generated_name("dev-", random_u32().unwrap());
        assert!(a.starts_with("dev-") && a.len() == 9, "{a}");
        // 27^5 names: two draws equal is a one in 14 million event.
        assert_ne!(a, b);
    }
}
