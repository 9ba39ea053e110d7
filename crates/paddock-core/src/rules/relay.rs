//! A webhook configuration's `clientConfig`, both ways, when paddock relays the tenant's
//! webhooks (the encoding: `catalog::webhook_relay`; docs/webhooks.md).

use serde_json::{Map, Value};

use crate::catalog::context::TenantContext;
use crate::catalog::webhook_relay::{
    MAX_CA_BUNDLE, RELAY_PATH, RelayTarget, WebhookRelay, b64_decode, paddock_client_config,
};
use crate::error::TranslateError;
use crate::rules::modes::UpMode;
use crate::tenant::TenantId;

/// Tenant view -> upstream: a webhook configuration's `clientConfig` becomes the relay's.
/// Written whole: a patch that changes part of it (the CA alone) cannot be carried, since the
/// stored path holds every part; it is refused with a message that says so.
pub(crate) fn client_config_up(
    relay: &WebhookRelay,
    t: &TenantId,
    cc: &mut Value,
    mode: UpMode,
) -> Result<(), TranslateError> {
    let Value::Object(m) = cc else { return Ok(()) };
    if m.get("url").is_some_and(|u| !u.is_null()) {
        return Err(TranslateError::forbidden(
            "webhook clientConfig.url is not allowed in this cluster: use clientConfig.service",
        ));
    }
    let whole = "a webhook clientConfig is written whole in this cluster (service with its namespace and name, and caBundle): paddock relays the apiserver's calls to the tenant's webhook";
    let Some(Value::Object(service)) = m.get("service") else {
        return Err(TranslateError::invalid(whole));
    };
    let field = |k: &str| service.get(k).and_then(Value::as_str).map(str::to_owned);
    let (Some(namespace), Some(name)) = (field("namespace"), field("name")) else {
        return Err(TranslateError::invalid(whole));
    };
    if mode != UpMode::Full && !m.contains_key("caBundle") {
        return Err(TranslateError::invalid(whole));
    }
    super::refs::namespace_up(t, &namespace)?;
    let port = match service.get("port") {
        None | Some(Value::Null) => 443,
        Some(p) => p
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| {
                TranslateError::invalid(format!(
                    "clientConfig.service.port: Invalid value: {p}: port is not valid"
                ))
            })?,
    };
    let ca_bundle = match m.get("caBundle") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => b64_decode(s)
            .ok_or_else(|| TranslateError::bad("clientConfig.caBundle: illegal base64 data"))?,
        Some(_) => {
            return Err(TranslateError::bad(
                "clientConfig.caBundle must be a string",
            ));
        }
    };
    if ca_bundle.len() > MAX_CA_BUNDLE {
        return Err(TranslateError::invalid(format!(
            "clientConfig.caBundle: {} bytes; this cluster relays webhooks with a caBundle of at most {MAX_CA_BUNDLE} bytes",
            ca_bundle.len()
        )));
    }
    let target = RelayTarget {
        tenant: t.clone(),
        namespace,
        name,
        port,
        path: field("path"),
        ca_bundle,
    };
    let Value::Object(mut up) = paddock_client_config(&relay.url, &target.to_path(), &relay.ca_pem)
    else {
        return Err(TranslateError::Internal("relay client config".into()));
    };
    // A merge patch merges into the stored config: the other form, if stored, must go.
    if mode != UpMode::Full {
        for k in ["url", "service"] {
            up.entry(k).or_insert(Value::Null);
        }
    }
    *m = up;
    Ok(())
}

/// Upstream -> tenant view: a relayed client config reads back as the tenant wrote it (false:
/// not a relayed one, stored before the relay existed). Another tenant's target (which no
/// upstream object of this tenant carries) shows its namespace redacted.
pub(crate) fn client_config_down(ctx: &TenantContext, cc: &mut Value) -> bool {
    let path = cc
        .get("url")
        .and_then(Value::as_str)
        .or_else(|| cc.get("service")?.get("path")?.as_str());
    let Some(target) = path
        .filter(|p| p.contains(RELAY_PATH))
        .and_then(|p| RelayTarget::parse(p).ok())
    else {
        return false;
    };
    let mut m: Map<String, Value> = target.tenant_client_config();
    if target.tenant != ctx.tenant
        && let Some(Value::Object(svc)) = m.get_mut("service")
    {
        svc.insert(
            "namespace".into(),
            Value::String(super::REDACTED.to_owned()),
        );
    }
    *cc = Value::Object(m);
    true
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
