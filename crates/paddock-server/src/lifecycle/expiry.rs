//! The leader's loop that deletes tenants whose time-to-live has run out (docs/operations.md
//! "Suspend, protection and TTL"). It reads only the store cache, never the apiserver: it
//! sleeps until the earliest deadline of a live tenant (core `lifecycle::expiry`), or until
//! the cache changes (a TTL set, changed or lifted, protection lifted), and then starts the
//! deletion of every tenant due, as `tenant delete` does. A protected tenant is not deleted;
//! its deadline is not waited for either (the loop would spin), its record changing is.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::lifecycle::expiry::{Verdict, next_deadline, verdict};

use crate::state::AppState;

/// A deletion that failed is tried again this much later.
const RETRY_AFTER: i64 = 30;
/// The longest sleep (a clock set forward is noticed within it).
const LONGEST_SLEEP: i64 = 300;

/// While this replica leads: tenants deleted as their TTL runs out.
pub async fn expiry_loop(state: Arc<AppState>) {
    let leadership = state.leadership.clone();
    leadership
        .while_leader("tenant TTL", &state.shutdown, || {
            expire_leading(state.clone())
        })
        .await;
}

async fn expire_leading(state: Arc<AppState>) {
    let mut changes = state.cache.subscribe();
    // Tenants whose deletion failed: not before this time.
    let mut retry: HashMap<String, i64> = HashMap::new();
    loop {
        let now = super::unix_now();
        let mut deadlines = Vec::new();
        for rec in state.cache.tenants() {
            let Some(e) = rec.expiry.as_ref().filter(|_| rec.phase.is_live()) else {
                continue;
            };
            let id = rec.id.as_str();
            let at = e.at_unix();
            let not_before = retry.get(id).copied().unwrap_or(i64::MIN);
            if verdict(at, e.ttl_seconds, rec.deletion_protection, now) == Verdict::Due
                && not_before <= now
            {
                match super::start_deletion(&state, id).await {
                    Ok(_) => {
                        state.metrics.ttl_deletions.inc();
                        retry.remove(id);
                        tracing::info!(tenant = id, expired = %e.at, "tenant TTL ran out: deletion started");
                        continue;
                    }
                    Err(err) => {
                        tracing::warn!(tenant = id, error = %err, "tenant TTL ran out but its deletion could not start; retried in {RETRY_AFTER} s");
                        retry.insert(id.to_owned(), now + RETRY_AFTER);
                    }
                }
            }
            deadlines.push((
                at.max(retry.get(id).copied().unwrap_or(at)),
                rec.deletion_protection,
            ));
        }
        let wake = next_deadline(deadlines, now)
            .unwrap_or(i64::MAX)
            .min(now + LONGEST_SLEEP);
        let sleep = Duration::from_secs(u64::try_from(wake - now).unwrap_or(0).max(1));
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            r = changes.changed() => if r.is_err() { return },
            _ = state.shutdown.cancelled() => return,
        }
    }
}
