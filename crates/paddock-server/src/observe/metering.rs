//! Per-tenant meters on `/metrics` (docs/metering.md "Metrics"): counters of bytes in and out
//! and watch-seconds, a gauge of open watches, and the current figures of the last usage
//! refresh (usage.rs), encoded at scrape time from that snapshot.
//!
//! Cardinality is bounded by the number of tenants: every family here has the tenant as its
//! only label, except `paddock_tenant_objects` (tenant × one of the counted resources, a fixed
//! list in paddock_core::observe::usage, emitted only where the count is not zero).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use paddock_core::observe::usage::{TenantFigures, UsageTally};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use crate::observe::metric_values::new_metric;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::tap::{self, Tap};

/// The one label of the per-tenant families.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TenantLabel {
    /// Tenant id.
    pub tenant: crate::observe::metric_values::LabelText,
}

/// One usage refresh: every tenant's figures and when they were taken.
#[derive(Debug)]
pub struct UsageSnapshot {
    /// Figures per tenant.
    pub tally: UsageTally,
    /// List paths paddock's credential was refused (their figures are missing, not zero).
    pub uncounted: Vec<String>,
    /// RFC 3339 time of the refresh.
    pub observed_at: String,
    /// Monotonic time of the refresh (its age decides the next one).
    pub at: Instant,
}

/// The per-tenant meters of one replica.
pub struct TenantMetrics {
    /// Request body bytes received (Content-Length of the tenant's requests).
    pub request_bytes: Family<TenantLabel, Counter>,
    /// Response body bytes sent to the tenant.
    pub response_bytes: Family<TenantLabel, Counter>,
    /// Seconds watches were open, added when a watch ends.
    pub watch_seconds: Family<TenantLabel, Counter<f64, AtomicU64>>,
    /// Watches open now.
    pub open_watches: Family<TenantLabel, Gauge>,
    /// Every cluster's usage figures, which `/metrics` adds up per tenant.
    pub clusters: Arc<ClusterFigures>,
}

/// One cluster's usage figures (each cluster's `AppState` holds its own): what its watches
/// keep and the last refresh of them.
#[derive(Default)]
pub struct UsageFigures {
    /// The last usage refresh (none before the first).
    pub figures: ArcSwapOption<UsageSnapshot>,
    /// Held by the one refresh running (others wait for its result).
    pub refresh_lock: tokio::sync::Mutex<()>,
    /// What the usage watches keep (admin/usage.rs feeds them; a refresh folds them).
    pub caches: std::sync::Mutex<paddock_core::observe::usage_cache::UsageCaches>,
}

/// The usage figures of every cluster this replica serves, the default first (set when the
/// clusters are read: `clusters::sync`).
#[derive(Default)]
pub struct ClusterFigures(arc_swap::ArcSwap<Vec<Arc<UsageFigures>>>);

impl ClusterFigures {
    /// Replaces the list.
    pub fn set(&self, all: Vec<Arc<UsageFigures>>) {
        self.0.store(Arc::new(all));
    }

    /// Every tenant's figures from each cluster's last refresh, added up
    /// (`TenantFigures::add_cluster`).
    fn tenants(&self) -> BTreeMap<String, TenantFigures> {
        let mut out: BTreeMap<String, TenantFigures> = BTreeMap::new();
        for snap in self.0.load().iter().filter_map(|u| u.figures.load_full()) {
            for (tenant, f) in snap.tally.tenants() {
                match out.get_mut(tenant) {
                    Some(sum) => sum.add_cluster(f),
                    None => {
                        out.insert(tenant.clone(), f.clone());
                    }
                }
            }
        }
        out
    }
}

impl std::fmt::Debug for ClusterFigures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterFigures({} clusters)", self.0.load().len())
    }
}

impl TenantMetrics {
    /// Creates the meters and registers them (and the figures' collector) in `registry`.
    pub fn register(r: &mut Registry) -> TenantMetrics {
        let m = TenantMetrics {
            request_bytes: new_metric(
                r,
                "tenant_request_bytes",
                "Request body bytes received from the tenant (Content-Length), this replica",
            ),
            response_bytes: new_metric(
                r,
                "tenant_response_bytes",
                "Response body bytes sent to the tenant, this replica",
            ),
            watch_seconds: new_metric(
                r,
                "tenant_watch_seconds",
                "Seconds the tenant's watches were open (added as each ends), this replica",
            ),
            open_watches: new_metric(
                r,
                "tenant_open_watches",
                "Watches of the tenant open now on this replica",
            ),
            clusters: Arc::default(),
        };
        r.register_collector(Box::new(FiguresCollector(m.clusters.clone())));
        m
    }

    pub(crate) fn label(tenant: &str) -> TenantLabel {
        TenantLabel {
            tenant: tenant.into(),
        }
    }

    /// Counts a request's body.
    pub fn request(&self, tenant: &str, bytes: u64) {
        if bytes > 0 {
            self.request_bytes
                .get_or_create(&Self::label(tenant))
                .inc_by(bytes);
        }
    }
}

/// Wraps a tenant's response body: counts its bytes, and for a watch the open-watch gauge and
/// the watch-seconds, settled when the body ends or is dropped.
pub fn meter_response(body: ResBody, meters: &TenantMetrics, tenant: &str, watch: bool) -> ResBody {
    let label = TenantMetrics::label(tenant);
    if let Some(len) = body.complete_len().filter(|_| !watch) {
        // All of it is here: counted now rather than wrapped to count it as it leaves.
        meters
            .response_bytes
            .get_or_create(&label)
            .inc_by(len as u64);
        return body;
    }
    if watch {
        meters.open_watches.get_or_create(&label).inc();
    }
    tap::wrap(
        body,
        Metered {
            response_bytes: meters.response_bytes.clone(),
            watch: watch.then(|| (meters.open_watches.clone(), meters.watch_seconds.clone())),
            label,
            bytes: 0,
            started: Instant::now(),
        },
    )
}

type WatchMeters = (
    Family<TenantLabel, Gauge>,
    Family<TenantLabel, Counter<f64, AtomicU64>>,
);

/// A response's meters, settled when its body ends or is dropped.
struct Metered {
    response_bytes: Family<TenantLabel, Counter>,
    watch: Option<WatchMeters>,
    label: TenantLabel,
    bytes: u64,
    started: Instant,
}

impl Tap for Metered {
    fn data(&mut self, d: &Bytes) {
        self.bytes += d.len() as u64;
    }

    fn end(self, _whole: bool) {
        self.response_bytes
            .get_or_create(&self.label)
            .inc_by(self.bytes);
        if let Some((open, seconds)) = &self.watch {
            open.get_or_create(&self.label).dec();
            seconds
                .get_or_create(&self.label)
                .inc_by(self.started.elapsed().as_secs_f64());
        }
    }
}

/// Encodes the last usage refresh of every cluster at scrape time, added up per tenant.
#[derive(Debug)]
struct FiguresCollector(Arc<ClusterFigures>);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ObjectLabels {
    tenant: String,
    resource: String,
}

type Figure = (
    &'static str,
    &'static str,
    fn(&paddock_core::observe::usage::TenantFigures) -> f64,
);

/// Verbs the request counter can hold (proxy::verb_name and proxy::method_verb).
pub const VERBS: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "connect",
    "other",
];

pub(crate) const FIGURES: &[Figure] = &[
    (
        "tenant_namespaces",
        "Namespaces of the tenant upstream (last usage refresh)",
        |f| f.namespaces as f64,
    ),
    (
        "tenant_pods",
        "Pods in the tenant's namespaces, any phase (last usage refresh)",
        |f| f.pods as f64,
    ),
    (
        "tenant_running_pods",
        "Running pods of the tenant (last usage refresh)",
        |f| f.running_pods as f64,
    ),
    (
        "tenant_cpu_requests_cores",
        "CPU requested by the tenant's running pods' containers (last usage refresh)",
        |f| f.cpu_requests_millicores as f64 / 1000.0,
    ),
    (
        "tenant_cpu_limits_cores",
        "CPU limits of the tenant's running pods' containers (last usage refresh)",
        |f| f.cpu_limits_millicores as f64 / 1000.0,
    ),
    (
        "tenant_memory_requests_bytes",
        "Memory requested by the tenant's running pods' containers (last usage refresh)",
        |f| f.memory_requests_bytes as f64,
    ),
    (
        "tenant_memory_limits_bytes",
        "Memory limits of the tenant's running pods' containers (last usage refresh)",
        |f| f.memory_limits_bytes as f64,
    ),
    (
        "tenant_storage_requests_bytes",
        "Storage requested by the tenant's PersistentVolumeClaims (last usage refresh)",
        |f| f.storage_requests_bytes as f64,
    ),
];

impl Collector for FiguresCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let tenants = self.0.tenants();
        if tenants.is_empty() {
            return Ok(());
        }
        for (name, help, value) in FIGURES {
            let mut m = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (tenant, f) in &tenants {
                let label = TenantLabel {
                    tenant: tenant.as_str().into(),
                };
                ConstGauge::new(value(f)).encode(m.encode_family(&label)?)?;
            }
        }
        let mut m = encoder.encode_descriptor(
            "tenant_objects",
            "Objects of the tenant upstream by resource, where not zero (last usage refresh)",
            None,
            MetricType::Gauge,
        )?;
        for (tenant, f) in &tenants {
            for (resource, n) in f.objects.iter().filter(|(_, n)| **n > 0) {
                let labels = ObjectLabels {
                    tenant: tenant.clone(),
                    resource: resource.clone(),
                };
                ConstGauge::new(*n as i64).encode(m.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}
