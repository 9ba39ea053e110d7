//! paddock's 429 policy, decided in one place: which limit refused, the message of the
//! `Status`, `Retry-After`, and whether the answer waits first (the tarpit). A refusal is a
//! value ([`Refusal`]) carried from where a limit is hit to the edge, which writes the
//! `Status` with its `Retry-After` header (paddock-upstream's `ServerError`), counts it in
//! `paddock_fairshare_refusals_total{limit}` and holds it for [`Refusal::tarpit`] first.

use std::time::Duration;

/// Longest wait before a rate-limit refusal is answered.
pub const TARPIT_MAX: Duration = Duration::from_secs(1);

/// What refused: a tenant's fair-share limits (tenant record, config), and the replica's own
/// bounds (its work queue, bearer-token reviews, connections without a client certificate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Limit {
    ReadRate,
    WriteRate,
    InFlight,
    Watches,
    Connections,
    /// Waited longer than `fair_queue_timeout` for work seats.
    FairQueueWait,
    /// New bearer tokens to verify, per second, on this replica (`token_review_qps`).
    TokenReviewRate,
    /// Connections without a client certificate, on this replica.
    UnauthenticatedConnections,
    /// Connections without a client certificate, from one source address.
    UnauthenticatedConnectionsPerSource,
}

impl Limit {
    /// The limit's name: the field of the tenant record and config for a tenant's limits,
    /// the label of `paddock_fairshare_refusals_total` for all.
    pub fn name(self) -> &'static str {
        match self {
            Limit::ReadRate => "readQPS",
            Limit::WriteRate => "writeQPS",
            Limit::InFlight => "maxInflight",
            Limit::Watches => "maxWatches",
            Limit::Connections => "maxConnections",
            Limit::FairQueueWait => "fairQueueWait",
            Limit::TokenReviewRate => "tokenReviewQPS",
            Limit::UnauthenticatedConnections => "maxUnauthenticatedConnections",
            Limit::UnauthenticatedConnectionsPerSource => "maxUnauthenticatedConnectionsPerSource",
        }
    }

    /// What the limit counts, in a refusal's message.
    fn what(self) -> &'static str {
        match self {
            Limit::ReadRate => "read requests per second",
            Limit::WriteRate => "write requests per second",
            Limit::InFlight => "requests in flight",
            Limit::Watches => "open watches",
            Limit::Connections => "open connections",
            Limit::FairQueueWait => "seconds of waiting for work seats",
            Limit::TokenReviewRate => "new bearer tokens per second",
            Limit::UnauthenticatedConnections | Limit::UnauthenticatedConnectionsPerSource => {
                "connections without a client certificate"
            }
        }
    }

    /// A refusal of a rate waits `min(Retry-After, 1 s)` before it is answered (holding no
    /// seat, only a timer), so a client that retries at once without honouring `Retry-After`
    /// makes at most one refused request a second per request it keeps in flight; other
    /// refusals are answered at once (a seat or a watch frees when another request ends, not
    /// with time).
    fn is_rate(self) -> bool {
        matches!(self, Limit::ReadRate | Limit::WriteRate)
    }

    /// A tenant over this limit of `value`: the message names the tenant, the limit and its
    /// value.
    pub fn refusal(self, tenant: &str, value: u32, retry_after: u64) -> Refusal {
        Refusal {
            limit: self,
            message: format!(
                "tenant {tenant} is over its limit of {value} {} in this paddock replica (fair-share limit {}); retry after {retry_after}s",
                self.what(),
                self.name()
            ),
            retry_after,
        }
    }
}

/// One answer 429 `TooManyRequests`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What refused (the metric's label).
    pub limit: Limit,
    /// The `Status` message: names the tenant, the limit and its value.
    pub message: String,
    /// Seconds, for `Retry-After` and the `Status`' `details.retryAfterSeconds`.
    pub retry_after: u64,
}

impl Refusal {
    /// A tenant that waited `waited_secs` for work seats (the replica's fair queue).
    pub fn fair_queue_wait(tenant: &str, waited_secs: u64) -> Refusal {
        Refusal {
            limit: Limit::FairQueueWait,
            message: format!(
                "tenant {tenant} waited {waited_secs}s for a share of this paddock replica's work \
                 seats, busy with other requests (fair-share limit {}); retry after 1s",
                Limit::FairQueueWait.name()
            ),
            retry_after: 1,
        }
    }

    /// Too many new bearer tokens to verify (`token_review_qps` a second on this replica).
    pub fn token_reviews(token_review_qps: u32, retry_after: u64) -> Refusal {
        Refusal {
            limit: Limit::TokenReviewRate,
            message: format!(
                "too many new bearer tokens to verify on this paddock replica (token_review_qps {token_review_qps}); retry after {retry_after}s"
            ),
            retry_after,
        }
    }

    /// How long the answer waits before it is sent (see [`Limit`]'s rates).
    pub fn tarpit(&self) -> Option<Duration> {
        self.limit
            .is_rate()
            .then(|| Duration::from_secs(self.retry_after).min(TARPIT_MAX))
    }
}

/// `Retry-After` seconds for a wait: whole seconds, at least 1 (the header has no fractions,
/// and 0 would invite an immediate retry).
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_refusal_names_the_tenant_the_limit_and_its_value() {
        let r = Limit::WriteRate.refusal("acme01", 20, 1);
        assert_eq!(
            r.message,
            "tenant acme01 is over its limit of 20 write requests per second in this paddock replica (fair-share limit writeQPS); retry after 1s"
        );
        assert_eq!(r.limit.name(), "writeQPS");
        let q = Refusal::fair_queue_wait("acme01", 15);
        assert!(
            q.message.contains("fair-share limit fairQueueWait"),
            "{}",
            q.message
        );
        assert_eq!(q.retry_after, 1);
        let t = Refusal::token_reviews(50, 2);
        assert!(t.message.contains("token_review_qps 50"), "{}", t.message);
        assert_eq!(t.limit.name(), "tokenReviewQPS");
    }

    #[test]
    fn only_rate_refusals_wait() {
        let wait = |l: Limit, secs| l.refusal("acme01", 1, secs).tarpit();
        assert_eq!(wait(Limit::ReadRate, 1), Some(Duration::from_secs(1)));
        assert_eq!(wait(Limit::WriteRate, 7), Some(TARPIT_MAX));
        assert_eq!(wait(Limit::InFlight, 1), None);
        assert_eq!(wait(Limit::Watches, 10), None);
        assert_eq!(wait(Limit::Connections, 1), None);
        assert_eq!(Refusal::fair_queue_wait("acme01", 15).tarpit(), None);
        assert_eq!(Refusal::token_reviews(50, 1).tarpit(), None);
    }

    #[test]
    fn retry_after_rounds_up_to_a_second() {
        assert_eq!(retry_after_secs(ms(0)), 1);
        assert_eq!(retry_after_secs(ms(10)), 1);
        assert_eq!(retry_after_secs(ms(1001)), 2);
    }
}
