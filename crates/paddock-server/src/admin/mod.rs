//! The admin API: `tenants.paddock.io/v1alpha1` and `issuedcertificates.paddock.io/v1alpha1`,
//! served Kubernetes-style so `kubectl get tenants` works with the platform-admin kubeconfig.
//! Platform admins only; a tenant user may read its own tenant record and nothing else.

pub mod answer;
pub mod clusters;
pub mod lifecycle;
pub mod metering;
pub mod policy;
pub mod quota;
pub mod request;
pub mod templates;
pub mod usage;
pub mod users;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::body::ReqBody;
use http::{Method, Request, Response, StatusCode, header};
use paddock_core::TenantId;
use paddock_core::fair::share::LimitOverrides;
use paddock_store::{CertRecord, TenantPhase, TenantRecord};
use serde_json::{Value, json};

use crate::admin::answer::json_response;
use crate::state::AppState;
use paddock_core::identity::Caller;
use paddock_upstream::body::full;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::res_body::ResBody;

use paddock_api::certificate::{
    CertificateMeta, CertificateSpec, CertificateStatus, IssueRequest, IssueSpec, IssuedCertificate,
};
use paddock_api::lifecycle::{PROTECTION, SLEEP, SUSPENSION};
use paddock_api::tenant::{Tenant, TenantMeta, TenantSpec, TenantStatus};
use paddock_api::{BASE, GROUP, GROUP_VERSION as GV, List, VERSION};

/// A tenant record as a Kubernetes-style object (every field written, `null` where unset).
pub fn tenant_object(r: &TenantRecord) -> Tenant {
    let mut t = Tenant {
        api_version: GV.to_string(),
        kind: paddock_api::tenant::KIND.to_string(),
        metadata: TenantMeta {
            name: Some(r.id.as_str().to_string()),
            creation_timestamp: Some(json!(r.created)),
            labels: Some(json!(r.labels)),
            generation: Some(json!(r.generation)),
        },
        spec: TenantSpec {
            display_name: Some(r.display_name.clone()),
            limits: Some(json!(r.limits.unwrap_or_default())),
            billing: Some(json!(r.billing)),
            policy: Some(json!(r.policy)),
            quota: Some(json!(crate::admin::quota::spec_of_record(r))),
            clusters: Some(json!(r.cluster_names())),
            span: r.span.as_ref().map(|s| json!(s)),
            ..TenantSpec::default()
        },
        status: Some(TenantStatus {
            phase: phase_str(r.phase).to_string(),
            progress: json!(r.progress),
            ..TenantStatus::default()
        }),
    };
    crate::admin::lifecycle::describe(&mut t, r, crate::lifecycle::unix_now());
    t
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

fn cert_object(c: &CertRecord) -> IssuedCertificate {
    IssuedCertificate {
        api_version: GV.into(),
        kind: paddock_api::certificate::KIND.into(),
        metadata: CertificateMeta {
            name: c.serial_hex.clone(),
        },
        spec: CertificateSpec {
            tenant: c.tenant.as_ref().map(|t| t.as_str().to_string()),
            user: c.user.clone(),
            groups: c.groups.clone(),
        },
        status: CertificateStatus {
            not_after: c.not_after.clone(),
            revoked: c.revoked,
            revoked_at: c.revoked_at.clone(),
            ..CertificateStatus::default()
        },
    }
}

fn wants_table(req: &Request<ReqBody>) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"))
}

fn tenant_table(items: &[Tenant]) -> Value {
    let rows: Vec<Value> = items
        .iter()
        .map(|t| {
            let phase = t.status.as_ref().map(|s| s.phase.as_str());
            let m = &t.metadata;
            json!({
                "cells": [m.name, phase, t.spec.display_name, m.creation_timestamp],
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": m}
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
        paddock_api::GROUP_PATH => Some(
            json!({"kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
            "versions": [{"groupVersion": GV, "version": VERSION}],
            "preferredVersion": {"groupVersion": GV, "version": VERSION}}),
        ),
        BASE => Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV, "resources": [
                {"name": "tenants", "singularName": "tenant", "namespaced": false, "kind": paddock_api::tenant::KIND,
                 "verbs": ["get", "list", "create", "delete"], "shortNames": ["tn"]},
                {"name": "tenants/billing", "singularName": "", "namespaced": false, "kind": paddock_api::tenant::KIND, "verbs": ["patch"]},
                {"name": "tenants/usage", "singularName": "", "namespaced": false, "kind": paddock_api::usage::KIND, "verbs": ["get"]},
                {"name": "tenants/suspension", "singularName": "", "namespaced": false, "kind": paddock_api::tenant::KIND, "verbs": ["create", "delete"]},
                {"name": "tenants/protection", "singularName": "", "namespaced": false, "kind": paddock_api::tenant::KIND, "verbs": ["patch"]},
                {"name": "issuedcertificates", "singularName": "issuedcertificate", "namespaced": false,
                 "kind": paddock_api::certificate::KIND, "verbs": ["get", "list", "create"]},
                {"name": "namespacetemplates", "singularName": "namespacetemplate", "namespaced": false,
                 "kind": paddock_api::template::KIND, "verbs": ["get", "list", "create", "update", "delete"], "shortNames": ["nstpl"]},
                {"name": "issuedcertificates/revocation", "singularName": "", "namespaced": false,
                 "kind": paddock_api::certificate::KIND, "verbs": ["create"]}
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
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    let path = req.uri().path().trim_end_matches('/').to_string();
    let method = req.method().clone();
    if path == "/metrics" && method == Method::GET {
        return Ok(metrics_response(state));
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
    if segs.first() == Some(&"clusters") {
        return crate::admin::clusters::serve(state, &method, &segs, req).await;
    }
    match (method, segs.as_slice()) {
        (Method::GET, ["tenants"]) => list_tenants(state, wants_table(&req)),
        (Method::GET, ["tenants", id]) => get_tenant(state, id, wants_table(&req)).await,
        (Method::POST, ["tenants"]) => {
            crate::admin::lifecycle::create(state, json_body(req).await?).await
        }
        (m, ["tenants", id, sub @ (SUSPENSION | PROTECTION | SLEEP)]) => {
            crate::admin::lifecycle::serve(state, caller, m, id, sub, req).await
        }
        (Method::PATCH, ["tenants", id, "limits"]) => {
            let patch = json_body(req).await?;
            let rec = patch_limits(state, id, &patch).await?;
            tracing::info!(admin = caller.user(), tenant = id, limits = ?rec.limits, "tenant limits changed");
            json_response(StatusCode::OK, &tenant_object(&rec))
        }
        (Method::PATCH, ["tenants", id, "billing"]) => {
            let rec = crate::admin::metering::patch_billing(state, caller, req, id).await?;
            json_response(StatusCode::OK, &tenant_object(&rec))
        }
        (Method::GET, ["tenants", id, "usage"]) => json_response(
            StatusCode::OK,
            &crate::admin::metering::usage(state, id).await?,
        ),
        (Method::GET, ["tenants", id, "users"]) => json_response(
            StatusCode::OK,
            &List::new(
                paddock_api::user::LIST_KIND,
                crate::admin::users::tenant_users(state, id).await?,
            ),
        ),
        (Method::GET, ["tenants", id, "quota"]) => {
            let tid = TenantId::parse(id).map_err(|e| ServerError::BadRequest(e.to_string()))?;
            json_response(
                StatusCode::OK,
                &crate::admin::quota::quota_object(state, &tid).await?,
            )
        }
        (Method::GET, ["tenants", id, "quotas"]) => {
            let tid = TenantId::parse(id).map_err(|e| ServerError::BadRequest(e.to_string()))?;
            json_response(
                StatusCode::OK,
                &List::new(
                    paddock_api::quota::LIST_KIND,
                    crate::admin::quota::quota_objects(state, &tid).await?,
                ),
            )
        }
        (Method::PATCH, ["tenants", id, "quota"]) => {
            let patch = json_body(req).await?;
            let q = crate::admin::quota::patch_quota(state, id, &patch).await?;
            tracing::info!(admin = caller.user(), tenant = id, hard = ?q.spec.hard, "tenant quota changed");
            json_response(StatusCode::OK, &q)
        }
        (m, ["namespacetemplates", ..]) => {
            crate::admin::templates::serve_templates(state, caller, m, &segs, req.into_body()).await
        }
        (m, ["tenants", id, "policy"]) => {
            crate::admin::policy::serve_policy(state, caller, m, id, req.into_body()).await
        }
        (Method::DELETE, ["tenants", id]) => delete_tenant(state, id).await,
        (Method::GET, ["issuedcertificates"]) => list_certificates(state, req.uri().query()).await,
        (Method::POST, ["issuedcertificates"]) => {
            let body = collect_limited(req.into_body(), 1 << 20).await?;
            let spec = serde_json::from_slice::<IssueRequest>(&body)
                .map_err(|e| {
                    ServerError::BadRequest(format!("invalid IssuedCertificate request: {e}"))
                })?
                .spec;
            let issued = issue_certificate(state, spec).await?;
            tracing::info!(admin = caller.user(), serial = %issued.metadata.name, "certificate issued");
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

/// paddock's metrics in the OpenMetrics text format.
fn metrics_response(state: &AppState) -> Response<ResBody> {
    let suspended = state
        .cache
        .tenants()
        .iter()
        .filter(|t| t.is_suspended())
        .count();
    state
        .metrics
        .tenants_suspended
        .set(i64::try_from(suspended).unwrap_or(i64::MAX));
    let asleep = state
        .cache
        .tenants()
        .iter()
        .filter(|t| t.sleep.is_some())
        .count();
    state
        .metrics
        .tenants_asleep
        .set(i64::try_from(asleep).unwrap_or(i64::MAX));
    let mut r = Response::new(full(state.metrics.encode()));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static(
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        ),
    );
    r
}

/// A request body of at most 1 MiB, parsed as JSON.
async fn json_body(req: Request<ReqBody>) -> Result<Value, ServerError> {
    let body = collect_limited(req.into_body(), 1 << 20).await?;
    serde_json::from_slice(&body)
        .map_err(|e| ServerError::BadRequest(format!("the request body is not valid JSON: {e}")))
}

/// Every tenant, sorted by id; as a Table when the client asks for one.
fn list_tenants(state: &AppState, table: bool) -> Result<Response<ResBody>, ServerError> {
    let mut items: Vec<Tenant> = state
        .cache
        .tenants()
        .iter()
        .map(|t| tenant_object(t))
        .collect();
    items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    if table {
        return json_response(StatusCode::OK, &tenant_table(&items));
    }
    json_response(
        StatusCode::OK,
        &List::new(paddock_api::tenant::LIST_KIND, items),
    )
}

async fn get_tenant(
    state: &AppState,
    id: &str,
    table: bool,
) -> Result<Response<ResBody>, ServerError> {
    let rec =
        state.store.get_tenant(id).await?.ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found"))
        })?;
    let obj = tenant_object(&rec);
    if table {
        return json_response(StatusCode::OK, &tenant_table(&[obj]));
    }
    json_response(StatusCode::OK, &obj)
}

/// A new tenant from a Tenant object: provisioned on its clusters, then its billing key and
/// policy set.
async fn create_tenant(
    state: &Arc<AppState>,
    obj: &Value,
) -> Result<Response<ResBody>, ServerError> {
    let t: Tenant = serde_json::from_value(obj.clone())
        .map_err(|e| ServerError::BadRequest(format!("the Tenant object: {e}")))?;
    let id = t.metadata.name.as_deref().ok_or_else(|| {
        ServerError::BadRequest("metadata.name (the tenant id) is required".into())
    })?;
    let display = t
        .spec
        .display_name
        .clone()
        .unwrap_or_else(|| id.to_string());
    let labels: BTreeMap<String, String> = t
        .metadata
        .labels
        .clone()
        .and_then(|l| serde_json::from_value(l).ok())
        .unwrap_or_default();
    let part = |v: &Option<Value>| v.clone().unwrap_or(Value::Null);
    let limits = parse_limits(&part(&t.spec.limits))?;
    let billing = paddock_core::observe::billing::BillingKey::from_spec(&part(&t.spec.billing))
        .map_err(|e| ServerError::BadRequest(e.to_string()))?;
    let (quota, scoped_quota) =
        crate::admin::quota::quota_at_creation(state, &part(&t.spec.quota))?;
    let policy = crate::admin::policy::parse_policy(&part(&t.spec.policy))?;
    let span = crate::admin::clusters::span_of(&part(&t.spec.span))?;
    let placed = crate::admin::clusters::placement_for(state, id, &part(&t.spec.clusters)).await?;
    let mut rec = paddock_reconciler::lifecycle::create_tenant(
        &placed[0], id, display, labels, limits, quota,
    )
    .await?;
    if placed.len() > 1 {
        // Spanning several clusters: the record names them all, each is provisioned.
        let home = placed[0].cluster.clone();
        rec = crate::clusters::span_tenant::extend_tenant(state, rec, &home, &placed[1..]).await?;
    }
    if rec.billing != billing {
        // Stored, then stamped on the namespaces provisioning just made.
        rec = crate::admin::metering::set_billing(state, rec, billing).await?;
    }
    if policy.is_some() && rec.policy != policy {
        rec = crate::admin::policy::set_policy(state, id, policy).await?;
    }
    rec = crate::admin::quota::set_scoped_at_creation(state, rec, scoped_quota).await?;
    if span.is_some() && rec.span.is_none() {
        // The leader's join loop adds the matching clusters (clusters/span_join.rs).
        rec.span = span;
        rec.generation += 1;
        state.store.put_tenant(&rec).await?;
    }
    json_response(StatusCode::CREATED, &tenant_object(&rec))
}

/// Starts a tenant's deletion by the reconciler of its home cluster (refused while the tenant
/// is protected: `crate::lifecycle`).
async fn delete_tenant(state: &Arc<AppState>, id: &str) -> Result<Response<ResBody>, ServerError> {
    let rec = crate::lifecycle::start_deletion(state, id).await?;
    json_response(StatusCode::OK, &tenant_object(&rec))
}

/// Issued certificates, of one tenant with `?tenant=`.
async fn list_certificates(
    state: &AppState,
    query: Option<&str>,
) -> Result<Response<ResBody>, ServerError> {
    let tenant = query.and_then(|q| {
        form_pairs(q)
            .into_iter()
            .find(|(k, _)| k == "tenant")
            .map(|(_, v)| v)
    });
    let certs = state.store.list_certs(tenant.as_deref()).await?;
    let items = certs.iter().map(cert_object).collect();
    json_response(
        StatusCode::OK,
        &List::new(paddock_api::certificate::LIST_KIND, items),
    )
}

fn form_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter_map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

async fn issue_certificate(
    state: &Arc<AppState>,
    spec: IssueSpec,
) -> Result<IssuedCertificate, ServerError> {
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
        not_after: paddock_reconciler::lifecycle::rfc3339(issued.not_after),
        revoked: false,
        revoked_at: None,
    };
    // Recorded before it is handed out: a certificate paddock cannot revoke is never issued.
    state.store.record_cert(&record).await?;
    let mut obj = cert_object(&record);
    obj.status.certificate = Some(issued.cert_pem);
    obj.status.ca_certificate = Some(ca.cert_pem().to_string());
    obj.status.server = Some(state.config.public_url.clone());
    Ok(obj)
}

/// A tenant user asking about paddock.io: its own tenant record only.
pub async fn serve_tenant_self(
    state: &Arc<AppState>,
    tenant: &TenantId,
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    let path = req.uri().path().trim_end_matches('/');
    let own = format!("{BASE}/tenants/{}", tenant.as_str());
    if req.method() == Method::GET {
        match path {
            paddock_api::GROUP_PATH => {
                if let Some(doc) = discovery(path) {
                    return json_response(StatusCode::OK, &doc);
                }
            }
            BASE => {
                return json_response(
                    StatusCode::OK,
                    &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV, "resources": [
                        {"name": "tenants", "singularName": "tenant", "namespaced": false, "kind": paddock_api::tenant::KIND,
                         "verbs": ["get"], "shortNames": ["tn"]},
                        crate::admin::quota::tenant_discovery_resource()
                    ]}),
                );
            }
            _ => {}
        }
    }
    if req.method() == Method::GET {
        let segs: Vec<&str> = path
            .strip_prefix(BASE)
            .unwrap_or("")
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(answer) =
            crate::admin::quota::serve_tenant(state, tenant, &segs, wants_table(&req)).await
        {
            return json_response(StatusCode::OK, &answer?);
        }
    }
    if req.method() == Method::GET && path == own {
        let rec = state.cache.tenant(tenant.as_str()).ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{tenant}\" not found"))
        })?;
        return json_response(StatusCode::OK, &tenant_object(&rec));
    }
    Err(ServerError::Forbidden(
        "paddock: tenants may only read their own tenant record and quota (GET /apis/paddock.io/v1alpha1/tenants/<own id>, tenantquotas); the platform admin sets them".into(),
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
                    "responseKind": {"group": GROUP, "version": VERSION, "kind": paddock_api::tenant::KIND},
                    "verbs": ["get"]
                }, crate::admin::quota::tenant_aggregated_resource()]}]
            }));
        }
        _ => return None,
    }
    serde_json::to_vec(&v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_is_answered_as_before() {
        let mut rec = CertRecord {
            serial_hex: "0a1b".into(),
            tenant: None,
            user: "root".into(),
            groups: vec![],
            not_after: "2027-01-01T00:00:00Z".into(),
            revoked: false,
            revoked_at: None,
        };
        // As the `json!` this replaced wrote it.
        let before = |c: &CertRecord| {
            json!({
                "apiVersion": GV,
                "kind": paddock_api::certificate::KIND,
                "metadata": {"name": c.serial_hex},
                "spec": {"tenant": c.tenant.as_ref().map(|t| t.as_str().to_string()), "user": c.user, "groups": c.groups},
                "status": {"notAfter": c.not_after, "revoked": c.revoked, "revokedAt": c.revoked_at}
            })
            .to_string()
        };
        let now = |c: &CertRecord| serde_json::to_string(&cert_object(c)).unwrap_or_default();
        assert_eq!(now(&rec), before(&rec));
        rec.tenant = TenantId::parse("acme01").ok();
        rec.revoked = true;
        rec.revoked_at = Some("2026-06-01T00:00:00Z".into());
        assert_eq!(now(&rec), before(&rec));
    }
}
