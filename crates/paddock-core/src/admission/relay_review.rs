//! The AdmissionReview on its way through paddock's relay to a tenant's own webhook
//! (docs/webhooks.md): the apiserver's review into the tenant's names, and the webhook's answer
//! back, its JSON patch translated as a tenant's `kubectl patch --type=json` is. The encoding
//! of the relay's path is `catalog::webhook_relay`; the I/O is paddock-server's
//! `webhook::relay`.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::rules::modes::Disposition;
use crate::rules::object::object_down;
use crate::tenant::tenant_of;
use crate::wire::patch::translate_json_patch;

/// What the relay does with a review the apiserver sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum Relayed {
    /// The review in the tenant's names: sent to the tenant's webhook.
    Review(Value),
    /// The object is not the tenant's (a namespace, group or object of another tenant or of
    /// the platform): the tenant's webhook is not called and the answer is [`allowed`]. The
    /// configuration's rules are confined to the tenant (rules/rbac.rs `webhook_rule_up`), so
    /// this is a second line, not the first.
    NotTheTenants,
}

/// The apiserver's review (upstream names) -> the review the tenant's webhook gets.
pub fn review_down(ctx: &TenantContext, review: &Value) -> Result<Relayed, TranslateError> {
    let bad = |m: &str| TranslateError::bad(format!("AdmissionReview: {m}"));
    if review.get("kind").and_then(Value::as_str) != Some("AdmissionReview") {
        return Err(bad("kind must be AdmissionReview"));
    }
    let mut out = review.clone();
    let Some(Value::Object(req)) = out.get_mut("request") else {
        return Err(bad("no request"));
    };
    for key in ["kind", "resource", "requestKind", "requestResource"] {
        if let Some(Value::String(g)) = req.get_mut(key).and_then(|v| v.get_mut("group")) {
            match group_down(ctx, g) {
                Some(d) => *g = d,
                None => return Ok(Relayed::NotTheTenants),
            }
        }
    }
    let resource = req.get("resource").cloned().unwrap_or(Value::Null);
    let namespaces = resource["group"].as_str().unwrap_or_default().is_empty()
        && resource["resource"] == "namespaces";
    if let Some(Value::String(ns)) = req.get_mut("namespace")
        && !ns.is_empty()
    {
        match ctx.tenant.strip(ns) {
            Some(s) => *ns = s.to_owned(),
            None => return Ok(Relayed::NotTheTenants),
        }
    } else if !namespaces {
        // A cluster-scoped object: the configuration's rules never send one but namespaces.
        return Ok(Relayed::NotTheTenants);
    }
    if namespaces && let Some(Value::String(name)) = req.get_mut("name") {
        match ctx.tenant.strip(name) {
            Some(s) => *name = s.to_owned(),
            None => return Ok(Relayed::NotTheTenants),
        }
    }
    for key in ["object", "oldObject"] {
        if let Some(o) = req.get_mut(key).filter(|o| o.is_object())
            && object_down(ctx, o)? == Disposition::Drop
        {
            return Ok(Relayed::NotTheTenants);
        }
    }
    if let Some(ui) = req.get_mut("userInfo") {
        crate::rules::reviews::user_info_down(&ctx.tenant, ui);
    }
    Ok(Relayed::Review(out))
}

/// A tenant CRD group loses its prefix; another tenant's is not the tenant's (None).
fn group_down(ctx: &TenantContext, g: &str) -> Option<String> {
    if let Some(s) = ctx.tenant.strip(g) {
        return Some(s.to_owned());
    }
    match tenant_of(g) {
        Some(id) if ctx.catalog.is_known_tenant(id) => None,
        _ => Some(g.to_owned()),
    }
}

/// The answer for a review paddock decides itself: allowed, nothing changed.
pub fn allowed(review: &Value) -> Value {
    json!({
        "apiVersion": review.get("apiVersion").cloned().unwrap_or_else(|| json!("admission.k8s.io/v1")),
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"].clone(), "allowed": true},
    })
}

/// The tenant webhook's answer (to `sent`, the review in the tenant's names) -> the answer for
/// the apiserver. The webhook's own words (status, warnings) pass as they are; its JSON patch,
/// written against the tenant's view of the object, is translated as the tenant's own JSON
/// patches are.
pub fn answer_up(
    ctx: &TenantContext,
    sent: &Value,
    answer: &[u8],
) -> Result<Value, TranslateError> {
    let bad = |m: String| TranslateError::bad(format!("the webhook's answer: {m}"));
    let answer: Value =
        serde_json::from_slice(answer).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Some(Value::Object(resp)) = answer.get("response") else {
        return Err(bad("no response".into()));
    };
    let mut resp = resp.clone();
    let uid = &sent["request"]["uid"];
    if resp.get("uid") != Some(uid) {
        return Err(bad(format!(
            "expected response.uid={uid}, got {}",
            resp.get("uid").cloned().unwrap_or(Value::Null)
        )));
    }
    if let Some(Value::String(patch)) = resp.get("patch") {
        let b64 = base64::engine::general_purpose::STANDARD;
        let raw = b64
            .decode(patch)
            .map_err(|e| bad(format!("patch is not base64: {e}")))?;
        let req = &sent["request"];
        let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let r = &req["resource"];
        let info = ctx
            .catalog
            .resolve(
                &ctx.tenant,
                &s(&r["group"]),
                &s(&r["version"]),
                &s(&r["resource"]),
            )
            .ok_or_else(|| bad(format!("patch for an unknown resource {r}")))?;
        let ns = s(&req["namespace"]);
        let up = translate_json_patch(
            ctx,
            Some(&info),
            Some(ns.as_str()).filter(|n| !n.is_empty()),
            &raw,
        )?;
        resp.insert("patch".into(), Value::String(b64.encode(up)));
    }
    Ok(json!({
        "apiVersion": sent.get("apiVersion").cloned().unwrap_or_else(|| json!("admission.k8s.io/v1")),
        "kind": "AdmissionReview",
        "response": resp,
    }))
}

#[cfg(test)]
#[path = "relay_review_tests.rs"]
mod tests;
