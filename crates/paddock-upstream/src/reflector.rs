//! The I/O half of a reflector (the decisions are `paddock_core::provision::reflect`): LIST a
//! collection, then WATCH it from the list's resourceVersion with bookmarks, re-watching when
//! the apiserver closes the stream, re-listing on 410 Gone and once per `relist_after`, waiting
//! with backoff after errors. What it reads goes to a channel; the cache is the reader's.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{Method, Request, header};
use http_body_util::BodyExt;
use paddock_core::provision::reflect::{
    AfterError, Cache, Change, WatchEvent, after_error, backoff, parse_event,
};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::ServerError;
use crate::upjson::{self, query_escape};
use crate::upstream::Upstream;

/// What a reflector hands its reader.
#[derive(Debug)]
pub enum Feed {
    /// A (re-)list: every object, the whole state.
    Listed(Vec<Value>),
    /// One change seen by the watch (never a bookmark or an error).
    Event(WatchEvent),
    /// The apiserver refused the list (403: the credential may not list it) or does not
    /// serve the collection (404); only for a [`Source`] with `refused_wait`, which is how
    /// long the reflector waits before it asks again.
    Refused(u16),
}

impl Feed {
    /// Into `cache`: a list replaces it, an event changes it, a refusal leaves it as it is;
    /// returns what changed.
    pub fn into_cache(self, cache: &mut Cache) -> Vec<Change> {
        match self {
            Feed::Listed(items) => cache.replace(items),
            Feed::Event(ev) => cache.apply(ev).into_iter().collect(),
            Feed::Refused(_) => Vec::new(),
        }
    }
}

/// One collection to reflect.
#[derive(Debug, Clone)]
pub struct Source {
    /// The collection path, e.g. `/api/v1/namespaces`.
    pub collection: String,
    /// A label selector (unescaped); empty for none.
    pub selector: String,
    /// The longest time between two real re-lists; each is spread over its last quarter.
    pub relist_after: Duration,
    /// Objects as `PartialObjectMetadata` (metadata only: a Secret's data never reaches
    /// paddock, and the apiserver encodes less).
    pub metadata_only: bool,
    /// What is kept of each object read, before it reaches the reader (`None`: dropped). A
    /// reader that needs a few fields of many objects keeps only those, page by page, and
    /// never holds the collection in full.
    pub shape: fn(Value) -> Option<Value>,
    /// For a collection the credential may not be allowed to list: a 403 or 404 is handed
    /// on as [`Feed::Refused`] and asked again only after this long (else it is a failure,
    /// retried with backoff).
    pub refused_wait: Option<Duration>,
}

impl Source {
    /// Every object of `collection` matching `selector` (empty: all), in full.
    pub fn new(collection: impl Into<String>, selector: &str, relist_after: Duration) -> Source {
        Source {
            collection: collection.into(),
            selector: selector.to_string(),
            relist_after,
            metadata_only: false,
            shape: Some,
            refused_wait: None,
        }
    }

    fn accept(&self, list: bool) -> &'static str {
        match (self.metadata_only, list) {
            (false, _) => "application/json",
            (true, true) => {
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            }
            (true, false) => {
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
            }
        }
    }
}

/// A list's outcome that is not a failure.
enum Listing {
    /// Every object (shaped) and the snapshot's resourceVersion.
    Items(Vec<Value>, String),
    /// Refused or not served (a source with `refused_wait` only).
    Refused(u16),
}

/// Longest event read (a namespace or a stamped object is far smaller).
const MAX_EVENT_BYTES: usize = 4 << 20;
/// How long the apiserver keeps one watch open before the reflector opens the next.
const WATCH_SECONDS: u64 = 540;

/// Why a watch stream ended.
enum Ended {
    /// Closed by the apiserver's timeout, or the re-list is due: carry on.
    Closed,
    Relist,
}

/// Runs until `stop`, or the reader is gone. `id` tags what is sent.
pub async fn run(
    up: &Upstream,
    source: &Source,
    id: usize,
    tx: mpsc::Sender<(usize, Feed)>,
    stop: CancellationToken,
) {
    let mut failures: u32 = 0;
    loop {
        let rv = match list(up, source).await {
            Ok(Listing::Items(items, rv)) => {
                if tx.send((id, Feed::Listed(items))).await.is_err() {
                    return;
                }
                rv
            }
            Ok(Listing::Refused(code)) => {
                if tx.send((id, Feed::Refused(code))).await.is_err() {
                    return;
                }
                let wait = source.refused_wait.unwrap_or(source.relist_after);
                tokio::select! {
                    _ = tokio::time::sleep(wait.mul_f64(1.0 + 0.25 * jitter())) => {}
                    _ = stop.cancelled() => return,
                }
                continue;
            }
            Err(_) if tx.is_closed() => return,
            Err(e) => {
                tracing::warn!(collection = %source.collection, error = %e, "reflector: list failed");
                if pause(&mut failures, &stop).await {
                    return;
                }
                continue;
            }
        };
        let due = Instant::now() + source.relist_after.mul_f64(1.0 - 0.25 * jitter());
        if watch_until(up, source, id, &tx, &stop, rv, due, &mut failures).await {
            return;
        }
    }
}

/// Watches from `rv` until a re-list is due (`false`) or the reflector must end (`true`).
#[allow(clippy::too_many_arguments)]
async fn watch_until(
    up: &Upstream,
    source: &Source,
    id: usize,
    tx: &mpsc::Sender<(usize, Feed)>,
    stop: &CancellationToken,
    mut rv: String,
    due: Instant,
    failures: &mut u32,
) -> bool {
    loop {
        let opened = Instant::now();
        let r = tokio::select! {
            r = watch_once(up, source, id, tx, &mut rv, failures) => r,
            _ = tokio::time::sleep_until(due) => return false,
            _ = stop.cancelled() => return true,
        };
        match r {
            // A stream the apiserver closes at once, again and again, must not spin.
            Ok(Ended::Closed) if opened.elapsed() < Duration::from_secs(1) => {
                if pause(failures, stop).await {
                    return true;
                }
            }
            Ok(Ended::Closed) => {}
            Ok(Ended::Relist) => return false,
            Err(e) => {
                if tx.is_closed() {
                    return true;
                }
                tracing::warn!(collection = %source.collection, error = %e, "reflector: watch failed");
                if pause(failures, stop).await {
                    return true;
                }
            }
        }
    }
}

/// Waits out the backoff of one more failure; `true` when stopped meanwhile.
async fn pause(failures: &mut u32, stop: &CancellationToken) -> bool {
    let wait = backoff(*failures, jitter());
    *failures = failures.saturating_add(1);
    tokio::select! {
        _ = tokio::time::sleep(wait) => false,
        _ = stop.cancelled() => true,
    }
}

/// A number in 0.0..1.0 that differs between replicas and calls (not for cryptography).
fn jitter() -> f64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1_000_000) / 1_000_000.0
}

/// Only what names the object (its cache key).
fn key_only(o: &Value) -> Value {
    let m = &o["metadata"];
    serde_json::json!({"metadata": {"namespace": m["namespace"], "name": m["name"]}})
}

fn with_selector(source: &Source, query: &str) -> String {
    let mut p = format!("{}?{query}", source.collection);
    if !source.selector.is_empty() {
        p.push_str("&labelSelector=");
        p.push_str(&query_escape(&source.selector));
    }
    p
}

/// Every object of the collection, in pages of one snapshot, shaped page by page, and that
/// snapshot's resourceVersion (where the watch starts).
async fn list(up: &Upstream, source: &Source) -> Result<Listing, ServerError> {
    let mut items = Vec::new();
    let mut token = String::new();
    loop {
        let mut q = "limit=500".to_string();
        if !token.is_empty() {
            q.push_str("&continue=");
            q.push_str(&query_escape(&token));
        }
        let path = with_selector(source, &q);
        let mut a =
            upjson::call_accept(up, Method::GET, &path, None, None, source.accept(true)).await?;
        let code = a.status.as_u16();
        if source.refused_wait.is_some() && (code == 403 || code == 404) {
            return Ok(Listing::Refused(code));
        }
        if !a.status.is_success() {
            return Err(ServerError::Upstream(format!(
                "listing {} failed ({}): {}",
                source.collection,
                a.status,
                a.message()
            )));
        }
        if let Some(Value::Array(v)) = a.body.get_mut("items").map(Value::take) {
            items.extend(v.into_iter().filter_map(source.shape));
        }
        token = a.body["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if token.is_empty() {
            let rv = a.body["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            return Ok(Listing::Items(items, rv));
        }
    }
}

/// One watch request, read to its end; `rv` follows the events and bookmarks.
async fn watch_once(
    up: &Upstream,
    source: &Source,
    id: usize,
    tx: &mpsc::Sender<(usize, Feed)>,
    rv: &mut String,
    failures: &mut u32,
) -> Result<Ended, ServerError> {
    let q = format!(
        "watch=true&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}&resourceVersion={}",
        query_escape(rv)
    );
    let req = Request::builder()
        .method(Method::GET)
        .uri(up.uri(&with_selector(source, &q))?)
        .header(header::ACCEPT, source.accept(false))
        .body(crate::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    // The slot is the stream's place on a watch connection: held as long as the body.
    let (resp, _slot) = up.send_watch(req).await?;
    if !resp.status().is_success() {
        return match resp.status().as_u16() {
            410 => Ok(Ended::Relist),
            s => Err(ServerError::Upstream(format!(
                "watching {}: {s}",
                source.collection
            ))),
        };
    }
    let mut body = resp.into_body();
    let mut line: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ServerError::Upstream(format!("watch stream: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        line.extend_from_slice(&data);
        if line.len() > MAX_EVENT_BYTES {
            return Err(ServerError::Upstream("watch event too large".into()));
        }
        while let Some(nl) = line.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = line.drain(..=nl).collect();
            let ev = parse_event(&raw).map_err(|e| ServerError::Upstream(e.to_string()))?;
            if let WatchEvent::Error { code, message } = &ev {
                return match after_error(*code) {
                    AfterError::Relist => Ok(Ended::Relist),
                    AfterError::Retry => Err(ServerError::Upstream(format!(
                        "watch ended by the apiserver ({code}): {message}"
                    ))),
                };
            }
            *failures = 0;
            if let Some(v) = ev.resource_version() {
                *rv = v.to_string();
            }
            let ev = match ev {
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Added(o) => (source.shape)(o).map(WatchEvent::Added),
                // An object the shape now drops (a label removed, say) leaves the cache.
                WatchEvent::Modified(o) => {
                    let key = key_only(&o);
                    Some((source.shape)(o).map_or(WatchEvent::Deleted(key), WatchEvent::Modified))
                }
                WatchEvent::Deleted(o) => {
                    let key = key_only(&o);
                    Some(WatchEvent::Deleted((source.shape)(o).unwrap_or(key)))
                }
                other => Some(other),
            };
            let Some(ev) = ev else { continue };
            if tx.send((id, Feed::Event(ev))).await.is_err() {
                return Err(ServerError::Internal("reflector's reader gone".into()));
            }
        }
    }
    Ok(Ended::Closed)
}
