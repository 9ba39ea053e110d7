//! One counted request of the load: sent, timed, and recorded as a failure when it did not get
//! the answer expected.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use http::{Method, StatusCode};

use super::report::FailedRequest;
use super::{Shared, Spec};
use crate::http::Tls;

pub(super) fn fail(shared: &Shared, f: FailedRequest) {
    if std::env::var_os("PADDOCK_E2E_VERBOSE").is_some() {
        eprintln!(
            "  [load +{:.2}s] FAILED after {:?}: {} {}",
            f.at.as_secs_f64(),
            f.latency,
            f.what,
            f.body
        );
    }
    shared.failures.lock().push(f);
}

pub(super) fn note_latency(shared: &Shared, latency: Duration) {
    shared
        .max_latency_ms
        .fetch_max(latency.as_millis() as u64, Ordering::AcqRel);
}

/// Why a counted request did not succeed.
pub(super) enum Missed {
    /// An answer with another status.
    Status(u16),
    /// No answer.
    NoAnswer,
}

/// Who sends a counted request.
pub(super) struct Caller<'a> {
    pub(super) tls: &'a Tls,
    pub(super) shared: &'a Shared,
    pub(super) t0: Instant,
    pub(super) spec: &'a Spec,
}

/// One request with an expected status; counts it; returns the body when it matched.
pub(super) async fn call(
    c: &Caller<'_>,
    method: Method,
    path: &str,
    body: Option<(&str, Vec<u8>)>,
    want: StatusCode,
) -> Result<bytes::Bytes, Missed> {
    let (tls, shared, t0, spec) = (c.tls, c.shared, c.t0, c.spec);
    shared.requests.fetch_add(1, Ordering::AcqRel);
    let at = t0.elapsed();
    let started = Instant::now();
    let r = tls
        .send(method.clone(), path, body, spec.request_timeout)
        .await;
    let latency = started.elapsed();
    note_latency(shared, latency);
    match r {
        Ok((status, body)) if status == want => Ok(body),
        Ok((status, body)) => {
            fail(
                shared,
                FailedRequest {
                    at,
                    latency,
                    status: Some(status.as_u16()),
                    what: format!("{method} {path}: {status}"),
                    body: String::from_utf8_lossy(&body).into_owned(),
                },
            );
            Err(Missed::Status(status.as_u16()))
        }
        Err(e) => {
            fail(
                shared,
                FailedRequest {
                    at,
                    latency,
                    status: None,
                    what: format!("{method} {path}: {e}"),
                    body: String::new(),
                },
            );
            Err(Missed::NoAnswer)
        }
    }
}
