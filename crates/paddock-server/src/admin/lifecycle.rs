//! The admin API of a tenant's suspension, deletion protection and TTL (paddock-api
//! `lifecycle`; the actions are `crate::lifecycle`): `POST|DELETE tenants/<id>/suspension`,
//! `POST|DELETE tenants/<id>/sleep`, `PATCH tenants/<id>/protection`, the
//! `deletionProtection` and `ttl` of a new tenant, and
//! what a `Tenant` answer says about them (with the TTL's warnings).

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use paddock_api::duration::{format_duration, parse_duration};
use paddock_api::lifecycle::{PROTECTION, ProtectionPatch, SLEEP, SUSPENSION, SuspendRequest};
use paddock_api::tenant::Tenant;
use paddock_core::identity::Caller;
use paddock_core::lifecycle::expiry::{Verdict, verdict};
use paddock_store::TenantRecord;
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;
use serde_json::Value;

use crate::admin::answer::json_response;
use crate::body::ReqBody;
use crate::lifecycle::Protection;
use crate::state::AppState;

/// `tenants/<id>/suspension` and `tenants/<id>/protection`.
pub async fn serve(
    state: &Arc<AppState>,
    caller: &Caller,
    method: Method,
    id: &str,
    sub: &str,
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    let rec = match (method, sub) {
        (Method::POST, SUSPENSION) => {
            let asked: SuspendRequest = serde_json::from_value(super::json_body(req).await?)
                .map_err(|e| ServerError::BadRequest(format!("the suspension request: {e}")))?;
            tracing::info!(
                admin = caller.user(),
                tenant = id,
                stop_workloads = asked.stop_workloads,
                "tenant suspension asked"
            );
            crate::lifecycle::suspend(state, id, asked.stop_workloads).await?
        }
        (Method::DELETE, SUSPENSION) => {
            tracing::info!(admin = caller.user(), tenant = id, "tenant resume asked");
            crate::lifecycle::resume(state, id).await?
        }
        (Method::PATCH, PROTECTION) => {
            let patch: ProtectionPatch = serde_json::from_value(super::json_body(req).await?)
                .map_err(|e| ServerError::BadRequest(format!("the protection patch: {e}")))?;
            let change = Protection {
                deletion_protection: patch.deletion_protection,
                ttl: patch.ttl.as_ref().map(ttl_seconds).transpose()?,
            };
            crate::lifecycle::protect(state, id, change).await?
        }
        (m @ (Method::POST | Method::DELETE), SLEEP) => {
            let asleep = m == Method::POST;
            tracing::info!(
                admin = caller.user(),
                tenant = id,
                asleep,
                "tenant sleep or wake asked"
            );
            crate::lifecycle::sleep::ask(state, id, asleep).await?
        }
        (m, _) => {
            return Err(ServerError::NotFound(format!(
                "{m} tenants/{id}/{sub} is not part of the admin API (POST or DELETE {SUSPENSION} and {SLEEP}, PATCH {PROTECTION})"
            )));
        }
    };
    json_response(StatusCode::OK, &super::tenant_object(&rec))
}

/// A TTL as written (`"30m"`), or `null` to remove it: seconds, or `None`.
fn ttl_seconds(v: &Value) -> Result<Option<u64>, ServerError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => parse_duration(s)
            .map(|d| Some(d.as_secs().max(1)))
            .map_err(|e| ServerError::BadRequest(format!("ttl: {e}"))),
        other => Err(ServerError::BadRequest(format!(
            "ttl: expected a duration such as \"30m\" or null, got {other}"
        ))),
    }
}

/// `POST tenants`: the tenant is created as before, then given the deletion protection and
/// TTL its `spec` asks for (both checked before anything is created).
pub async fn create(state: &Arc<AppState>, obj: Value) -> Result<Response<ResBody>, ServerError> {
    let spec = &obj["spec"];
    let deletion_protection = match &spec["deletionProtection"] {
        Value::Null => None,
        Value::Bool(b) => Some(*b),
        other => {
            return Err(ServerError::BadRequest(format!(
                "spec.deletionProtection: expected true or false, got {other}"
            )));
        }
    };
    let ttl = match &spec["ttl"] {
        Value::Null => None,
        v => ttl_seconds(v)
            .map_err(|e| ServerError::BadRequest(format!("spec.{e}")))?
            .map(Some),
    };
    let created = super::create_tenant(state, &obj).await?;
    let change = Protection {
        deletion_protection: deletion_protection.filter(|p| *p),
        ttl,
    };
    if change == Protection::default() {
        return Ok(created);
    }
    let id = obj["metadata"]["name"].as_str().unwrap_or_default();
    let rec = crate::lifecycle::protect(state, id, change).await?;
    json_response(StatusCode::CREATED, &super::tenant_object(&rec))
}

/// Fills in what a `Tenant` answer says about the record's suspension, deletion protection and
/// TTL, at `now` (seconds since the epoch): the TTL's time left and its warnings.
pub fn describe(t: &mut Tenant, r: &TenantRecord, now: i64) {
    t.spec.deletion_protection = Some(r.deletion_protection);
    t.spec.ttl = r.expiry.as_ref().map(|e| format_duration(e.ttl_seconds));
    let Some(status) = t.status.as_mut() else {
        return;
    };
    status.warnings.clear();
    status.suspension = r
        .suspension
        .as_ref()
        .map(|s| paddock_api::lifecycle::Suspension {
            since: s.since.clone(),
            stop_workloads: s.stop_workloads,
        });
    status.sleep = r
        .sleep
        .as_ref()
        .map(|s| paddock_api::lifecycle::SleepStatus {
            phase: format!("{:?}", s.phase),
            since: s.since.clone(),
        });
    let Some(e) = &r.expiry else {
        return;
    };
    let at = e.at_unix();
    status.expires = Some(e.at.clone());
    status.expires_in_seconds = Some(at.saturating_sub(now));
    if !r.phase.is_live() {
        return;
    }
    let id = r.id.as_str();
    let ttl = format_duration(e.ttl_seconds);
    let warning = match verdict(at, e.ttl_seconds, r.deletion_protection, now) {
        Verdict::Running { warn: false, .. } => return,
        Verdict::Running { left, .. } if r.deletion_protection => format!(
            "tenant {id}: its TTL ({ttl}) runs out in {}, but deletion protection will keep it",
            format_duration(left)
        ),
        Verdict::Running { left, .. } => format!(
            "tenant {id} is deleted in {} (TTL {ttl})",
            format_duration(left)
        ),
        Verdict::Due => {
            format!("tenant {id}: its TTL ({ttl}) has run out: the leader is deleting it")
        }
        Verdict::Held { over } => format!(
            "tenant {id}: its TTL ({ttl}) ran out {} ago; not deleted: deletion protection is on (paddock tenant protect {id} --unprotect lets it go)",
            format_duration(over)
        ),
    };
    status.warnings.push(warning);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use paddock_core::TenantId;
    use paddock_store::{Expiry, Suspension, TenantPhase};

    fn described(r: &TenantRecord, now: i64) -> Tenant {
        let mut t = super::super::tenant_object(r);
        describe(&mut t, r, now);
        t
    }

    #[test]
    fn an_answer_tells_the_ttl_the_protection_and_the_suspension() {
        let mut r = TenantRecord::new(TenantId::parse("life01").unwrap(), "L");
        let t = described(&r, 0);
        assert_eq!(t.spec.deletion_protection, Some(false));
        assert_eq!(t.spec.ttl, None);
        let status = t.status.unwrap();
        assert!(status.expires.is_none() && status.warnings.is_empty());

        r.expiry = Some(Expiry::from_now(1_000, 7200));
        let quiet = described(&r, 1_000).status.unwrap();
        assert_eq!(quiet.expires_in_seconds, Some(7200));
        assert!(quiet.warnings.is_empty());
        let near = described(&r, 1_000 + 7200 - 1800).status.unwrap();
        assert_eq!(near.warnings, ["tenant life01 is deleted in 30m (TTL 2h)"]);

        r.deletion_protection = true;
        let held = described(&r, 1_000 + 7200 + 90).status.unwrap();
        assert_eq!(held.expires_in_seconds, Some(-90));
        assert!(
            held.warnings[0].contains("ran out 1m30s ago; not deleted: deletion protection is on"),
            "{:?}",
            held.warnings
        );

        r.sleep = Some(paddock_store::Sleep {
            since: "2026-01-01T00:00:00Z".into(),
            phase: paddock_store::SleepPhase::Asleep,
        });
        let asleep = described(&r, 0).status.and_then(|s| s.sleep);
        assert_eq!(asleep.map(|s| s.phase), Some("Asleep".to_string()));
        r.sleep = None;

        r.phase = TenantPhase::Suspended;
        r.suspension = Some(Suspension {
            since: "2026-01-01T00:00:00Z".into(),
            stop_workloads: true,
        });
        let t = described(&r, 0);
        assert_eq!(
            t.status.as_ref().map(|s| s.phase.as_str()),
            Some("Suspended")
        );
        assert_eq!(
            t.status
                .and_then(|s| s.suspension)
                .map(|s| s.stop_workloads),
            Some(true)
        );
    }

    #[test]
    fn a_ttl_is_a_duration_or_null() {
        assert_eq!(ttl_seconds(&Value::from("2h")).unwrap(), Some(7200));
        assert_eq!(ttl_seconds(&Value::Null).unwrap(), None);
        assert!(ttl_seconds(&Value::from("soon")).is_err());
        assert!(ttl_seconds(&Value::from(5)).is_err());
    }
}
