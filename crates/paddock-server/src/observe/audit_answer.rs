//! The two audit records that need more than the answer's status (docs/audit.md):
//!
//! - **`responseObject` at level RequestResponse.** The answer streams to the tenant through
//!   the rewriters; for an event at this level the body is also copied, up to
//!   [`RESPONSE_OBJECT_MAX`] bytes, and the event is written when the body ends (or is dropped)
//!   — so it holds exactly what the tenant got, in its view. A larger answer, one that is not
//!   JSON (protobuf, a Table in YAML) or a watch or stream is recorded without it. Secrets'
//!   contents never get here (core lowers their level first).
//! - **Refusals of callers whose tenant is not known**: into the platform stream (its own
//!   file), never a tenant's.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Response, header};
use paddock_core::observe::audit::{Finished, Level, never_log_contents};
use paddock_core::observe::audit_platform::{Presented, Refused, refusal_event};
use paddock_pki::PeerCert;

use crate::observe::audit::{Audit, RequestInfo, attributes, audit_id_for, micro_time, prepare};
use paddock_core::identity::Caller;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::tap::{self, Tap};

/// Largest answer recorded as `responseObject` (bytes of the tenant's answer).
pub const RESPONSE_OBJECT_MAX: usize = 256 * 1024;

/// Records the answer of a tenant request: at once, or at the end of its body when the
/// event keeps the response. Returns the answer to send.
pub fn audit_answer(
    audit: &Arc<Audit>,
    caller: &Caller,
    info: &RequestInfo,
    resp: Response<ResBody>,
) -> Response<ResBody> {
    let Some((level, f)) = prepare(audit, caller, info, resp.status().as_u16()) else {
        return resp;
    };
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    let keeps_response = level == Level::RequestResponse
        && json
        && !matches!(f.attrs.verb.as_str(), "watch" | "connect")
        && !never_log_contents(f.attrs.resource.as_ref());
    if !keeps_response {
        audit.record(level, &f);
        return resp;
    }
    let pending = Pending {
        audit: audit.clone(),
        level,
        event: f,
        start: info.start,
    };
    resp.map(|body| {
        tap::wrap(
            body,
            Teed {
                copy: BytesMut::new(),
                over: false,
                pending,
            },
        )
    })
}

/// An event waiting for the end of its answer.
struct Pending {
    audit: Arc<Audit>,
    level: Level,
    event: Finished,
    start: std::time::Instant,
}

impl Pending {
    fn record(mut self, body: Option<&[u8]>) {
        self.event.response_object = body.and_then(|b| serde_json::from_slice(b).ok());
        self.event.completed = micro_time(SystemTime::now());
        self.event.latency_ms = self.start.elapsed().as_secs_f64() * 1e3;
        self.audit.record(self.level, &self.event);
    }
}

/// The answer's body, copied (bounded) for its event, which is written when the body ends.
/// An answer not sent to its end (it failed, or the client went away) is recorded without it.
struct Teed {
    copy: BytesMut,
    over: bool,
    pending: Pending,
}

impl Tap for Teed {
    fn data(&mut self, d: &Bytes) {
        if self.over {
            return;
        }
        if self.copy.len() + d.len() > RESPONSE_OBJECT_MAX {
            self.over = true;
            self.copy = BytesMut::new();
        } else {
            self.copy.extend_from_slice(d);
        }
    }

    fn end(self, whole: bool) {
        let kept = whole && !self.over;
        self.pending.record(kept.then_some(&self.copy[..]));
    }
}

/// Records a request refused before its tenant was known, in the platform stream.
pub fn audit_refusal(
    audit: &Audit,
    peer: Option<&Arc<PeerCert>>,
    headers: &HeaderMap,
    info: &RequestInfo,
    code: u16,
    reason: &str,
) {
    let presented = if peer.is_some() {
        Presented::ClientCertificate
    } else if headers.contains_key(header::AUTHORIZATION) {
        Presented::BearerToken
    } else {
        Presented::None
    };
    let request_uri = match &info.query {
        Some(q) => format!("{}?{q}", info.path),
        None => info.path.clone(),
    };
    let r = Refused {
        request: Finished {
            attrs: attributes("", &[], &info.method, &info.path, info.query.as_deref()),
            request_uri,
            user_agent: info.user_agent.clone(),
            code,
            audit_id: audit_id_for("platform"),
            received: micro_time(info.received),
            completed: micro_time(SystemTime::now()),
            latency_ms: info.start.elapsed().as_secs_f64() * 1e3,
            ..Finished::default()
        },
        reason: reason.to_string(),
        certificate: peer.map(|p| {
            let mut s = format!("CN={}", p.user);
            for g in &p.groups {
                s.push_str(",O=");
                s.push_str(g);
            }
            if let Some(t) = &p.tenant {
                s.push_str(",OU=");
                s.push_str(t);
            }
            s
        }),
    };
    audit.record_platform(&refusal_event(&r, presented));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::config::AuditConfig;
    use crate::observe::audit::platform_log_path;
    use std::path::PathBuf;

    #[test]
    fn platform_log_sits_next_to_the_tenant_log() {
        let mut cfg = AuditConfig {
            log_path: Some("/var/log/paddock/audit.log".into()),
            ..AuditConfig::default()
        };
        assert_eq!(
            platform_log_path(&cfg),
            Some(PathBuf::from("/var/log/paddock/audit-platform.log"))
        );
        cfg.log_path = Some("audit".into());
        assert_eq!(
            platform_log_path(&cfg),
            Some(PathBuf::from("audit-platform"))
        );
        cfg.log_path = Some("-".into());
        assert_eq!(platform_log_path(&cfg), Some(PathBuf::from("-")));
        cfg.platform_log_path = Some("/x/p.log".into());
        assert_eq!(platform_log_path(&cfg), Some(PathBuf::from("/x/p.log")));
        cfg.platform_log_path = None;
        cfg.log_path = None;
        assert_eq!(platform_log_path(&cfg), None);
    }
}
