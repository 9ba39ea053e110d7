//! Audit events of requests refused before their tenant is known — a client certificate
//! paddock's CA signed for a tenant that is gone, a revoked or expired one, a service-account
//! token of no tenant, no credential at all. They belong to no tenant, so they go to the
//! platform's audit stream, never to a tenant's (docs/audit.md "Refusals of unknown callers").
//! The event is kube-apiserver's for a failed authentication: an empty `user`, the 401, the
//! request as it was asked for; paddock adds how the caller presented itself.

use std::collections::BTreeMap;

use crate::observe::audit::{Attributes, Event, Finished, Level, event};

/// How an unknown caller presented itself (annotation `paddock.io/credential`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presented {
    /// A client certificate that passed the TLS handshake.
    ClientCertificate,
    /// A bearer token (a service-account token, for paddock).
    BearerToken,
    /// Nothing.
    None,
}

impl Presented {
    fn as_str(self) -> &'static str {
        match self {
            Presented::ClientCertificate => "client-certificate",
            Presented::BearerToken => "bearer-token",
            Presented::None => "none",
        }
    }
}

/// A request refused before its tenant was known.
#[derive(Debug, Clone, Default)]
pub struct Refused {
    /// The request as asked for: verb, object, URI, timings, code. Its tenant, user, groups
    /// and bodies are left out of the event (nobody was authenticated).
    pub request: Finished,
    /// The refusal's message (the `Status` the caller got).
    pub reason: String,
    /// The certificate's user and tenant claims, when one was presented: `CN=…,O=…` of what
    /// paddock read from it (never a token: a token is a credential).
    pub certificate: Option<String>,
}

/// The platform event of a refusal (level Metadata: no body is ever kept of an unknown
/// caller's request).
pub fn refusal_event(r: &Refused, presented: Presented) -> Event {
    let f = Finished {
        tenant: String::new(),
        attrs: Attributes {
            user: String::new(),
            groups: Vec::new(),
            ..r.request.attrs.clone()
        },
        request_object: None,
        response_object: None,
        ..r.request.clone()
    };
    let mut ev = event(Level::Metadata, &f);
    ev.user.extra = BTreeMap::new();
    ev.annotations.remove(crate::TENANT_LABEL);
    ev.annotations
        .insert("paddock.io/refusal".into(), r.reason.clone());
    ev.annotations
        .insert("paddock.io/credential".into(), presented.as_str().into());
    if let Some(c) = &r.certificate {
        ev.annotations
            .insert("paddock.io/client-certificate".into(), c.clone());
    }
    ev.response_status.reason = if r.request.code == 401 {
        "Unauthorized".into()
    } else {
        String::new()
    };
    ev
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_no_tenant_and_no_user() {
        let r = Refused {
            request: Finished {
                attrs: Attributes {
                    user: "alice".into(),
                    groups: vec!["dev".into()],
                    verb: "list".into(),
                    ..Attributes::default()
                },
                request_uri: "/api/v1/pods".into(),
                code: 401,
                ..Finished::default()
            },
            reason: "certificate of an unknown tenant".into(),
            certificate: Some("CN=alice,O=paddock:tenant:gone01".into()),
        };
        let ev = refusal_event(&r, Presented::ClientCertificate);
        let v = serde_json::to_value(&ev).unwrap_or_default();
        assert_eq!(v["level"], "Metadata");
        assert_eq!(v["user"]["username"], "");
        assert!(v["user"].get("groups").is_none() && v["user"].get("extra").is_none());
        assert!(v["annotations"].get(crate::TENANT_LABEL).is_none());
        assert_eq!(
            v["annotations"]["paddock.io/credential"],
            "client-certificate"
        );
        assert_eq!(
            v["annotations"]["paddock.io/refusal"],
            "certificate of an unknown tenant"
        );
        assert_eq!(v["responseStatus"]["code"], 401);
        assert_eq!(v["responseStatus"]["reason"], "Unauthorized");
        assert_eq!(v["verb"], "list");
    }
}
