//! Label selectors that select namespaces (pod affinity, NetworkPolicy peers, webhooks) or
//! ClusterRoles (aggregation): confined to the tenant by an added `paddock.io/tenant` term.

use serde_json::{Value, json};

use super::refs::{name_or_redacted, namespace_up};
use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::tenant::{NAMESPACE_NAME_LABEL, TENANT_LABEL, TenantId};

fn tenant_expr(t: &TenantId) -> Value {
    json!({"key": TENANT_LABEL, "operator": "In", "values": [t.as_str()]})
}

/// The tenant label may not appear; with `map_ns_name`, `kubernetes.io/metadata.name` values
/// are mapped; the selection is ANDed with `paddock.io/tenant In [<tid>]`, so that `{}` means
/// "all of the tenant's namespaces", not all of the cluster's.
pub(crate) fn selector_up(
    ctx: &TenantContext,
    sel: &mut Value,
    map_ns_name: bool,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    let Value::Object(m) = sel else { return Ok(()) };
    let reserved =
        || TranslateError::forbidden(format!("selectors on label {TENANT_LABEL} are not allowed"));
    if let Some(Value::Object(ml)) = m.get_mut("matchLabels") {
        if ml.contains_key(TENANT_LABEL) {
            return Err(reserved());
        }
        if map_ns_name && let Some(Value::String(v)) = ml.get_mut(NAMESPACE_NAME_LABEL) {
            *v = namespace_up(t, v)?;
        }
    }
    if let Some(Value::Array(exprs)) = m.get_mut("matchExpressions") {
        for e in exprs.iter_mut() {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            if key == TENANT_LABEL {
                return Err(reserved());
            }
            if map_ns_name
                && key == NAMESPACE_NAME_LABEL
                && let Some(Value::Array(vals)) = e.get_mut("values")
            {
                for v in vals {
                    if let Value::String(s) = v {
                        *s = namespace_up(t, s)?;
                    }
                }
            }
        }
    }
    match m.get_mut("matchExpressions") {
        Some(Value::Array(exprs)) => exprs.push(tenant_expr(t)),
        _ => {
            m.insert(
                "matchExpressions".into(),
                Value::Array(vec![tenant_expr(t)]),
            );
        }
    }
    Ok(())
}

/// Inverse of [`selector_up`]: the tenant term removed, namespace names un-mapped.
pub(crate) fn selector_down(ctx: &TenantContext, sel: &mut Value, map_ns_name: bool) {
    let Value::Object(m) = sel else { return };
    let mut emptied = false;
    // The tenant term (and any other term on the tenant label, which only the platform can
    // have written) is paddock's, not the tenant's.
    if let Some(Value::Object(ml)) = m.get_mut("matchLabels") {
        ml.shift_remove(TENANT_LABEL);
    }
    if let Some(Value::Array(exprs)) = m.get_mut("matchExpressions") {
        let before = exprs.len();
        exprs.retain(|e| e.get("key").and_then(Value::as_str) != Some(TENANT_LABEL));
        emptied = exprs.is_empty() && before > 0;
        if map_ns_name {
            for e in exprs.iter_mut() {
                if e.get("key").and_then(Value::as_str) == Some(NAMESPACE_NAME_LABEL)
                    && let Some(Value::Array(vals)) = e.get_mut("values")
                {
                    for v in vals {
                        if let Value::String(s) = v {
                            name_or_redacted(ctx, s);
                        }
                    }
                }
            }
        }
    }
    if emptied {
        m.shift_remove("matchExpressions");
    }
    if map_ns_name
        && let Some(Value::String(v)) = m
            .get_mut("matchLabels")
            .and_then(|l| l.get_mut(NAMESPACE_NAME_LABEL))
    {
        name_or_redacted(ctx, v);
    }
}
