//! The admin API: `tenants.paddock.io/v1alpha1` and `issuedcertificates.paddock.io/v1alpha1`,
//! served Kubernetes-style so `kubectl get tenants` works with the platform-admin kubeconfig.
//! Platform admins only; a tenant user may read its own tenant record and nothing else.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use paddock_core::TenantId;
use paddock_core::fairshare::LimitOverrides;
use paddock_store::{CertRecord, TenantPhase, TenantRecord};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::body::{ResBody, collect_limited, full};
use crate::error::ServerError;
use crate::provision;
use crate::state::AppState;

const GROUP: &str = "paddock.io";
const VERSION: &str = "v1alpha1";
const GV: &str = "paddock.io/v1alpha1";
const BASE: &str = "/apis/paddock.io/v1alpha1";
/// How long a tenant deletion waits for upstream namespaces to finish terminating.
const DELETE_TIMEOUT: Duration = Duration::from_secs(300);

pub(crate) fn json_response(code: StatusCode, v: &Value) -> Result<Response<ResBody>, ServerError> {
    let body = serde_json::to_vec(v).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = Response::new(full(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(r)
}

fn rfc3339(t: SystemTime) -> String {
    let odt = time::OffsetDateTime::from(t);
    odt.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A tenant record as a Kubernetes-style object.
pub fn tenant_object(r: &TenantRecord) -> Value {
    json!({
        "apiVersion": GV,
        "kind": "Tenant",
        "metadata": {"name": r.id.as_str(), "creationTimestamp": r.created, "labels": r.labels, "generation": r.generation},
        "spec": {"displayName": r.display_name, "limits": r.limits.unwrap_or_default(), "policy": r.policy},
        "status": {"phase": phase_str(r.phase), "progress": r.progress}
    })
}

/// Parses fair-share overrides; an unknown field or a bad value is a 400 naming it.
fn parse_limits(v: &Value) -> Result<Option<LimitOverrides>, ServerError> {
    if v.is_null() {
        return Ok(None);
    }
    let o: LimitOverrides = serde_json::from_value(v.clone())
        .map_err(|e| ServerError::BadRequest(format!("spec.limits: {e}")))?;
    Ok((!o.is_empty()).then_some(o))
}

/// Applies a JSON merge patch (RFC 7386; `null` removes an override) to a tenant's limits.
async fn patch_limits(
    state: &Arc<AppState>,
    id: &str,
    patch: &Value,
) -> Result<TenantRecord, ServerError> {
    let Some(fields) = patch.as_object() else {
        return Err(ServerError::BadRequest(
            "the body must be a JSON object of limits, e.g. {\"readQPS\": 20, \"maxWatches\": null}".into(),
        ));
    };
    let mut rec =
        state.store.get_tenant(id).await?.ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found"))
        })?;
    let mut current = serde_json::to_value(rec.limits.unwrap_or_default())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    for (k, v) in fields {
        if v.is_null() {
            current.as_object_mut().map(|m| m.remove(k));
        } else {
            current[k] = v.clone();
        }
    }
    rec.limits = parse_limits(&current)?;
    rec.generation += 1;
    state.store.put_tenant(&rec).await?;
    Ok(rec)
}

fn phase_str(p: TenantPhase) -> &'static str {
    match p {
        TenantPhase::Active => "Active",
        TenantPhase::Suspended => "Suspended",
        TenantPhase::Terminating => "Terminating",
    }
}

fn cert_object(c: &CertRecord) -> Value {
    json!({
        "apiVersion": GV,
        "kind": "IssuedCertificate",
        "metadata": {"name": c.serial_hex},
        "spec": {"tenant": c.tenant.as_ref().map(|t| t.as_str().to_string()), "user": c.user, "groups": c.groups},
        "status": {"notAfter": c.not_after, "revoked": c.revoked, "revokedAt": c.revoked_at}
    })
}

fn wants_table(req: &Request<Incoming>) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

fn tenant_table(items: &[Value]) -> Value {
    let rows: Vec<Value> = items
        .iter()
        .map(|t| {
            json!({
                "cells": [t["metadata"]["name"], t["status"]["phase"], t["spec"]["displayName"], t["metadata"]["creationTimestamp"]],
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": t["metadata"]}
            })
        })
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "Tenant id", "priority": 0},
            {"name": "Phase", "type": "string", "format": "", "description": "Lifecycle phase", "priority": 0},
            {"name": "Display Name", "type": "string", "format": "", "description": "Display name", "priority": 0},
            {"name": "Created", "type": "string", "format": "", "description": "Creation time", "priority": 0}
        ],
        "rows": rows
    })
}

fn discovery(path: &str) -> Option<Value> {
    match path {
        "/api" => {
            Some(json!({"kind": "APIVersions", "versions": [], "serverAddressByClientCIDRs": []}))
        }
        "/apis" => Some(
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
            "name": GROUP, "versions": [{"groupVersion": GV, "version": VERSION}],
            "preferredVersion": {"groupVersion": GV, "version": VERSION}}]}),
        ),
        "/apis/paddock.io" => Some(
            json!({"kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
            "versions": [{"groupVersion": GV, "version": VERSION}],
            "preferredVersion": {"groupVersion": GV, "version": VERSION}}),
        ),
        BASE => Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV, "resources": [
                {"name": "tenants", "singularName": "tenant", "namespaced": false, "kind": "Tenant",
                 "verbs": ["get", "list", "create", "delete"], "shortNames": ["tn"]},
                {"name": "issuedcertificates", "singularName": "issuedcertificate", "namespaced": false,
                 "kind": "IssuedCertificate", "verbs": ["get", "list", "create"]},
                {"name": "issuedcertificates/revocation", "singularName": "", "namespaced": false,
                 "kind": "IssuedCertificate", "verbs": ["create"]}
            ]}),
        ),
        "/version" => Some(
            json!({"major": "1", "minor": "33", "gitVersion": concat!("paddock-", env!("CARGO_PKG_VERSION")),
            "platform": "linux/amd64"}),
        ),
        _ => None,
    }
}

/// Serves a platform admin.
pub async fn serve_admin(
    state: &Arc<AppState>,
    caller: &Caller,
    req: Request<Incoming>,
) -> Result<Response<ResBody>, ServerError> {
    let path = req.uri().path().trim_end_matches('/').to_string();
    let method = req.method().clone();
    if path == "/metrics" && method == Method::GET {
        let mut r = Response::new(full(state.metrics.encode()));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static(
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            ),
        );
        return Ok(r);
    }
    if method == Method::GET
        && let Some(doc) = discovery(&path)
    {
        return json_response(StatusCode::OK, &doc);
    }
    let rest = path.strip_prefix(BASE).unwrap_or("");
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    if !path.starts_with(BASE) {
        return Err(ServerError::NotFound(format!(
            "{path}: platform admins reach only paddock's admin API here ({BASE}); use the upstream cluster directly for anything else"
        )));
    }
    match (method, segs.as_slice()) {
        (Method::GET, ["tenants"]) => {
            let mut items: Vec<Value> = state
                .cache
                .tenants()
                .iter()
                .map(|t| tenant_object(t))
                .collect();
            items.sort_by(|a, b| {
                a["metadata"]["name"]
                    .as_str()
                    .cmp(&b["metadata"]["name"].as_str())
            });
            if wants_table(&req) {
                return json_response(StatusCode::OK, &tenant_table(&items));
            }
            json_response(
                StatusCode::OK,
                &json!({"apiVersion": GV, "kind": "TenantList", "metadata": {}, "items": items}),
            )
        }
        (Method::GET, ["tenants", id]) => {
            let rec = state.store.get_tenant(id).await?.ok_or_else(|| {
                ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found"))
            })?;
            let obj = tenant_object(&rec);
            if wants_table(&req) {
                return json_response(StatusCode::OK, &tenant_table(&[obj]));
            }
            json_response(StatusCode::OK, &obj)
        }
        (Method::POST, ["tenants"]) => {
            let body = collect_limited(req.into_body(), 1 << 20).await?;
            let obj: Value = serde_json::from_slice(&body).map_err(|e| {
                ServerError::BadRequest(format!("the request body is not valid JSON: {e}"))
            })?;
            let id = obj["metadata"]["name"].as_str().ok_or_else(|| {
                ServerError::BadRequest("metadata.name (the tenant id) is required".into())
            })?;
            let display = obj["spec"]["displayName"]
                .as_str()
                .unwrap_or(id)
                .to_string();
            let labels: BTreeMap<String, String> =
                serde_json::from_value(obj["metadata"]["labels"].clone()).unwrap_or_default();
            let limits = parse_limits(&obj["spec"]["limits"])?;
            let policy = crate::policy_admin::parse_policy(&obj["spec"]["policy"])?;
            let mut rec = create_tenant(state, id, display, labels, limits).await?;
            if policy.is_some() && rec.policy != policy {
                rec = crate::policy_admin::set_policy(state, id, policy).await?;
            }
            json_response(StatusCode::CREATED, &tenant_object(&rec))
        }
        (Method::PATCH, ["tenants", id, "limits"]) => {
            let body = collect_limited(req.into_body(), 1 << 20).await?;
            let patch: Value = serde_json::from_slice(&body).map_err(|e| {
                ServerError::BadRequest(format!("the request body is not valid JSON: {e}"))
            })?;
            let rec = patch_limits(state, id, &patch).await?;
            tracing::info!(admin = caller.user(), tenant = id, limits = ?rec.limits, "tenant limits changed");
            json_response(StatusCode::OK, &tenant_object(&rec))
        }
        (m, ["tenants", id, "policy"]) => {
            crate::policy_admin::serve_policy(state, caller, m, id, req.into_body()).await
        }
        (Method::DELETE, ["tenants", id]) => {
            let rec = start_tenant_deletion(state, id).await?;
            json_response(StatusCode::OK, &tenant_object(&rec))
        }
        (Method::GET, ["issuedcertificates"]) => {
            let tenant = req.uri().query().and_then(|q| {
                form_pairs(q)
                    .into_iter()
                    .find(|(k, _)| k == "tenant")
                    .map(|(_, v)| v)
            });
            let certs = state.store.list_certs(tenant.as_deref()).await?;
            let items: Vec<Value> = certs.iter().map(cert_object).collect();
            json_response(
                StatusCode::OK,
                &json!({"apiVersion": GV, "kind": "IssuedCertificateList", "metadata": {}, "items": items}),
            )
        }
        (Method::POST, ["issuedcertificates"]) => {
            let body = collect_limited(req.into_body(), 1 << 20).await?;
            let spec: IssueRequest = serde_json::from_slice::<IssueEnvelope>(&body)
                .map_err(|e| {
                    ServerError::BadRequest(format!("invalid IssuedCertificate request: {e}"))
                })?
                .spec;
            let issued = issue_certificate(state, spec).await?;
            tracing::info!(admin = caller.user(), serial = %issued["metadata"]["name"], "certificate issued");
            json_response(StatusCode::CREATED, &issued)
        }
        (Method::POST, ["issuedcertificates", serial, "revocation"]) => {
            let rec = state.store.revoke_cert(serial).await?;
            tracing::info!(admin = caller.user(), serial, "certificate revoked");
            json_response(StatusCode::OK, &cert_object(&rec))
        }
        (m, _) => Err(ServerError::NotFound(format!(
            "{m} {path} is not part of the admin API"
        ))),
    }
}

fn form_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter_map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

#[derive(Deserialize)]
struct IssueEnvelope {
    spec: IssueRequest,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IssueRequest {
    tenant: Option<String>,
    user: String,
    #[serde(default)]
    groups: Vec<String>,
    csr: String,
    validity_seconds: Option<u64>,
}

async fn issue_certificate(
    state: &Arc<AppState>,
    spec: IssueRequest,
) -> Result<Value, ServerError> {
    let tenant = match &spec.tenant {
        Some(t) => {
            let id = TenantId::parse(t)
                .map_err(|e| ServerError::BadRequest(format!("spec.tenant: {e}")))?;
            match state.cache.tenant(id.as_str()) {
                Some(r) if r.phase == TenantPhase::Active => Some(id),
                Some(_) => return Err(ServerError::Conflict(format!("tenant {id} is not active"))),
                None => return Err(ServerError::NotFound(format!("tenant {id} does not exist"))),
            }
        }
        None => None,
    };
    if spec.user.is_empty() || spec.user.contains(':') {
        return Err(ServerError::BadRequest(
            "spec.user must be non-empty and contain no ':'".into(),
        ));
    }
    let validity = spec
        .validity_seconds
        .map(Duration::from_secs)
        .unwrap_or(state.config.cert_validity);
    let subject = paddock_pki::Subject {
        user: spec.user.clone(),
        groups: spec.groups.clone(),
        tenant: tenant.as_ref().map(|t| t.as_str().to_string()),
    };
    let ca = state.ca.load_full();
    let issued = ca
        .sign_csr(&spec.csr, &subject, validity, SystemTime::now())
        .map_err(|e| ServerError::BadRequest(format!("spec.csr: {e}")))?;
    let record = CertRecord {
        serial_hex: issued.serial_hex.clone(),
        tenant: tenant.clone(),
        user: spec.user.clone(),
        groups: spec.groups.clone(),
        not_after: rfc3339(issued.not_after),
        revoked: false,
        revoked_at: None,
    };
    // Recorded before it is handed out: a certificate paddock cannot revoke is never issued.
    state.store.record_cert(&record).await?;
    let mut obj = cert_object(&record);
    obj["status"]["certificate"] = json!(issued.cert_pem);
    obj["status"]["caCertificate"] = json!(ca.cert_pem());
    obj["status"]["server"] = json!(state.config.public_url);
    Ok(obj)
}

/// Creates a tenant: record first (so a store outage refuses before anything exists
/// upstream), then upstream provisioning; a failed provisioning is rolled back.
pub async fn create_tenant(
    state: &Arc<AppState>,
    id: &str,
    display_name: String,
    labels: BTreeMap<String, String>,
    limits: Option<LimitOverrides>,
) -> Result<TenantRecord, ServerError> {
    let tid = TenantId::parse(id)
        .map_err(|e| ServerError::BadRequest(format!("invalid tenant id {id:?}: {e}")))?;
    if let Some(existing) = state.store.get_tenant(tid.as_str()).await? {
        if existing.phase == TenantPhase::Terminating {
            return Err(ServerError::Conflict(format!(
                "tenant {tid} is being deleted; retry when it is gone"
            )));
        }
        // Idempotent: creating an existing tenant repairs its upstream objects.
        provision::provision_tenant(&state.upstream, &tid).await?;
        provision::ensure_tenant_flow_schema(
            &state.upstream,
            &tid,
            state.config.tenant_priority_shares,
        )
        .await?;
        return Ok(existing);
    }
    provision::check_prefix_unused(&state.upstream, &tid).await?;
    let rec = TenantRecord {
        id: tid.clone(),
        display_name,
        labels,
        phase: TenantPhase::Active,
        created: rfc3339(SystemTime::now()),
        progress: None,
        generation: 1,
        limits,
        policy: None,
    };
    state.store.create_tenant(&rec).await?;
    let provisioned = match provision::provision_tenant(&state.upstream, &tid).await {
        Ok(()) => {
            provision::ensure_tenant_flow_schema(
                &state.upstream,
                &tid,
                state.config.tenant_priority_shares,
            )
            .await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = provisioned {
        tracing::warn!(tenant = %tid, error = %e, "provisioning failed; rolling back");
        let _ = provision::delete_tenant_objects(
            &state.upstream,
            &tid,
            state.config.tenant_priority_shares > 0,
            Duration::from_secs(30),
            |_| {},
        )
        .await;
        let _ = state.store.delete_tenant(tid.as_str()).await;
        return Err(e);
    }
    tracing::info!(tenant = %tid, "tenant created");
    Ok(rec)
}

/// Marks a tenant Terminating and removes it in the background.
pub async fn start_tenant_deletion(
    state: &Arc<AppState>,
    id: &str,
) -> Result<TenantRecord, ServerError> {
    let mut rec =
        state.store.get_tenant(id).await?.ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found"))
        })?;
    if rec.phase != TenantPhase::Terminating {
        rec.phase = TenantPhase::Terminating;
        rec.progress = Some("deletion started".into());
        rec.generation += 1;
        state.store.put_tenant(&rec).await?;
    }
    let state2 = state.clone();
    let tid = rec.id.clone();
    tokio::spawn(async move { finish_tenant_deletion(state2, tid).await });
    Ok(rec)
}

/// Removes everything upstream, revokes the tenant's certificates, then the record. Safe to
/// run twice (two replicas, or after a crash midway).
pub async fn finish_tenant_deletion(state: Arc<AppState>, tid: TenantId) {
    let store = state.store.clone();
    let tid2 = tid.clone();
    let last_progress = Arc::new(parking_lot::Mutex::new(String::new()));
    let lp = last_progress.clone();
    let result = provision::delete_tenant_objects(
        &state.upstream,
        &tid,
        state.config.tenant_priority_shares > 0,
        DELETE_TIMEOUT,
        move |p| {
            *lp.lock() = p;
        },
    );
    let updater = {
        let store = store.clone();
        let tid = tid2.clone();
        let lp = last_progress.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let p = lp.lock().clone();
                if let Ok(Some(mut rec)) = store.get_tenant(tid.as_str()).await {
                    if rec.progress.as_deref() != Some(p.as_str()) && !p.is_empty() {
                        rec.progress = Some(p);
                        let _ = store.put_tenant(&rec).await;
                    }
                } else {
                    break;
                }
            }
        })
    };
    let outcome = result.await;
    updater.abort();
    match outcome {
        Ok(()) => {
            if let Ok(certs) = store.list_certs(Some(tid.as_str())).await {
                for c in certs.iter().filter(|c| !c.revoked) {
                    let _ = store.revoke_cert(&c.serial_hex).await;
                }
            }
            // Its Ingress hosts become free for other tenants.
            if let Err(e) = store.release_claims(tid.as_str()).await {
                tracing::warn!(tenant = %tid, error = %e, "could not release the tenant's claims");
            }
            match store.delete_tenant(tid.as_str()).await {
                Ok(()) => tracing::info!(tenant = %tid, "tenant deleted"),
                Err(e) => {
                    tracing::warn!(tenant = %tid, error = %e, "tenant objects removed but the record could not be deleted")
                }
            }
        }
        Err(e) => {
            tracing::warn!(tenant = %tid, error = %e, "tenant deletion incomplete");
            if let Ok(Some(mut rec)) = store.get_tenant(tid.as_str()).await {
                rec.progress = Some(format!("deletion incomplete, will retry: {e}"));
                let _ = store.put_tenant(&rec).await;
            }
        }
    }
}

/// A tenant user asking about paddock.io: its own tenant record only.
pub async fn serve_tenant_self(
    state: &Arc<AppState>,
    tenant: &TenantId,
    req: Request<Incoming>,
) -> Result<Response<ResBody>, ServerError> {
    let path = req.uri().path().trim_end_matches('/');
    let own = format!("{BASE}/tenants/{}", tenant.as_str());
    if req.method() == Method::GET {
        match path {
            "/apis/paddock.io" => {
                if let Some(doc) = discovery(path) {
                    return json_response(StatusCode::OK, &doc);
                }
            }
            BASE => {
                return json_response(
                    StatusCode::OK,
                    &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV, "resources": [
                        {"name": "tenants", "singularName": "tenant", "namespaced": false, "kind": "Tenant",
                         "verbs": ["get"], "shortNames": ["tn"]}
                    ]}),
                );
            }
            _ => {}
        }
    }
    if req.method() == Method::GET && path == own {
        let rec = state.cache.tenant(tenant.as_str()).ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{tenant}\" not found"))
        })?;
        return json_response(StatusCode::OK, &tenant_object(&rec));
    }
    Err(ServerError::Forbidden(
        "tenants may only read their own tenant record (GET /apis/paddock.io/v1alpha1/tenants/<own id>)".into(),
    ))
}

/// Adds `paddock.io` (tenants, get only) to a tenant's `/apis` document, legacy or aggregated,
/// so that `kubectl get tenant <own id>` finds the resource. Other documents are unchanged.
pub fn add_tenant_group(doc: &[u8]) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(doc).ok()?;
    match v["kind"].as_str()? {
        "APIGroupList" => {
            v["groups"].as_array_mut()?.push(json!({
                "name": GROUP, "versions": [{"groupVersion": GV, "version": VERSION}],
                "preferredVersion": {"groupVersion": GV, "version": VERSION}
            }));
        }
        "APIGroupDiscoveryList" => {
            v["items"].as_array_mut()?.push(json!({
                "metadata": {"name": GROUP, "creationTimestamp": null},
                "versions": [{"version": VERSION, "freshness": "Current", "resources": [{
                    "resource": "tenants", "singularResource": "tenant", "scope": "Cluster",
                    "shortNames": ["tn"],
                    "responseKind": {"group": GROUP, "version": VERSION, "kind": "Tenant"},
                    "verbs": ["get"]
                }]}]
            }));
        }
        _ => return None,
    }
    serde_json::to_vec(&v).ok()
}
