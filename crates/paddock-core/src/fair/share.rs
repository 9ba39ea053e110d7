//! Fair share between tenants: the pure decisions behind paddock's per-tenant limits (which
//! budget a request charges, the token-bucket arithmetic, the LIST size cap, the wording of a
//! refusal). The server keeps the state (docs/fairshare.md); nothing here reads a clock: the
//! caller passes the time.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a request costs against a tenant's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestClass {
    /// GET, HEAD, a LIST: one token of the read budget, one in-flight slot.
    Read,
    /// Anything that may change state (POST, PUT, PATCH, DELETE): one token of the write
    /// budget, one in-flight slot.
    Write,
    /// A watch: one token of the read budget, one open-watch slot (not an in-flight slot: it
    /// is long-running, as in kube-apiserver's max-in-flight filter).
    Watch,
    /// exec, attach, port-forward, a followed log: one read token, no slot (long-running; the
    /// tenant's connection limit bounds them).
    LongRunning,
}

/// Classifies a request from its method, raw query and whether it asks for a protocol upgrade.
pub fn classify(method: &str, query: Option<&str>, upgrade: bool) -> RequestClass {
    let flag = |name: &str| {
        query.is_some_and(|q| {
            form_urlencoded::parse(q.as_bytes())
                .any(|(k, v)| k == name && (v == "true" || v == "1"))
        })
    };
    // An upgrade (HTTP/1.1) or an extended CONNECT (HTTP/2 websockets) is a stream.
    if upgrade || method == "CONNECT" {
        return RequestClass::LongRunning;
    }
    match method {
        "GET" | "HEAD" if flag("watch") => RequestClass::Watch,
        "GET" | "HEAD" if flag("follow") => RequestClass::LongRunning,
        "GET" | "HEAD" | "OPTIONS" => RequestClass::Read,
        _ => RequestClass::Write,
    }
}

/// How the upstream's API Priority and Fairness tells a tenant's requests apart
/// (docs/fairshare.md "API Priority and Fairness upstream").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApfFlow {
    /// The shared `paddock-tenants` FlowSchema, one flow per user: costs the upstream nothing
    /// per tenant (APF matches every request against every FlowSchema ahead of its own).
    #[default]
    User,
    /// A FlowSchema of the tenant's own, with no distinguisher: all its users are one flow
    /// (a tenant with a hundred users gets one tenant's share, not a hundred).
    Tenant,
}

/// A tenant's limits in one replica. 0 means "no limit" for every count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Reads (and watch opens) per second, refilled continuously.
    #[serde(rename = "readQPS")]
    pub read_qps: u32,
    /// Reads that may be made at once after a quiet spell (bucket size).
    pub read_burst: u32,
    /// Writes per second.
    #[serde(rename = "writeQPS")]
    pub write_qps: u32,
    /// Writes that may be made at once after a quiet spell.
    pub write_burst: u32,
    /// Requests being served at once (watches and other long-running requests excluded).
    pub max_inflight: u32,
    /// Watches open at once.
    pub max_watches: u32,
    /// Largest `limit` of one LIST; a larger one is lowered to it (the answer then carries a
    /// `continue` token, as the apiserver's may for any limit).
    pub max_list: u32,
    /// TLS connections open at once (certificate-authenticated tenant users).
    pub max_connections: u32,
    /// How APF upstream groups the tenant's requests into flows (not a per-replica count: the
    /// leader keeps the FlowSchema it implies).
    pub apf_flow: ApfFlow,
}

impl Default for Limits {
    /// The defaults of docs/fairshare.md: generous for kubectl, helm and controllers, tight
    /// enough that one tenant cannot fill a replica.
    fn default() -> Self {
        Limits {
            read_qps: 100,
            read_burst: 200,
            write_qps: 50,
            write_burst: 100,
            max_inflight: 64,
            max_watches: 256,
            max_list: 500,
            max_connections: 128,
            apf_flow: ApfFlow::User,
        }
    }
}

/// A tenant's overrides of the configured defaults, kept in its tenant record. `None` keeps
/// the default; `Some(0)` lifts that limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitOverrides {
    #[serde(default, rename = "readQPS", skip_serializing_if = "Option::is_none")]
    pub read_qps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_burst: Option<u32>,
    #[serde(default, rename = "writeQPS", skip_serializing_if = "Option::is_none")]
    pub write_qps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_burst: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_inflight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_watches: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_list: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apf_flow: Option<ApfFlow>,
}

impl LimitOverrides {
    /// Whether nothing is overridden.
    pub fn is_empty(&self) -> bool {
        *self == LimitOverrides::default()
    }
}

impl Limits {
    /// These defaults with a tenant's overrides applied.
    pub fn with(&self, o: Option<&LimitOverrides>) -> Limits {
        let Some(o) = o else { return *self };
        Limits {
            read_qps: o.read_qps.unwrap_or(self.read_qps),
            read_burst: o.read_burst.unwrap_or(self.read_burst),
            write_qps: o.write_qps.unwrap_or(self.write_qps),
            write_burst: o.write_burst.unwrap_or(self.write_burst),
            max_inflight: o.max_inflight.unwrap_or(self.max_inflight),
            max_watches: o.max_watches.unwrap_or(self.max_watches),
            max_list: o.max_list.unwrap_or(self.max_list),
            max_connections: o.max_connections.unwrap_or(self.max_connections),
            apf_flow: o.apf_flow.unwrap_or(self.apf_flow),
        }
    }
}

/// A token bucket: `rate` tokens per second, at most `burst` banked. Time is passed in as
/// the duration since any fixed origin (the server's start), so the arithmetic is testable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    tokens: f64,
    last: Duration,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub fn full(burst: u32, now: Duration) -> TokenBucket {
        TokenBucket {
            tokens: f64::from(burst.max(1)),
            last: now,
        }
    }

    /// Takes one token at `now`, or says how long until one will be there. `rate` 0 means no
    /// limit. A `now` earlier than the last call (not expected of a monotonic clock) adds
    /// nothing.
    pub fn take(&mut self, now: Duration, rate: u32, burst: u32) -> Result<(), Duration> {
        if rate == 0 {
            return Ok(());
        }
        let cap = f64::from(burst.max(1));
        let elapsed = now.saturating_sub(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * f64::from(rate)).min(cap);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                (1.0 - self.tokens) / f64::from(rate),
            ))
        }
    }
}

/// The query of a LIST with its `limit` lowered to `max`, when it asked for more; None when
/// the query is fine as it is (no `limit`, `limit=0`, at most `max`, `max` = 0, or a watch).
/// Other parameters are kept byte for byte.
pub fn clamp_list_limit(query: &str, max: u32) -> Option<String> {
    if max == 0
        || form_urlencoded::parse(query.as_bytes())
            .any(|(k, v)| k == "watch" && (v == "true" || v == "1"))
    {
        return None;
    }
    let mut changed = false;
    let parts: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some(("limit", v)) => match v.parse::<u64>() {
                Ok(n) if n > u64::from(max) => {
                    changed = true;
                    format!("limit={max}")
                }
                _ => p.to_string(),
            },
            _ => p.to_string(),
        })
        .collect();
    changed.then(|| parts.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_apf_flow_is_a_word_and_an_override_like_the_counts() {
        let o: LimitOverrides =
            serde_json::from_value(serde_json::json!({"apfFlow": "tenant"})).unwrap();
        assert!(!o.is_empty());
        assert_eq!(Limits::default().with(Some(&o)).apf_flow, ApfFlow::Tenant);
        assert_eq!(Limits::default().with(None).apf_flow, ApfFlow::User);
        assert!(
            serde_json::from_value::<LimitOverrides>(serde_json::json!({"apfFlow": "namespace"}))
                .is_err()
        );
        assert!(
            serde_json::from_value::<LimitOverrides>(serde_json::json!({"apfFlow": 1})).is_err()
        );
    }

    #[test]
    fn classes() {
        assert_eq!(classify("GET", None, false), RequestClass::Read);
        assert_eq!(
            classify("GET", Some("limit=5&watch=true"), false),
            RequestClass::Watch
        );
        assert_eq!(classify("GET", Some("watch=1"), false), RequestClass::Watch);
        assert_eq!(
            classify("GET", Some("watch=false"), false),
            RequestClass::Read
        );
        assert_eq!(
            classify("GET", Some("follow=true"), false),
            RequestClass::LongRunning
        );
        assert_eq!(classify("GET", None, true), RequestClass::LongRunning);
        assert_eq!(classify("CONNECT", None, false), RequestClass::LongRunning);
        assert_eq!(
            classify("POST", Some("watch=true"), false),
            RequestClass::Write
        );
        for m in ["PUT", "PATCH", "DELETE", "POST"] {
            assert_eq!(classify(m, None, false), RequestClass::Write);
        }
    }

    #[test]
    fn bucket_burst_then_rate() {
        let mut b = TokenBucket::full(3, ms(0));
        for _ in 0..3 {
            assert_eq!(b.take(ms(0), 10, 3), Ok(()));
        }
        // Empty: the next token is 100 ms away at 10/s.
        let wait = b.take(ms(0), 10, 3).unwrap_err();
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-9, "{wait:?}");
        assert_eq!(b.take(ms(50), 10, 3).map_err(|_| ()), Err(()));
        assert_eq!(b.take(ms(100), 10, 3), Ok(()));
        // A long quiet spell banks at most `burst`.
        for _ in 0..3 {
            assert_eq!(b.take(ms(60_000), 10, 3), Ok(()));
        }
        assert!(b.take(ms(60_000), 10, 3).is_err());
    }

    #[test]
    fn bucket_zero_rate_is_unlimited_and_clock_never_goes_back() {
        let mut b = TokenBucket::full(1, ms(1000));
        for _ in 0..1000 {
            assert_eq!(b.take(ms(1000), 0, 1), Ok(()));
        }
        assert_eq!(b.take(ms(1000), 1, 1), Ok(()));
        // An earlier time refills nothing.
        assert!(b.take(ms(10), 1, 1).is_err());
        assert!(b.take(ms(1500), 1, 1).is_err());
        assert_eq!(b.take(ms(2000), 1, 1), Ok(()));
    }

    #[test]
    fn overrides_merge_and_serialize() {
        let d = Limits::default();
        assert_eq!(d.with(None), d);
        let o: LimitOverrides = serde_json::from_str(r#"{"readQPS":5,"maxWatches":0}"#).unwrap();
        let l = d.with(Some(&o));
        assert_eq!(l.read_qps, 5);
        assert_eq!(l.max_watches, 0);
        assert_eq!(l.write_qps, d.write_qps);
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"readQPS":5,"maxWatches":0}"#
        );
        assert!(LimitOverrides::default().is_empty());
        assert!(serde_json::from_str::<LimitOverrides>(r#"{"readQps":5}"#).is_err());
    }

    #[test]
    fn list_limit_clamp() {
        assert_eq!(
            clamp_list_limit("labelSelector=a%3Db&limit=5000", 500).as_deref(),
            Some("labelSelector=a%3Db&limit=500")
        );
        assert_eq!(clamp_list_limit("limit=500", 500), None);
        assert_eq!(clamp_list_limit("limit=0", 500), None);
        assert_eq!(clamp_list_limit("", 500), None);
        assert_eq!(clamp_list_limit("limit=5000", 0), None);
        assert_eq!(clamp_list_limit("limit=5000&watch=true", 500), None);
        assert_eq!(clamp_list_limit("limit=junk", 500), None);
    }
}
