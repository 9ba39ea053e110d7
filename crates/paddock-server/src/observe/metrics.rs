//! Prometheus metrics. Label cardinality is bounded on purpose: tenant ids appear only on the
//! request counter (one series per tenant × verb × status class); latency histograms are per
//! verb only, so 10,000 tenants do not mean 10,000 histograms.

use std::sync::Arc;

use http::Method;
use paddock_core::Plan;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::observe::metric_values::{LabelText, new_metric, registered};

/// Labels of the request counter.
/// The label of the per-cluster families.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabel {
    /// Cluster name (`default`, or a registered one).
    pub cluster: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// Tenant id, or `_admin`, or `_anonymous`.
    pub tenant: LabelText,
    /// Kubernetes verb (get, list, watch, create, ...).
    pub verb: &'static str,
    /// `2xx`, `3xx`, `4xx`, `5xx`.
    pub code: &'static str,
}

/// Labels of the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerbLabels {
    /// Kubernetes verb.
    pub verb: &'static str,
}

/// Labels of the upstream error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamErrorLabels {
    /// `connect`, `status_5xx`, `rewrite`.
    pub kind: String,
}

/// Labels of the fair-share refusal counter (no tenant: the request counter has the tenant
/// and the 4xx class; this says which limit, 5 series at most).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LimitLabels {
    /// The limit's field name (`readQPS`, `writeQPS`, `maxInflight`, `maxWatches`,
    /// `maxConnections`).
    pub limit: String,
}

/// Labels of the tenant-webhook relay's counter (docs/webhooks.md): 4 series at most.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RelayLabels {
    /// `allowed`, `denied`, `failed` (the call could not be made: the webhook's failurePolicy
    /// decided), `skipped` (not the tenant's object: allowed without a call).
    pub outcome: &'static str,
}

/// All metrics of one replica.
pub struct Metrics {
    registry: Registry,
    /// Requests served.
    pub requests: Family<RequestLabels, Counter>,
    /// Time to response headers, seconds.
    pub latency: Family<VerbLabels, Histogram>,
    /// Watches currently open.
    pub open_watches: Gauge,
    /// Upstream failures.
    pub upstream_errors: Family<UpstreamErrorLabels, Counter>,
    /// 1 while the upstream counts as answering (health.rs), else 0.
    pub upstream_up: Gauge,
    /// The same per cluster, every registered one and `default` (docs/clusters.md).
    pub cluster_up: Family<ClusterLabel, Gauge>,
    /// Requests and connections refused by a fair-share limit.
    pub limit_refusals: Family<LimitLabels, Counter>,
    /// Audit events dropped because the writer fell behind.
    pub audit_dropped: Counter,
    /// Per-tenant bytes, watches and current figures (metering.rs, docs/metering.md).
    pub tenant: crate::observe::metering::TenantMetrics,
    /// Creates refused by a tenant quota (docs/quota.md).
    pub quota_refused: Counter,
    /// Quota ledger swaps lost to another writer (and retried).
    pub quota_swap_conflicts: Counter,
    /// The fair work queue's seats and waits (fair_queue.rs).
    pub fair_queue: QueueMetrics,
    /// 1 while this replica leads (does the once-per-fleet work), else 0.
    pub leader: Gauge,
    /// Gains and losses of the leadership by this replica.
    pub leader_transitions: Counter,
    /// Reviews relayed to tenants' own webhooks, by outcome.
    pub tenant_webhook_calls: Family<RelayLabels, Counter>,
    /// Suspended tenants in the store cache (set as `/metrics` is read).
    pub tenants_suspended: Gauge,
    /// Writes of suspended tenants refused at paddock's door.
    pub suspension_refusals: Counter,
    /// Tenant deletions the TTL started (the leader's).
    pub ttl_deletions: Counter,
    /// Tenants asleep or falling asleep (set when scraped, from the store cache).
    pub tenants_asleep: Gauge,
    /// Tenants put to sleep (the leader's; idle past `sleepAfter`, or `tenant sleep`).
    pub tenant_sleeps: Counter,
    /// Tenants woken (the leader's; by a request, or `tenant wake`).
    pub tenant_wakes: Counter,
    /// Tenants' requests finished (not exported: the health prober's sign of use; a load
    /// balancer's health checks are not use).
    pub finished: std::sync::atomic::AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("paddock");
        let r = &mut registry;
        let requests = new_metric(
            r,
            "requests",
            "Requests served, by tenant, verb and status class",
        );
        let latency = registered(
            r,
            "request_duration_seconds",
            "Time until response headers, by verb",
            Family::<VerbLabels, Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0005, 2.0, 16))
            }),
        );
        let open_watches = new_metric(r, "open_watches", "Watches currently open");
        let upstream_errors = new_metric(r, "upstream_errors", "Upstream failures by kind");
        r.register(
            "upstream_refused_retries",
            "Requests sent again on a new upstream connection because the upstream refused them unprocessed (GOAWAY, REFUSED_STREAM)",
            paddock_upstream::short_set::REFUSED_RETRIES.clone(),
        );
        let upstream_up = new_metric(
            r,
            "upstream_up",
            "1 while the upstream apiserver answers (readiness probes with hysteresis), else 0",
        );
        let cluster_up = new_metric(
            r,
            "cluster_up",
            "1 while the cluster's apiserver answers (readiness probes with hysteresis), else 0; one series per cluster",
        );
        let limit_refusals = new_metric(
            r,
            "fairshare_refusals",
            "Requests and connections refused with 429 by a per-tenant fair-share limit, by limit",
        );
        let audit_dropped = new_metric(
            r,
            "audit_dropped",
            "Tenant audit events dropped because the audit backends fell behind",
        );
        let quota_refused = new_metric(r, "quota_refused", "Creates refused by a tenant quota");
        let quota_swap_conflicts = new_metric(
            r,
            "quota_swap_conflicts",
            "Quota ledger compare-and-swaps lost to another writer and retried",
        );
        let leader = new_metric(
            r,
            "leader",
            "1 while this replica holds the leader Lease and does the once-per-fleet work (always 1 with leader election off), else 0",
        );
        let leader_transitions = new_metric(
            r,
            "leader_transitions",
            "Times this replica gained or lost the leadership",
        );
        r.register(
            "leader_election_requests",
            "Reads and writes of the leader Lease sent by this replica's election (not its watch)",
            paddock_upstream::lease::LEASE_REQUESTS.clone(),
        );
        let tenant_webhook_calls = new_metric(
            r,
            "tenant_webhook_calls",
            "AdmissionReviews relayed to tenants' own webhooks, by outcome (allowed, denied, failed, skipped)",
        );
        let tenants_suspended = new_metric(
            r,
            "tenants_suspended",
            "Tenants suspended (docs/operations.md \"Suspend, protection and TTL\")",
        );
        let suspension_refusals = new_metric(
            r,
            "suspension_refusals",
            "Writes of suspended tenants refused by paddock (403 naming the suspension)",
        );
        let ttl_deletions = new_metric(
            r,
            "tenant_ttl_deletions",
            "Tenant deletions started because the tenant's TTL ran out",
        );
        let tenants_asleep = new_metric(
            r,
            "tenants_asleep",
            "Tenants asleep or falling asleep (docs/operations.md \"Sleep and wake\")",
        );
        let tenant_sleeps = new_metric(
            r,
            "tenant_sleeps",
            "Tenants put to sleep by this replica as the leader (idle past sleepAfter, or tenant sleep)",
        );
        let tenant_wakes = new_metric(
            r,
            "tenant_wakes",
            "Tenants woken by this replica as the leader (by a request, or tenant wake)",
        );
        let tenant = crate::observe::metering::TenantMetrics::register(&mut registry);
        let fair_queue = QueueMetrics::register(&mut registry);
        Metrics {
            tenant_webhook_calls,
            tenants_suspended,
            suspension_refusals,
            ttl_deletions,
            tenants_asleep,
            tenant_sleeps,
            tenant_wakes,
            leader,
            leader_transitions,
            finished: Default::default(),
            fair_queue,
            tenant,
            quota_refused,
            quota_swap_conflicts,
            registry,
            limit_refusals,
            audit_dropped,
            requests,
            latency,
            open_watches,
            upstream_errors,
            upstream_up,
            cluster_up,
        }
    }

    /// OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    /// Records one finished request. The verb and class labels are static strings: only the
    /// tenant's is allocated to look the counter up (this runs for every request).
    pub fn observe(&self, tenant: &str, verb: &'static str, code: u16, seconds: f64) {
        let class = match code {
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        self.requests
            .get_or_create(&RequestLabels {
                tenant: tenant.into(),
                verb,
                code: class,
            })
            .inc();
        self.latency
            .get_or_create(&VerbLabels { verb })
            .observe(seconds);
    }

    /// Counts a fair-share refusal.
    pub fn limit_refused(&self, limit: paddock_core::fair::refusal::Limit) {
        self.limit_refusals
            .get_or_create(&LimitLabels {
                limit: limit.name().to_string(),
            })
            .inc();
    }

    /// Counts an upstream failure.
    pub fn upstream_error(&self, kind: &str) {
        self.upstream_errors
            .get_or_create(&UpstreamErrorLabels {
                kind: kind.to_string(),
            })
            .inc();
    }
}

/// Decrements the open-watch gauge when dropped.
pub struct WatchGuard(pub Arc<Metrics>);

impl WatchGuard {
    /// Increments the gauge.
    pub fn open(m: Arc<Metrics>) -> Self {
        m.open_watches.inc();
        WatchGuard(m)
    }
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.open_watches.dec();
    }
}

/// Verb name for logs and metrics.
pub fn verb_name(plan: &Plan) -> &'static str {
    plan.request.verb.as_str()
}

/// The verb of a request answered before planning (a refusal by a fair-share limit, an
/// error): a GET of a collection is a `list` or, asking for one, a `watch`, so a refused LIST
/// is not counted among the gets.
pub fn unplanned_verb(m: &Method, path: &str, watch: bool) -> &'static str {
    if *m == Method::GET && paddock_core::fair::weight::is_collection(path) {
        return if watch { "watch" } else { "list" };
    }
    method_verb(m)
}

/// The method as a verb before planning (for errors that happen earlier).
pub fn method_verb(m: &Method) -> &'static str {
    match *m {
        Method::GET => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "other",
    }
}

#[cfg(test)]
mod verb_tests {
    use super::*;

    #[test]
    fn a_refused_list_or_watch_is_not_counted_as_a_get() {
        let get = Method::GET;
        assert_eq!(
            unplanned_verb(&get, "/api/v1/namespaces/a/configmaps", false),
            "list"
        );
        assert_eq!(
            unplanned_verb(&get, "/api/v1/namespaces/a/configmaps", true),
            "watch"
        );
        assert_eq!(
            unplanned_verb(&get, "/apis/apps/v1/deployments", false),
            "list"
        );
        assert_eq!(
            unplanned_verb(&get, "/api/v1/namespaces/a/configmaps/x", false),
            "get"
        );
        assert_eq!(
            unplanned_verb(&Method::PATCH, "/api/v1/namespaces/a/configmaps/x", false),
            "patch"
        );
    }
}

/// The queue's metrics: two gauges and three counters, no labels (docs/fairshare.md).
#[derive(Clone, Default)]
pub struct QueueMetrics {
    pub(crate) seats_in_use: crate::observe::metric_values::StoredGauge,
    pub(crate) waiting: crate::observe::metric_values::StoredGauge,
    pub(crate) queued: Counter,
    pub(crate) timed_out: Counter,
    pub(crate) revoked: Counter,
}

impl QueueMetrics {
    pub fn register(r: &mut Registry) -> Self {
        QueueMetrics {
            seats_in_use: new_metric(
                r,
                "fair_queue_seats_in_use",
                "Work seats held by tenants' requests in this replica's fair queue",
            ),
            waiting: new_metric(
                r,
                "fair_queue_waiting",
                "Tenant requests waiting for work seats",
            ),
            queued: new_metric(
                r,
                "fair_queue_queued",
                "Tenant requests that had to wait for work seats",
            ),
            timed_out: new_metric(
                r,
                "fair_queue_timeouts",
                "Tenant requests refused with 429 after waiting fair_queue_timeout for work seats",
            ),
            revoked: new_metric(
                r,
                "fair_queue_revoked",
                "Work seats taken back from requests that held them past the lease while others waited",
            ),
        }
    }
}
