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
use tokio::sync::Mutex;

use crate::error::ServerError;
use crate::limit::collect_limited;
use crate::upstream::Upstream;

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(1);

/// The shared, refreshable catalog.
pub struct CatalogCache {
    current: ArcSwapOption<Catalog>,
    synced: AtomicBool,
    refresh_lock: Mutex<Option<Instant>>,
    /// Ids of existing tenants, handed to every catalog (messages are scrubbed of other
    /// tenants' names only, not of platform names that merely look like one).
    known_tenants: parking_lot::Mutex<Vec<String>>,
    /// Every tenant's platform grants, handed to every catalog.
    platform_grants: parking_lot::Mutex<paddock_core::platform_grant::Grants>,
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
    pub fn set_platform_grants(&self, grants: paddock_core::platform_grant::Grants) {
        *self.platform_grants.lock() = grants.clone();
        if let Some(cur) = self.get() {
            self.current
                .store(Some(Arc::new((*cur).clone().with_platform_grants(grants))));
        }
    }

    /// Re-reads discovery unless it was read less than a second ago. Returns the catalog in
    /// force afterwards.
    pub async fn refresh(&self, upstream: &Upstream) -> Result<Arc<Catalog>, ServerError> {
        let mut last = self.refresh_lock.lock().await;
        if let (Some(at), Some(cur)) = (*last, self.get())
            && at.elapsed() < MIN_REFRESH_INTERVAL
        {
            return Ok(cur);
        }
        let core = fetch(upstream, "/api").await?;
        let apis = fetch(upstream, "/apis").await?;
        let known = self.known_tenants.lock().clone();
        let grants = self.platform_grants.lock().clone();
        let catalog = Arc::new(
            Catalog::from_aggregated(&core, &apis)?
                .with_known_tenants(known)
                .with_platform_grants(grants),
        );
        self.current.store(Some(catalog.clone()));
        self.synced.store(true, Ordering::Release);
        *last = Some(Instant::now());
        Ok(catalog)
    }
}

async fn fetch(upstream: &Upstream, path: &str) -> Result<Bytes, ServerError> {
    let req = Request::builder()
        .method(Method::GET)
        .uri(upstream.uri(path)?)
        .header(http::header::ACCEPT, AGGREGATED_V2)
        .body(crate::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let resp = upstream.send(req, crate::upstream::Route::Short).await?;
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
