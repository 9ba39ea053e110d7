//! A user's own view of namespaces, watched (`kubectl get ns -w`). paddock watches the
//! tenant's namespaces with its own credential and passes on the events of the namespaces the
//! user's view shows. While the watch is open, and only then, the view is evaluated again
//! every [`REEVALUATE_EVERY`]: a namespace that became the user's (a RoleBinding written) is
//! sent as `ADDED`, one that stopped being (its last RoleBinding removed) as `DELETED`, so the
//! client's picture is what a new list would show. Nobody watching costs nothing.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, header};
use http_body_util::BodyExt;
use paddock_core::response::ChunkRewriter;
use paddock_core::response::views as judge;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{answer, list_path, read, view_of};
use crate::proxy::Job;
use crate::proxy::whole::{content_type_of, rewrite_whole};
use crate::state::AppState;
use paddock_upstream::body::BoxError;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::res_body::ResBody;

/// How often an open watch's view is evaluated again (each time one namespace list and, with
/// the decisions' memory expired, one rules review per namespace of the tenant).
const REEVALUATE_EVERY: Duration = Duration::from_secs(5);
/// Largest namespace watch event read.
const MAX_EVENT_BYTES: usize = 4 << 20;

pub(super) async fn serve(
    state: &Arc<AppState>,
    job: Arc<Job>,
    accept: String,
) -> Result<Response<ResBody>, ServerError> {
    let list_path = list_path(&job.ctx, &job.plan)?;
    // The view as the watch opens: what the client's list showed, or would have.
    let (listed, _, raw) = read(state, &list_path, &accept).await?;
    let shown = if listed.is_success() {
        view_of(state, &job, &raw).await?.1
    } else {
        BTreeSet::new()
    };
    let req = Request::builder()
        .method(Method::GET)
        .uri(state.upstream.uri(&job.plan.upstream_path_and_query)?)
        .header(header::ACCEPT, &accept)
        .body(paddock_upstream::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let (resp, slot) = state.upstream.send_watch(req).await?;
    let status = resp.status();
    let ct = content_type_of(&resp);
    if !status.is_success() {
        let raw = collect_limited(resp.into_body(), 1 << 20).await?;
        return answer(
            status,
            &ct,
            rewrite_whole(&job.ctx, &job.plan, status, &ct, &raw)?,
        );
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, BoxError>>(64);
    let rw = paddock_core::response_rewriter(&job.ctx, &job.plan, status.as_u16(), &ct);
    let status_out = status;
    let mut view = View {
        state: state.clone(),
        job,
        list_path,
        accept,
        shown,
        synthesized: HashSet::new(),
        rw,
        tx,
    };
    let guard = crate::observe::metrics::WatchGuard::open(state.metrics.clone());
    tokio::spawn(async move {
        let _guard = guard;
        let _slot = slot;
        if let Err(e) = view.run(resp.into_body()).await {
            tracing::warn!(error = %e, "a user's namespace view watch ended early");
        }
    });
    let mut r = crate::proxy::fanout::streamed(rx, &ct);
    *r.status_mut() = status_out;
    Ok(r)
}

/// One open watch of a user's view.
struct View {
    state: Arc<AppState>,
    job: Arc<Job>,
    list_path: String,
    accept: String,
    /// Upstream names of the namespaces the client has been shown and not told gone.
    shown: BTreeSet<String>,
    /// Namespaces this watch sent an `ADDED` of its own for: upstream's own `ADDED` of one
    /// (the watch a moment behind the list) is not sent twice.
    synthesized: HashSet<String>,
    rw: Box<dyn ChunkRewriter>,
    tx: mpsc::Sender<Result<Bytes, BoxError>>,
}

impl View {
    async fn run(
        &mut self,
        mut body: paddock_upstream::answer_body::AnswerBody,
    ) -> Result<(), ServerError> {
        let lost = self.state.health.lost_token();
        let shutdown = self.state.shutdown.clone();
        let mut tick = tokio::time::interval_at(
            tokio::time::Instant::now() + REEVALUATE_EVERY,
            REEVALUATE_EVERY,
        );
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut line: Vec<u8> = Vec::new();
        loop {
            let frame = tokio::select! {
                f = body.frame() => f,
                _ = tick.tick() => {
                    self.reevaluate().await?;
                    continue;
                }
                _ = shutdown.cancelled() => return Ok(()),
                _ = self.tx.closed() => return Ok(()),
                _ = lost.cancelled() => {
                    let _ = self.tx.send(Ok(paddock_upstream::error::watch_interrupted_event())).await;
                    return Ok(());
                }
            };
            let Some(frame) = frame else {
                return Ok(());
            };
            let frame =
                frame.map_err(|e| ServerError::Upstream(format!("namespace watch: {e}")))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            line.extend_from_slice(&data);
            if line.len() > MAX_EVENT_BYTES {
                return Err(ServerError::Upstream(
                    "namespace watch event too large".into(),
                ));
            }
            while let Some(nl) = line.iter().position(|&b| b == b'\n') {
                let event: Vec<u8> = line.drain(..=nl).collect();
                self.upstream_event(&event).await?;
            }
        }
    }

    /// One upstream event: passed on when it is about a namespace of the view (or about none:
    /// bookmarks, errors), dropped otherwise.
    async fn upstream_event(&mut self, event: &[u8]) -> Result<(), ServerError> {
        let v: Value = serde_json::from_slice(event)
            .map_err(|e| ServerError::Upstream(format!("namespace watch event: {e}")))?;
        if let Some(name) = judge::event_name(&v) {
            if !self.shown.contains(name) {
                return Ok(());
            }
            match v["type"].as_str() {
                Some("ADDED") if self.synthesized.remove(name) => return Ok(()),
                Some("DELETED") => {
                    self.shown.remove(name);
                }
                _ => {}
            }
        }
        self.send(event).await
    }

    /// The view evaluated again: what became the user's is sent as ADDED, what stopped being
    /// (and still exists; a deleted one's DELETED comes from upstream) as DELETED.
    async fn reevaluate(&mut self) -> Result<(), ServerError> {
        let (status, _, raw) = read(&self.state, &self.list_path, &self.accept).await?;
        if !status.is_success() {
            return Err(ServerError::Upstream(format!(
                "listing the tenant's namespaces for a view: {status}"
            )));
        }
        let job = self.job.clone();
        let mut all: Value = serde_json::from_slice(&raw)
            .map_err(|e| ServerError::Upstream(format!("namespace list: {e}")))?;
        let (_, now) = view_of(&self.state, &job, &raw).await?;
        // `all` keeps every namespace, so a DELETED can carry the one that stopped being shown.
        let prefix = job.ctx.tenant.prefix();
        judge::keep_entries(&mut all, |n| n.starts_with(&prefix));
        let (added, removed) = judge::view_changes(&self.shown, &now);
        for (kind, names) in [("ADDED", added), ("DELETED", removed)] {
            for name in names {
                let entry = judge::entries(&all)
                    .iter()
                    .find(|e| judge::item_name(e) == Some(name.as_str()));
                if let Some(entry) = entry {
                    let mut event = serde_json::to_vec(&judge::event_for(kind, &all, entry))
                        .map_err(|e| ServerError::Internal(e.to_string()))?;
                    event.push(b'\n');
                    self.send(&event).await?;
                }
                if kind == "ADDED" {
                    self.synthesized.insert(name.clone());
                    self.shown.insert(name);
                } else {
                    self.synthesized.remove(&name);
                    self.shown.remove(&name);
                }
            }
        }
        Ok(())
    }

    /// One complete event, rewritten for the tenant, to the client.
    async fn send(&mut self, event: &[u8]) -> Result<(), ServerError> {
        let mut out = Vec::new();
        self.rw.feed(event, &mut out)?;
        if !out.is_empty() && self.tx.send(Ok(Bytes::from(out))).await.is_err() {
            // The client went; the loop sees the closed channel.
            return Ok(());
        }
        Ok(())
    }
}
