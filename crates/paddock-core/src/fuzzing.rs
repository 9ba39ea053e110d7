//! Entry points shared by the fuzz targets (`fuzz/fuzz_targets/*.rs`, cargo-fuzz, nightly) and
//! the corpus regression test (`tests/fuzz_corpus.rs`, stable), so that every corpus file is
//! checked on every CI run without nightly.
//!
//! Each function runs one response-side rewriter over arbitrary bytes and checks invariants;
//! a violated invariant is returned as `Err(description)` (the callers panic on it). Panics
//! inside the rewriters are what the fuzzer hunts for.
//! - the output does not depend on how the input was chunked;
//! - when the input is valid JSON, so is the output;
//! - discovery output is deterministic.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::response::discovery::discovery_down;
use crate::response::list::CollectionRewriter;
use crate::response::table::TableScope;
use crate::response::watch::WatchRewriter;
use crate::response::{DomCollection, DomEvents};
use crate::tenant::TenantId;

/// A small upstream with the shapes that matter: the core group, a built-in group, a
/// forbidden one, the tenant's CRD group and another tenant's.
const CORE: &str = r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{},"versions":[{"version":"v1","resources":[
{"resource":"pods","responseKind":{"group":"","version":"","kind":"Pod"},"scope":"Namespaced","verbs":["get","list","watch"],"subresources":[{"subresource":"log","verbs":["get"]}]},
{"resource":"configmaps","responseKind":{"group":"","version":"","kind":"ConfigMap"},"scope":"Namespaced","verbs":["get","list"]},
{"resource":"events","responseKind":{"group":"","version":"","kind":"Event"},"scope":"Namespaced","verbs":["get","list"]},
{"resource":"namespaces","responseKind":{"group":"","version":"","kind":"Namespace"},"scope":"Cluster","verbs":["get","list"]},
{"resource":"nodes","responseKind":{"group":"","version":"","kind":"Node"},"scope":"Cluster","verbs":["get","list","patch"],"subresources":[{"subresource":"proxy","verbs":["get"]}]}]}]}]}"#;
const APIS: &str = r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
{"metadata":{"name":"rbac.authorization.k8s.io"},"versions":[{"version":"v1","resources":[{"resource":"clusterroles","responseKind":{"group":"","version":"","kind":"ClusterRole"},"scope":"Cluster","verbs":["get","list"]}]}]},
{"metadata":{"name":"apiregistration.k8s.io"},"versions":[{"version":"v1","resources":[{"resource":"apiservices","responseKind":{"group":"","version":"","kind":"APIService"},"scope":"Cluster","verbs":["get"]}]}]},
{"metadata":{"name":"foofoo-example.com"},"versions":[{"version":"v1","resources":[{"resource":"widgets","responseKind":{"group":"foofoo-example.com","version":"v1","kind":"Widget"},"scope":"Namespaced","verbs":["get","list"]}]}]},
{"metadata":{"name":"barbar-example.com"},"versions":[{"version":"v1","resources":[{"resource":"widgets","responseKind":{"group":"barbar-example.com","version":"v1","kind":"Widget"},"scope":"Namespaced","verbs":["get","list"]}]}]}]}"#;

/// Tenant `foofoo` over the small upstream above.
pub fn context() -> Result<TenantContext, String> {
    let catalog =
        Catalog::from_aggregated(CORE.as_bytes(), APIS.as_bytes()).map_err(|e| e.to_string())?;
    let tenant = TenantId::parse("foofoo").map_err(|e| e.to_string())?;
    Ok(TenantContext {
        tenant,
        catalog: Arc::new(catalog),
    })
}

/// Chunk sizes derived from the input itself, so the fuzzer explores splits too.
fn chunk_size(data: &[u8]) -> usize {
    data.first().map_or(1, |b| usize::from(*b % 31) + 1)
}

fn check_chunking<F>(data: &[u8], mut run: F) -> Result<(), String>
where
    F: FnMut(&[u8], usize) -> Result<Vec<u8>, TranslateError>,
{
    let whole = run(data, data.len().max(1));
    let split = run(data, chunk_size(data));
    match (&whole, &split) {
        (Ok(a), Ok(b)) if a != b => return Err("chunking changed the output".into()),
        (Ok(_), Err(e)) | (Err(e), Ok(_)) => {
            return Err(format!("chunking changed success: {e}"));
        }
        _ => {}
    }
    if let Ok(out) = whole
        && serde_json::from_slice::<serde_json::Value>(data).is_ok()
        && !valid_json_stream(&out)
    {
        return Err("valid JSON in, invalid JSON out".into());
    }
    Ok(())
}

/// One JSON document, or a stream of them (watch output).
fn valid_json_stream(out: &[u8]) -> bool {
    serde_json::Deserializer::from_slice(out)
        .into_iter::<serde::de::IgnoredAny>()
        .all(|r| r.is_ok())
}

/// The streaming LIST / Table rewriter.
pub fn list_framer(data: &[u8]) -> Result<(), String> {
    let ctx = context()?;
    let scope = TableScope {
        resource: ctx.catalog.resolve_shared(&ctx.tenant, "", "v1", "pods"),
        cluster_wide: true,
    };
    check_chunking(data, |d, n| {
        let mut rw = CollectionRewriter::new(DomCollection::new(ctx.clone(), scope.clone()));
        let mut out = Vec::new();
        for c in d.chunks(n) {
            rw.feed(c, &mut out)?;
        }
        rw.finish(&mut out)?;
        Ok(out)
    })
}

/// The streaming watch rewriter.
pub fn watch_framer(data: &[u8]) -> Result<(), String> {
    let ctx = context()?;
    let scope = TableScope {
        resource: ctx.catalog.resolve_shared(&ctx.tenant, "", "v1", "pods"),
        cluster_wide: true,
    };
    check_chunking(data, |d, n| {
        let mut rw = WatchRewriter::new(DomEvents::new(ctx.clone(), scope.clone()));
        let mut out = Vec::new();
        for c in d.chunks(n) {
            rw.feed(c, &mut out)?;
        }
        rw.finish(&mut out)?;
        Ok(out)
    })
}

/// The discovery filter: valid JSON out, deterministic, no other tenant's group.
pub fn discovery_filter(data: &[u8]) -> Result<(), String> {
    let ctx = context()?;
    let a = discovery_down(&ctx.tenant, &ctx.catalog, data);
    let b = discovery_down(&ctx.tenant, &ctx.catalog, data);
    match (a, b) {
        (Ok(a), Ok(b)) => {
            if a != b {
                return Err("discovery output is not deterministic".into());
            }
            let v: serde_json::Value =
                serde_json::from_slice(&a).map_err(|e| format!("invalid output: {e}"))?;
            for g in group_names(&v) {
                if g.starts_with("barbar-") {
                    return Err(format!("another tenant's group {g} survived"));
                }
            }
            Ok(())
        }
        (Err(_), Err(_)) => Ok(()),
        _ => Err("discovery output is not deterministic".into()),
    }
}

/// Group names a discovery document advertises, in any of its kinds.
fn group_names(v: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |x: Option<&serde_json::Value>| {
        if let Some(s) = x.and_then(serde_json::Value::as_str) {
            out.push(s.to_owned());
        }
    };
    if v.get("kind").and_then(serde_json::Value::as_str) == Some("APIGroup") {
        push(v.get("name"));
    }
    for g in v
        .get("groups")
        .and_then(|g| g.as_array())
        .into_iter()
        .flatten()
    {
        push(g.get("name"));
    }
    for g in v
        .get("items")
        .and_then(|g| g.as_array())
        .into_iter()
        .flatten()
    {
        push(g.pointer("/metadata/name"));
    }
    out
}

/// The URL parser and planner: arbitrary method, path and query. Whatever is accepted must
/// name only the tenant's namespaces upstream.
pub fn path_parser(data: &[u8]) -> Result<(), String> {
    let ctx = context()?;
    let Some((&m, rest)) = data.split_first() else {
        return Ok(());
    };
    let method = ["GET", "POST", "PUT", "PATCH", "DELETE"][usize::from(m % 5)];
    let text = String::from_utf8_lossy(rest);
    let (path, query) = match text.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (text.to_string(), None),
    };
    let Ok(parsed) = crate::request::parse_request(method, &path, query.as_deref()) else {
        return Ok(());
    };
    let Ok(plan) = crate::request::plan(&ctx, parsed) else {
        return Ok(());
    };
    let up = &plan.upstream_path_and_query;
    let up_path = up.split('?').next().unwrap_or_default();
    let segs: Vec<&str> = up_path.split('/').collect();
    for w in segs.windows(2) {
        if w[0] == "namespaces" && !w[1].is_empty() && !w[1].starts_with("foofoo-") {
            // `/api/v1/namespaces/<name>` of a namespace itself is prefixed too.
            return Err(format!(
                "planned upstream path {up} names namespace {} outside the tenant",
                w[1]
            ));
        }
    }
    Ok(())
}

/// The request body and patch translator: arbitrary bodies of every content type against a
/// namespaced and a cluster-scoped object. No panic; JSON in, JSON out; nothing of another
/// tenant is created.
pub fn patch_translator(data: &[u8]) -> Result<(), String> {
    let ctx = context()?;
    let Some((&sel, body)) = data.split_first() else {
        return Ok(());
    };
    let content_type = [
        "application/json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
    ][usize::from(sel % 5)];
    let (method, path) = if sel & 0x80 == 0 {
        ("PATCH", "/api/v1/namespaces/web/configmaps/c1")
    } else {
        (
            "PATCH",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/reader",
        )
    };
    let method = if content_type == "application/json" {
        "PUT"
    } else {
        method
    };
    let parsed = crate::request::parse_request(method, path, None).map_err(|e| e.to_string())?;
    let Ok(plan) = crate::request::plan(&ctx, parsed) else {
        return Ok(());
    };
    if let Ok((out, _ct)) =
        crate::wire::body::translate_request_body(&ctx, &plan, content_type, body)
    {
        if serde_json::from_slice::<serde_json::Value>(&out).is_err() {
            return Err(format!("{content_type}: translated body is not JSON"));
        }
        let text = String::from_utf8_lossy(&out);
        if text.contains("barbar-") && !String::from_utf8_lossy(body).contains("barbar-") {
            return Err("translation introduced another tenant's name".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_points_accept_garbage() {
        for d in [
            &b""[..],
            b"{",
            b"}",
            b"[1,2]",
            b"{\"items\":[{\"metadata\":{\"namespace\":\"foofoo-a\"}}]}",
            b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"namespace\":\"foofoo-a\"}}}\n",
            b"{\"kind\":\"APIGroupList\",\"groups\":[{\"name\":\"barbar-example.com\",\"versions\":[]}]}",
        ] {
            list_framer(d).unwrap();
            watch_framer(d).unwrap();
            discovery_filter(d).unwrap();
        }
    }
}
