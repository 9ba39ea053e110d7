//! paddock's view of upstream discovery: the translation core's `Catalog`, fetched with
//! paddock's own credential, refreshed periodically and on demand (a tenant that has just
//! created a CRD uses it a moment later), never more than once per second.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use http::{Method, Request};
use paddock_core::Catalog;
use paddock_core::catalog::webhook_relay::WebhookRelay;
use tokio::sync::Mutex;

use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::upstream::Upstream;

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// The shared, refreshable catalog.
pub struct CatalogCache {
    current: ArcSwapOption<Catalog>,
    synced: AtomicBool,
    /// When the last discovery read started.
    refresh_lock: Mutex<Option<Instant>>,
    /// Ids of existing tenants, handed to every catalog (messages are scrubbed of other
    /// tenants' names only, not of platform names that merely look like one).
    known_tenants: parking_lot::Mutex<Vec<String>>,
    /// Every tenant's platform grants, handed to every catalog.
    platform_grants: parking_lot::Mutex<paddock_core::catalog::platform_grant::Grants>,
    /// The relay of the tenants' webhooks (this cluster's apiserver calls paddock), handed to
    /// every catalog.
    webhook_relay: parking_lot::Mutex<Option<Arc<WebhookRelay>>>,
}

impl Default for CatalogCache {
    fn default() -> Self {
        Self::new()
    }
}

impl CatalogCache {
    /// Empty (not synced) cache.
    pub fn new() -> Self {
        CatalogCache {
            current: ArcSwapOption::empty(),
            synced: AtomicBool::new(false),
            refresh_lock: Mutex::new(None),
            known_tenants: parking_lot::Mutex::new(Vec::new()),
            platform_grants: parking_lot::Mutex::new(Default::default()),
            webhook_relay: parking_lot::Mutex::new(None),
        }
    }

    /// The current catalog, if discovery has been read at least once.
    pub fn get(&self) -> Option<Arc<Catalog>> {
        self.current.load_full()
    }

    /// Whether discovery has been read.
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Records the ids of existing tenants and applies them to the current catalog.
    pub fn set_known_tenants(&self, ids: Vec<String>) {
        *self.known_tenants.lock() = ids.clone();
        if let Some(cur) = self.get() {
            self.current
                .store(Some(Arc::new((*cur).clone().with_known_tenants(ids))));
        }
    }

    /// Records every tenant's platform grants and applies them to the current catalog.
    pub fn set_platform_grants(&self, grants: paddock_core::catalog::platform_grant::Grants) {
        *self.platform_grants.lock() = grants.clone();
        if let Some(cur) = self.get() {
            self.current
                .store(Some(Arc::new((*cur).clone().with_platform_grants(grants))));
        }
    }

    /// Relays the tenants' webhooks through paddock's admission listener (docs/webhooks.md).
    pub fn set_webhook_relay(&self, relay: Option<Arc<WebhookRelay>>) {
        *self.webhook_relay.lock() = relay.clone();
        if let Some(cur) = self.get() {
            self.current
                .store(Some(Arc::new((*cur).clone().with_webhook_relay(relay))));
        }
    }

    /// Re-reads discovery, at most once per second: a read that started after this call
    /// began is used as it is; otherwise the call waits out the rest of the second since the
    /// last read started, then reads. Returns the catalog in force afterwards.
    ///
    /// A request for a kind the catalog lacks (a CRD created a moment ago) therefore always
    /// sees discovery read after it missed: reusing any read of the last second, as before,
    /// could reuse one that started just before the CRD was established (conformance "custom
    /// resource defaulting", a 404 for its new CR in session 11's complete run). Calls that
    /// queue behind one read share the next.
    pub async fn refresh(&self, upstream: &Upstream) -> Result<Arc<Catalog>, ServerError> {
        let since = Instant::now();
        let mut last = self.refresh_lock.lock().await;
        let current = self.get();
        match refresh_plan(*last, current.is_some(), since, Instant::now()) {
            RefreshPlan::Reuse => {
                if let Some(cur) = current {
                    return Ok(cur);
                }
            }
            RefreshPlan::ReadAfter(wait) => {
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
            }
        }
        let started = Instant::now();
        let core = fetch(upstream, "/api").await?;
        let apis = fetch(upstream, "/apis").await?;
        let known = self.known_tenants.lock().clone();
        let grants = self.platform_grants.lock().clone();
        let catalog = Arc::new(
            Catalog::from_aggregated(&core, &apis)?
                .with_known_tenants(known)
                .with_platform_grants(grants)
                .with_webhook_relay(self.webhook_relay.lock().clone()),
        );
        self.current.store(Some(catalog.clone()));
        self.synced.store(true, Ordering::Release);
        *last = Some(started);
        Ok(catalog)
    }
}

/// What a call to [`CatalogCache::refresh`] made at `since` does, under the lock at `now`.
#[derive(Debug, PartialEq, Eq)]
enum RefreshPlan {
    /// A read that started after the call began: its catalog is fresh enough.
    Reuse,
    /// Read discovery after waiting this long (the rest of the second since the last read).
    ReadAfter(Duration),
}

fn refresh_plan(
    last_started: Option<Instant>,
    have_catalog: bool,
    since: Instant,
    now: Instant,
) -> RefreshPlan {
    match last_started {
        Some(started) if have_catalog && started >= since => RefreshPlan::Reuse,
        Some(started) => RefreshPlan::ReadAfter(
            MIN_REFRESH_INTERVAL.saturating_sub(now.saturating_duration_since(started)),
        ),
        None => RefreshPlan::ReadAfter(Duration::ZERO),
    }
}

async fn fetch(upstream: &Upstream, path: &str) -> Result<Bytes, ServerError> {
    let req = Request::builder()
        .method(Method::GET)
        .uri(upstream.uri(path)?)
        .header(http::header::ACCEPT, AGGREGATED_V2)
        .body(paddock_upstream::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let resp = upstream
        .send(req, paddock_upstream::upstream::Route::Short)
        .await?;
    let status = resp.status();
    let body = collect_limited(resp.into_body(), 64 << 20).await?;
    if !status.is_success() {
        return Err(ServerError::Upstream(format!(
            "upstream discovery {path} answered {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        )));
    }
    Ok(body)
}

#[cfg(test)]
mod refresh_tests {
    use super::*;

    #[test]
    fn a_refresh_reads_discovery_started_after_it_was_asked_at_most_once_a_second() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Never read: read at once.
        assert_eq!(
            refresh_plan(None, false, t0, t0),
            RefreshPlan::ReadAfter(Duration::ZERO)
        );
        // A read that started before the call (a CRD established since may be missing from
        // it): read again, once the second since that read started is over.
        assert_eq!(
            refresh_plan(Some(t0), true, t0 + ms(300), t0 + ms(400)),
            RefreshPlan::ReadAfter(ms(600))
        );
        assert_eq!(
            refresh_plan(Some(t0), true, t0 + ms(1500), t0 + ms(1500)),
            RefreshPlan::ReadAfter(Duration::ZERO)
        );
        // Queued behind a read that started after the call: share it.
        assert_eq!(
            refresh_plan(Some(t0 + ms(100)), true, t0 + ms(50), t0 + ms(900)),
            RefreshPlan::Reuse
        );
        // ... unless that read failed (no catalog yet).
        assert_eq!(
            refresh_plan(Some(t0 + ms(100)), false, t0 + ms(50), t0 + ms(900)),
            RefreshPlan::ReadAfter(ms(200))
        );
    }
}
