//! The admin API of clusters (`clusters.paddock.io/v1alpha1`, platform admins only) and the
//! placement of a new tenant (docs/clusters.md).
//!
//! The objects are paddock-api's `cluster` module: a `ClusterRequest` posted (`spec.server`,
//! `spec.caData`, base64 PEM as in a kubeconfig, `spec.clientCertificateData` +
//! `spec.clientKeyData` or `spec.token`, `spec.capacity`), a `Cluster` answered (with
//! `status.reachable`, `status.ready`, `status.tenants`). The key and the token are
//! write-only: answers say only which kind of credential is held.

use std::sync::Arc;

use crate::body::ReqBody;
use base64::Engine;
use http::{Method, Request, Response, StatusCode};
use paddock_core::clusters::cluster::{DEFAULT_CLUSTER, Placement, place};
use paddock_store::ClusterRecord;
use serde_json::{Value, json};

use crate::admin::answer::json_response;
use crate::admin::request;
use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::res_body::ResBody;

use paddock_api::GROUP_VERSION as GV;
use paddock_api::List;
use paddock_api::cluster::{
    self as api, Cluster, ClusterMeta, ClusterRequestSpec, ClusterSpec, ClusterStatus,
};

/// Serves `clusters` and `clusters/<name>`.
pub async fn serve(
    state: &Arc<AppState>,
    method: &Method,
    segs: &[&str],
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    match (method, segs) {
        (&Method::GET, ["clusters"]) => list(state),
        (&Method::GET, ["clusters", name]) => get(state, name),
        (&Method::POST, ["clusters"]) => create(state, req).await,
        (&Method::DELETE, ["clusters", name]) => remove(state, name).await,
        (&Method::PATCH, ["clusters", name]) => relabel(state, name, req).await,
        (_, ["clusters"] | ["clusters", _]) => Err(ServerError::BadRequest(format!(
            "{method} is not supported on clusters (get, list, create, delete)"
        ))),
        _ => Err(ServerError::NotFound(format!(
            "{}: no such clusters resource",
            segs.join("/")
        ))),
    }
}

fn list(state: &Arc<AppState>) -> Result<Response<ResBody>, ServerError> {
    let mut items = vec![default_object(state)];
    items.extend(
        state
            .clusters
            .members()
            .values()
            .map(|m| object(state, &m.record, Some(&m.state))),
    );
    json_response(StatusCode::OK, &List::new(api::LIST_KIND, items))
}

fn get(state: &Arc<AppState>, name: &str) -> Result<Response<ResBody>, ServerError> {
    if name == DEFAULT_CLUSTER {
        return json_response(StatusCode::OK, &default_object(state));
    }
    let m = state.clusters.member(name).ok_or_else(|| {
        ServerError::NotFound(format!("clusters.paddock.io \"{name}\" not found"))
    })?;
    json_response(StatusCode::OK, &object(state, &m.record, Some(&m.state)))
}

fn default_object(state: &Arc<AppState>) -> Cluster {
    let rec = ClusterRecord {
        name: DEFAULT_CLUSTER.into(),
        server: state.upstream.server().to_string(),
        ..Default::default()
    };
    let mut o = object(state, &rec, Some(state));
    o.spec.credential = api::CREDENTIAL_UPSTREAM_KUBECONFIG.into();
    o
}

/// A cluster record as an object; never its key or token.
fn object(state: &Arc<AppState>, rec: &ClusterRecord, member: Option<&AppState>) -> Cluster {
    let credential = match (&rec.client_cert_pem, &rec.token) {
        (Some(_), _) => api::CREDENTIAL_CLIENT_CERTIFICATE,
        (None, Some(_)) => api::CREDENTIAL_TOKEN,
        (None, None) => api::CREDENTIAL_NONE,
    };
    let tenants = state
        .cache
        .tenants()
        .iter()
        .filter(|t| t.lives_on(&rec.name))
        .count();
    let (reachable, ready) = member.map_or((false, false), |s| {
        let reachable = s.health.is_healthy();
        let ready = reachable
            && s.bootstrapped.load(std::sync::atomic::Ordering::Acquire)
            && s.catalogs.is_synced();
        (reachable, ready)
    });
    Cluster {
        api_version: GV.into(),
        kind: api::KIND.into(),
        metadata: ClusterMeta {
            name: Some(rec.name.clone()),
            labels: rec.labels.clone(),
            creation_timestamp: Some(rec.created.clone()),
        },
        spec: ClusterSpec {
            server: rec.server.clone(),
            capacity: rec.capacity,
            credential: credential.into(),
            admission_webhook: paddock_reconciler::provision::admission_url().is_some()
                && (rec.name == DEFAULT_CLUSTER || rec.admission_client_ca_pem.is_some()),
        },
        status: ClusterStatus {
            reachable,
            ready,
            tenants: u64::try_from(tenants).unwrap_or(u64::MAX),
        },
    }
}

/// `spec.<field>`: base64 of a PEM (as in a kubeconfig), decoded and checked to be text.
fn pem_field(value: Option<&str>, field: &str) -> Result<Option<String>, ServerError> {
    let Some(text) = value else {
        return Ok(None);
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| ServerError::BadRequest(format!("spec.{field} is not base64: {e}")))?;
    let pem = String::from_utf8(bytes)
        .map_err(|_| ServerError::BadRequest(format!("spec.{field} is not a PEM text")))?;
    Ok(Some(pem))
}

/// The record a `Cluster` object asks for; a missing or malformed field is a 400 naming it.
fn parse_record(obj: &Value) -> Result<ClusterRecord, ServerError> {
    let known = ClusterRequestSpec::FIELDS;
    if let Some(unknown) = obj["spec"]
        .as_object()
        .and_then(|o| request::unknown_field(o, &known))
    {
        return Err(ServerError::BadRequest(format!(
            "spec.{unknown}: unknown field (known: {})",
            known.join(", ")
        )));
    }
    let meta: ClusterMeta = request::part(&obj["metadata"], "metadata")?;
    let spec: ClusterRequestSpec = request::part(&obj["spec"], "spec")?;
    let name = meta.name.ok_or_else(|| {
        ServerError::BadRequest("metadata.name (the cluster name) is required".into())
    })?;
    paddock_core::clusters::cluster::check_cluster_name(&name)
        .map_err(|e| ServerError::BadRequest(e.to_string()))?;
    for (k, v) in &meta.labels {
        paddock_core::clusters::cluster::check_label(k, v)
            .map_err(|e| ServerError::BadRequest(e.to_string()))?;
    }
    if !spec.server.starts_with("https://") {
        return Err(ServerError::BadRequest(
            "spec.server must be the apiserver's https:// URL".into(),
        ));
    }
    let rec = ClusterRecord {
        name,
        server: spec.server.trim_end_matches('/').to_string(),
        ca_pem: pem_field(spec.ca_data.as_deref(), "caData")?.ok_or_else(|| {
            ServerError::BadRequest(
                "spec.caData is required: paddock never talks to an unverified upstream".into(),
            )
        })?,
        client_cert_pem: pem_field(
            spec.client_certificate_data.as_deref(),
            "clientCertificateData",
        )?,
        client_key_pem: pem_field(spec.client_key_data.as_deref(), "clientKeyData")?,
        token: spec.token,
        labels: meta.labels,
        capacity: spec.capacity,
        admission_client_ca_pem: pem_field(
            spec.admission_client_ca_data.as_deref(),
            "admissionClientCAData",
        )?,
        created: paddock_store::now_rfc3339(),
    };
    let has_cert = rec.client_cert_pem.is_some() && rec.client_key_pem.is_some();
    if rec.client_cert_pem.is_some() != rec.client_key_pem.is_some()
        || (!has_cert && rec.token.is_none())
    {
        return Err(ServerError::BadRequest(
            "a credential is required: spec.clientCertificateData with spec.clientKeyData, or spec.token".into(),
        ));
    }
    Ok(rec)
}

async fn create(
    state: &Arc<AppState>,
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    let body = collect_limited(req.into_body(), 1 << 20).await?;
    let obj: Value = serde_json::from_slice(&body)
        .map_err(|e| ServerError::BadRequest(format!("the request body is not valid JSON: {e}")))?;
    let rec = parse_record(&obj)?;
    if rec.name == DEFAULT_CLUSTER {
        return Err(ServerError::Conflict(format!(
            "clusters.paddock.io \"{DEFAULT_CLUSTER}\" already exists: it is the configured upstream"
        )));
    }
    // The credential must make a TLS client before anything is stored.
    paddock_upstream::upstream::Upstream::new(
        member::credential(&rec),
        state.config.upstream_timeout,
    )
    .map_err(|e| ServerError::BadRequest(format!("the cluster's credential is unusable: {e}")))?;
    state
        .store
        .create_cluster(&rec)
        .await
        .map_err(|e| match e {
            paddock_store::StoreError::AlreadyExists(_) => ServerError::Conflict(format!(
                "clusters.paddock.io \"{}\" already exists",
                rec.name
            )),
            e => e.into(),
        })?;
    crate::clusters::sync(state).await?;
    let member = state.clusters.member(&rec.name);
    json_response(
        StatusCode::CREATED,
        &object(state, &rec, member.as_ref().map(|m| m.state.as_ref())),
    )
}

use crate::clusters::member;

/// `PATCH clusters/<name>`: a JSON merge patch of `metadata.labels` (a `null` value removes
/// a label); nothing else of a registered cluster changes this way. Tenants joining by label
/// follow within one sync period (clusters/span_join.rs).
async fn relabel(
    state: &Arc<AppState>,
    name: &str,
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    if name == DEFAULT_CLUSTER {
        return Err(ServerError::BadRequest(
            "the default cluster is the configured upstream; it carries no labels".into(),
        ));
    }
    let body = collect_limited(req.into_body(), 1 << 16).await?;
    let patch: Value = serde_json::from_slice(&body)
        .map_err(|e| ServerError::BadRequest(format!("the request body is not valid JSON: {e}")))?;
    let labels = patch
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("metadata"))
        .and_then(Value::as_object)
        .filter(|m| m.len() == 1)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ServerError::BadRequest(
                "only metadata.labels can be patched: {\"metadata\": {\"labels\": {\"k\": \"v\", \"gone\": null}}}".into(),
            )
        })?;
    let mut rec = state
        .store
        .list_clusters()
        .await?
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| ServerError::NotFound(format!("clusters.paddock.io {name:?} not found")))?;
    for (k, v) in labels {
        match v {
            Value::Null => {
                rec.labels.remove(k);
            }
            Value::String(s) => {
                paddock_core::clusters::cluster::check_label(k, s)
                    .map_err(|e| ServerError::BadRequest(e.to_string()))?;
                rec.labels.insert(k.clone(), s.clone());
            }
            _ => {
                return Err(ServerError::BadRequest(format!(
                    "metadata.labels.{k}: a string, or null to remove it"
                )));
            }
        }
    }
    state.store.replace_cluster(&rec).await?;
    crate::clusters::sync(state).await?;
    let member = state.clusters.member(&rec.name);
    json_response(
        StatusCode::OK,
        &object(state, &rec, member.as_ref().map(|m| m.state.as_ref())),
    )
}

async fn remove(state: &Arc<AppState>, name: &str) -> Result<Response<ResBody>, ServerError> {
    if name == DEFAULT_CLUSTER {
        return Err(ServerError::Conflict(
            "the default cluster is the configured upstream; it cannot be removed".into(),
        ));
    }
    let holding: Vec<String> = state
        .cache
        .tenants()
        .iter()
        .filter(|t| t.lives_on(name))
        .map(|t| t.id.as_str().to_string())
        .collect();
    if !holding.is_empty() {
        return Err(ServerError::Conflict(format!(
            "cluster {name:?} still holds tenants ({}); delete them first",
            holding.join(", ")
        )));
    }
    state
        .store
        .delete_cluster(name)
        .await
        .map_err(|e| match e {
            paddock_store::StoreError::NotFound(_) => {
                ServerError::NotFound(format!("clusters.paddock.io \"{name}\" not found"))
            }
            e => e.into(),
        })?;
    crate::clusters::sync(state).await?;
    json_response(
        StatusCode::OK,
        &json!({"apiVersion": "v1", "kind": "Status", "status": "Success",
                "details": {"name": name, "group": paddock_api::GROUP, "kind": "clusters"}}),
    )
}

/// The reconcilers a tenant creation acts through, home first: an existing tenant's own
/// clusters (creation is idempotent, a repair); else the clusters placement chooses from
/// `spec.clusters` (a label selector or a list of names, several for a tenant spanning
/// clusters; absent: the least loaded).
pub async fn placement_for(
    state: &Arc<AppState>,
    id: &str,
    spec_clusters: &Value,
) -> Result<Vec<Arc<paddock_reconciler::Reconciler>>, ServerError> {
    if let Some(existing) = state.cache.tenant(id) {
        return existing
            .cluster_names()
            .iter()
            .map(|c| crate::clusters::reconciler_for(state, c))
            .collect();
    }
    let text = match spec_clusters {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                ServerError::BadRequest("spec.clusters: a list of cluster names".into())
            })?
            .join(","),
        _ => {
            return Err(ServerError::BadRequest(
                "spec.clusters: a label selector (env=prod) or a list of cluster names".into(),
            ));
        }
    };
    let placement = Placement::parse(&text)
        .map_err(|e| ServerError::BadRequest(format!("spec.clusters: {e}")))?;
    let chosen = place(&placement, &crate::clusters::loads(state)).map_err(|e| match e {
        paddock_core::clusters::cluster::ClusterError::Unknown(n) => ServerError::BadRequest(
            format!("spec.clusters: cluster {n:?} is not registered, or not ready"),
        ),
        e => ServerError::Conflict(format!("cannot place tenant {id}: {e}")),
    })?;
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = chosen.iter().find(|c| !seen.insert(c.as_str())) {
        return Err(ServerError::BadRequest(format!(
            "spec.clusters: cluster {dup:?} is named twice"
        )));
    }
    chosen
        .iter()
        .map(|c| crate::clusters::reconciler_for(state, c))
        .collect()
}

/// A new tenant's span selector (`spec.span`: `{"selector": "region=eu"}`); a bad selector or
/// another field is a 400.
pub fn span_of(
    v: &serde_json::Value,
) -> Result<Option<paddock_core::clusters::join::SpanJoin>, ServerError> {
    if v.is_null() {
        return Ok(None);
    }
    let selector = v
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("selector"))
        .and_then(|s| s.as_str())
        .ok_or_else(|| {
            ServerError::BadRequest(
                "spec.span: {\"selector\": \"<label selector>\"} (joined and draining are paddock's)".into(),
            )
        })?;
    paddock_core::clusters::join::SpanJoin::new(selector)
        .map(Some)
        .map_err(|e| ServerError::BadRequest(format!("spec.span.selector: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn good() -> Value {
        json!({"metadata": {"name": "east", "labels": {"env": "prod"}},
               "spec": {"server": "https://127.0.0.1:6443/", "caData": b64("-----BEGIN CERTIFICATE-----"),
                        "token": "t0ken", "capacity": 300}})
    }

    #[test]
    fn a_good_cluster_object_parses() {
        let r = parse_record(&good()).expect("a good object parses");
        assert_eq!(r.name, "east");
        assert_eq!(r.server, "https://127.0.0.1:6443");
        assert_eq!(r.capacity, Some(300));
        assert_eq!(r.token.as_deref(), Some("t0ken"));
        assert_eq!(r.labels.get("env").map(String::as_str), Some("prod"));
    }

    #[test]
    fn bad_cluster_objects_are_400s_naming_the_field() {
        let cases: [(&str, Value, &str); 9] = [
            ("name", json!("Bad_Name"), "not valid"),
            (
                "labels",
                json!({"env": "not a label"}),
                "label \"env\"=\"not a label\"",
            ),
            ("server", json!("http://127.0.0.1:6443"), "spec.server"),
            ("caData", Value::Null, "spec.caData is required"),
            ("caData", json!("%%%"), "spec.caData is not base64"),
            ("token", Value::Null, "a credential is required"),
            (
                "clientKeyData",
                json!(b64("KEY")),
                "a credential is required",
            ),
            ("capacity", json!(-1), "spec.capacity: "),
            ("kubeconfig", json!("x"), "spec.kubeconfig: unknown field"),
        ];
        for (field, value, want) in cases {
            let mut o = good();
            if field == "name" || field == "labels" {
                o["metadata"][field] = value;
            } else if field == "clientKeyData" {
                // A key without a certificate, and no token.
                o["spec"]["token"] = Value::Null;
                o["spec"][field] = value;
            } else {
                o["spec"][field] = value;
            }
            match parse_record(&o) {
                Err(ServerError::BadRequest(m)) => assert!(m.contains(want), "{field}: {m}"),
                other => panic!("{field}: {other:?}"),
            }
        }
    }
}
