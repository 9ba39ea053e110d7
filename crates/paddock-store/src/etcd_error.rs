//! How etcd's errors reach paddock: unreachable (503), refused (credentials, certificates),
//! or anything else; which failures are safe to try again; error chains without tonic's
//! generic wrappers.

use crate::StoreError;

/// `e: source: source ...` without repeating a message its source already says, and
/// without tonic's generic wrappers.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    chain_from(e.to_string(), e.source())
}

/// A gRPC status: its message, then its sources (its Display is a Debug dump).
pub(crate) fn status_chain(s: &etcd_client::Error) -> String {
    match s {
        etcd_client::Error::GRpcStatus(st) => {
            chain_from(st.message().to_string(), std::error::Error::source(st))
        }
        other => error_chain(other),
    }
}

pub(crate) fn chain_from(
    first: String,
    mut cur: Option<&(dyn std::error::Error + 'static)>,
) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !first.is_empty() {
        parts.push(first);
    }
    while let Some(err) = cur {
        let msg = err.to_string();
        if !msg.is_empty() && msg != "transport error" && !parts.iter().any(|p| p.contains(&msg)) {
            parts.push(msg);
        }
        cur = err.source();
    }
    parts.join(": ")
}

pub(crate) fn unavailable(endpoints: &str, detail: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("etcd at {endpoints} is unreachable: {detail}"))
}

pub(crate) fn map_error(endpoints: &str, e: etcd_client::Error) -> StoreError {
    use etcd_client::Error as E;
    match e {
        E::GRpcStatus(ref s) => match s.code() as i32 {
            GRPC_CANCELLED | GRPC_UNKNOWN | GRPC_DEADLINE_EXCEEDED | GRPC_UNAVAILABLE => {
                unavailable(endpoints, status_chain(&e))
            }
            _ if is_auth_message(s.message()) => StoreError::Refused(format!(
                "etcd at {endpoints} refused paddock's credentials: {}",
                status_chain(&e)
            )),
            _ => StoreError::Backend(format!("etcd at {endpoints}: {}", status_chain(&e))),
        },
        E::TransportError(_) | E::IoError(_) => unavailable(endpoints, error_chain(&e)),
        other => StoreError::Backend(format!("etcd at {endpoints}: {}", error_chain(&other))),
    }
}

/// A request that failed before it reached etcd (connecting to the member failed), so trying
/// it again cannot apply it twice.
pub(crate) fn never_sent(e: &etcd_client::Error) -> bool {
    let unavailable = match e {
        etcd_client::Error::GRpcStatus(s) => s.code() as i32 == GRPC_UNAVAILABLE,
        etcd_client::Error::TransportError(_) => true,
        _ => false,
    };
    unavailable && {
        let chain = status_chain(e).to_ascii_lowercase();
        chain.contains("connect") || chain.contains("connection refused")
    }
}

/// etcd's answer to an expired or unknown auth token.
pub(crate) fn token_expired(e: &etcd_client::Error) -> bool {
    matches!(e, etcd_client::Error::GRpcStatus(s) if s.message().contains("invalid auth token"))
}

/// etcd's messages for authentication and authorization failures.
pub(crate) fn is_auth_message(msg: &str) -> bool {
    [
        "authentication failed",
        "permission denied",
        "user name is empty",
        "invalid auth token",
        "authentication is not enabled",
        "user name not found",
    ]
    .iter()
    .any(|m| msg.contains(m))
}

/// gRPC status codes (tonic is not a direct dependency, so match on the numeric code).
pub(crate) const GRPC_CANCELLED: i32 = 1;
pub(crate) const GRPC_UNKNOWN: i32 = 2;
pub(crate) const GRPC_DEADLINE_EXCEEDED: i32 = 4;
pub(crate) const GRPC_UNAVAILABLE: i32 = 14;
