//! Free text (Status messages, Table cells, events' messages) and `metav1.Status` bodies.

use serde_json::Value;

use crate::catalog::context::TenantContext;
use crate::identity::names::name_down;
use crate::tenant::{TENANT_ID_LEN, looks_tenant_prefixed};

/// A `metav1.Status` (error bodies, watch ERROR events) in place: message, details.name /
/// group / causes. Names of the tenant lose their prefix (CRD names `<plural>.<tid>-<g>` too);
/// other tenants' names and groups are scrubbed by `text_down`.
///
/// One function for objects and responses: the response side once took any name it could not
/// strip as text and left a foreign-looking group through; the object side did not scrub
/// foreign groups. This keeps the stricter of each.
pub fn status_down(ctx: &TenantContext, v: &mut Value) {
    let t = &ctx.tenant;
    let Some(o) = v.as_object_mut() else { return };
    if let Some(Value::String(m)) = o.get_mut("message") {
        *m = text_down(ctx, m);
    }
    let Some(Value::Object(d)) = o.get_mut("details") else {
        return;
    };
    let group = d
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let kind = d
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if let Some(Value::String(n)) = d.get_mut("name") {
        let info = ctx.catalog.resolve_upstream_any_version(t, &group, &kind);
        let mapped = info
            .as_ref()
            .filter(|i| i.prefixes_name())
            .and_then(|i| name_down(t, i, n));
        *n = match mapped {
            Some(m) => m,
            // Namespaced objects' names are the tenant's own; anything else is scrubbed as text.
            None => text_down(ctx, n),
        };
    }
    if let Some(Value::String(g)) = d.get_mut("group") {
        if let Some(s) = t.strip(g) {
            *g = s.to_owned();
        } else if looks_tenant_prefixed(g) {
            *g = text_down(ctx, g);
        }
    }
    if let Some(Value::Array(causes)) = d.get_mut("causes") {
        for c in causes {
            for f in ["message", "field"] {
                if let Some(Value::String(s)) = c.get_mut(f) {
                    *s = text_down(ctx, s);
                }
            }
        }
    }
}

// Free text

/// What replaces another tenant's name in free text.
pub const REDACTED: &str = "<redacted>";

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
}

/// Free text (Status messages, Table cells, events' messages): replace "<tid>-x" by "x" and
/// the tenant's user prefix `paddock:<tid>:` by nothing; scrub other tenants' prefixed names.
///
/// A name starts where the previous byte cannot be part of a DNS label (start, space, quote,
/// `/`, `.`, `:` ...). Any other token of the tenant form `[a-z][a-z0-9]{5}-x` is replaced by
/// `<redacted>` up to the end of the name: paddock cannot tell another tenant's `barbar-db`
/// from a platform object `worker-1`, and a leak is worse than a redacted node name.
pub fn text_down(ctx: &TenantContext, s: &str) -> String {
    text_down_with(ctx, s, &|id| ctx.catalog.is_known_tenant(id))
}

/// [`text_down`] where `is_tenant(id)` says whether a 6-character id belongs to some tenant,
/// so that platform names of the same shape (`worker-1`) can be left alone.
pub fn text_down_with(ctx: &TenantContext, s: &str, is_tenant: &dyn Fn(&str) -> bool) -> String {
    // Nothing below can apply without a `-` (every upstream name rewritten here has one after
    // its id) or an identity prefix: most Table cells ("Running", "1/1", "5m").
    if !s.contains('-') && !s.contains("paddock:") {
        return s.to_owned();
    }
    let t = ctx.tenant.as_str();
    let user_prefix = format!("paddock:{t}:");
    // Shadow identities (subjects of ClusterRoleBindings) read as the identity they shadow.
    let s = s.replace(
        &format!("{}{t}:", crate::identity::CLUSTER_SHADOW_PREFIX),
        "",
    );
    let s = s.replace(&user_prefix, "");
    // Any identity still of paddock's form is not the tenant's (another tenant's user, a
    // marker group): redacted up to the end of the word.
    let s = if s.contains("paddock:") {
        redact_identities(&s)
    } else {
        s
    };
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        let boundary = i == 0 || !is_name_byte(b[i - 1]);
        if boundary
            && b[i].is_ascii_lowercase()
            && i + TENANT_ID_LEN + 1 < b.len()
            && b[i + TENANT_ID_LEN] == b'-'
            && b[i..i + TENANT_ID_LEN]
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && (is_name_byte(b[i + TENANT_ID_LEN + 1]) || b[i + TENANT_ID_LEN + 1] == b'.')
        {
            let id = &s[i..i + TENANT_ID_LEN];
            if id == t {
                out.push_str(&s[last..i]);
                i += TENANT_ID_LEN + 1;
                last = i;
                continue;
            }
            if is_tenant(id) {
                out.push_str(&s[last..i]);
                out.push_str(REDACTED);
                let mut j = i + TENANT_ID_LEN + 1;
                while j < b.len() && (is_name_byte(b[j]) || b[j] == b'.') {
                    j += 1;
                }
                i = j;
                last = j;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&s[last..]);
    out
}

fn redact_identities(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("paddock:") {
        out.push_str(&rest[..i]);
        out.push_str(REDACTED);
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ')' | ']' | '}'))
            .unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}
