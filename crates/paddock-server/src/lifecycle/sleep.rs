//! A tenant's sleep and wake (docs/operations.md "Sleep and wake"; the decisions are
//! paddock-core's `lifecycle::sleep`, `lifecycle::asleep` and `lifecycle::workloads`, the
//! upstream writes paddock-reconciler's `suspend.rs`).
//!
//! - Every replica, on each request of a tenant ([`noted`]): notes the tenant's activity if the
//!   request counts, sharing it through the store at most once per share interval; asks a
//!   sleeping tenant to wake (its record's sleep phase set to `Waking`, once per replica and
//!   wake). A read is answered at once; a write waits until the tenant is awake
//!   ([`wait_awake`]), so that no write meets a sleeping object.
//! - The leader ([`sleep_loop`]) is the only one that stops or brings back workloads: it
//!   moves every tenant's record on (`FallingAsleep` -> stopped -> `Asleep`; `Waking` ->
//!   brought back -> awake), and puts tenants to sleep whose last activity is older than
//!   their `sleepAfter` (plus a share interval). It reads the store cache only, and the
//!   store's activity of a tenant only when its deadline has come: an idle fleet costs the
//!   apiserver nothing, and the store one read per tenant and `sleepAfter`.
//! - The admin actions `tenant sleep|wake` ([`ask`]) set the phase and wait for the leader.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use paddock_core::TenantId;
use paddock_core::lifecycle::sleep::{counts, sleeps_at};
use paddock_core::lifecycle::workloads::Mark;
use paddock_store::{Sleep, SleepPhase, TenantPhase, TenantRecord};
use paddock_upstream::error::ServerError;

use super::{reconcilers, record, unix_now};
use crate::state::AppState;

/// How long a write of a sleeping tenant waits for the wake; then a 503 says to retry.
const WAKE_WAIT: Duration = Duration::from_secs(30);
/// The `Retry-After` of a write that waited [`WAKE_WAIT`] in vain, in seconds.
const WAKE_RETRY_AFTER: u64 = 5;
/// How long `tenant sleep|wake` waits for the leader.
const ADMIN_WAIT: Duration = Duration::from_secs(60);
/// A sleep or wake that failed upstream is tried again this much later.
const RETRY_AFTER: i64 = 10;
/// The leader's longest sleep (a clock set forward is noticed within it).
const LONGEST_SLEEP: i64 = 300;

/// The `sleepAfter` in force for a tenant, in seconds.
fn sleep_after(state: &AppState, rec: &TenantRecord) -> Option<u64> {
    rec.policy
        .as_ref()
        .unwrap_or(&state.config.default_policy)
        .sleep_after_seconds()
}

/// At the door of every tenant request: notes its activity and wakes a sleeping tenant
/// (module comment). True when the request is a write of a tenant that is not awake: it
/// must wait for the wake ([`wait_awake`]) before it is served.
/// `watch`: the request asks for a watch.
pub fn noted(
    state: &Arc<AppState>,
    tenant: &TenantId,
    user: &str,
    (method, path, watch): (&str, &str, bool),
) -> bool {
    if !counts(method, path, watch, user) {
        return false;
    }
    let Some(rec) = state.cache.tenant(tenant.as_str()) else {
        return false;
    };
    if rec.phase != TenantPhase::Active {
        return false;
    }
    let now = unix_now();
    // Kept only for tenants that sleep by themselves: nobody reads the others'.
    let after = sleep_after(state, &rec);
    if after.is_some() && state.activity.note(tenant, now, after) {
        let (state, t) = (state.clone(), tenant.clone());
        tokio::spawn(async move {
            if let Err(e) = state.store.put_activity(&t, now).await {
                tracing::warn!(tenant = %t, error = %e, "tenant activity not shared");
            }
        });
    }
    let Some(sleep) = &rec.sleep else {
        return false;
    };
    if sleep.phase != SleepPhase::Waking {
        ask_wake(state, tenant);
    }
    paddock_core::lifecycle::door::writes(method, path)
}

/// Asks for tenant `t`'s wake (its record's phase to `Waking`), once at a time per replica.
fn ask_wake(state: &Arc<AppState>, t: &TenantId) {
    if !state.activity.start_waking(t) {
        return;
    }
    let (state, t) = (state.clone(), t.clone());
    tokio::spawn(async move {
        match set_phase(&state, t.as_str(), Some(SleepPhase::Waking)).await {
            Ok(_) => tracing::info!(tenant = %t, "tenant woken by its request"),
            Err(e) => tracing::warn!(tenant = %t, error = %e, "tenant wake not asked"),
        }
        state.activity.done_waking(&t);
    });
}

/// Waits until tenant `t` is awake (its record has no sleep) in this replica's cache; a 503
/// after [`WAKE_WAIT`]. A record that shows it asleep again while waiting (its `Waking` lost
/// to another writer of the record, which writes are last-writer-wins) is asked again.
pub async fn wait_awake(state: &Arc<AppState>, t: &TenantId) -> Result<(), ServerError> {
    let mut changes = state.cache.subscribe();
    let awake = || match state.cache.tenant(t.as_str()) {
        Some(r) => match r.sleep.as_ref().map(|s| s.phase) {
            None => true,
            Some(SleepPhase::Waking) => false,
            Some(_) => {
                ask_wake(state, t);
                false
            }
        },
        None => true,
    };
    let wait = async {
        while !awake() {
            if changes.changed().await.is_err() {
                return;
            }
        }
    };
    match tokio::time::timeout(WAKE_WAIT, wait).await {
        Ok(()) => Ok(()),
        // With Retry-After: kubectl and client-go ask again by themselves.
        Err(_) => Err(ServerError::RetryLater(
            format!(
                "tenant {t} is waking up (its workloads are being brought back); retry the request"
            ),
            WAKE_RETRY_AFTER,
        )),
    }
}

/// Sets tenant `id`'s sleep phase in the store (`None`: awake); returns the record. Asking
/// to wake a tenant that is awake, or to sleep one that is asleep, changes nothing.
async fn set_phase(
    state: &AppState,
    id: &str,
    phase: Option<SleepPhase>,
) -> Result<TenantRecord, ServerError> {
    let mut rec = record(state, id).await?;
    let now = rec.sleep.as_ref().map(|s| s.phase);
    let next = match (now, phase) {
        (None, Some(SleepPhase::Waking)) => return Ok(rec),
        (Some(SleepPhase::Asleep), Some(SleepPhase::FallingAsleep)) => return Ok(rec),
        (a, b) if a == b => return Ok(rec),
        (_, p) => p,
    };
    let since = match (&rec.sleep, next) {
        (Some(s), Some(p)) if p != SleepPhase::FallingAsleep => s.since.clone(),
        _ => paddock_store::now_rfc3339(),
    };
    rec.sleep = next.map(|phase| Sleep { since, phase });
    rec.generation += 1;
    state.store.put_tenant(&rec).await?;
    Ok(rec)
}

/// `tenant sleep` (`asleep`) or `tenant wake`: the phase set, then the leader waited for
/// (at most [`ADMIN_WAIT`]); answers the record as this replica's cache has it then.
pub async fn ask(
    state: &Arc<AppState>,
    id: &str,
    asleep: bool,
) -> Result<TenantRecord, ServerError> {
    let rec = record(state, id).await?;
    if rec.phase != TenantPhase::Active {
        return Err(ServerError::Conflict(format!(
            "tenant {id} is {:?}: only an active tenant sleeps or wakes",
            rec.phase
        )));
    }
    let phase = if asleep {
        SleepPhase::FallingAsleep
    } else {
        SleepPhase::Waking
    };
    set_phase(state, id, Some(phase)).await?;
    let done = |r: &TenantRecord| match &r.sleep {
        None => !asleep,
        Some(s) => asleep && s.phase == SleepPhase::Asleep,
    };
    let mut changes = state.cache.subscribe();
    let wait = async {
        while !state.cache.tenant(id).is_none_or(|r| done(&r)) {
            if changes.changed().await.is_err() {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(ADMIN_WAIT, wait).await;
    Ok(state
        .cache
        .tenant(id)
        .map_or(rec, |r| TenantRecord::clone(&r)))
}

/// While this replica leads: tenants put to sleep and woken.
pub async fn sleep_loop(state: Arc<AppState>) {
    let leadership = state.leadership.clone();
    leadership
        .while_leader("tenant sleep", &state.shutdown, || lead(state.clone()))
        .await;
}

/// What the leader keeps between passes.
#[derive(Default)]
struct Led {
    /// When it gained the leadership: nobody's idleness is counted from before.
    gained: i64,
    /// When it first saw each tenant with a `sleepAfter` (activity is not kept for tenants
    /// without one, so a `sleepAfter` just set counts idleness from then, not from creation).
    enabled: HashMap<TenantId, i64>,
    /// Asleep tenants whose workloads it stopped (again) since it leads.
    stopped: HashSet<TenantId>,
    /// The store's activity of a tenant, as last read.
    stored: HashMap<TenantId, i64>,
    /// Tenants whose sleep or wake failed: not before this time.
    retry: HashMap<TenantId, i64>,
}

async fn lead(state: Arc<AppState>) {
    let mut changes = state.cache.subscribe();
    let mut led = Led {
        gained: unix_now(),
        ..Led::default()
    };
    loop {
        let now = unix_now();
        let mut next = now + LONGEST_SLEEP;
        for rec in state.cache.tenants() {
            if let Some(at) = step(&state, &mut led, &rec, now).await {
                next = next.min(at);
            }
        }
        let wait = Duration::from_secs(u64::try_from(next - now).unwrap_or(0).max(1));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            r = changes.changed() => if r.is_err() { return },
            _ = state.shutdown.cancelled() => return,
        }
    }
}

/// One tenant in one pass of the leader; returns when it wants to look at it again.
async fn step(state: &Arc<AppState>, led: &mut Led, rec: &TenantRecord, now: i64) -> Option<i64> {
    let t = &rec.id;
    if rec.phase != TenantPhase::Active {
        return None;
    }
    if let Some(&at) = led.retry.get(t)
        && at > now
    {
        return Some(at);
    }
    let outcome = match rec.sleep.as_ref().map(|s| s.phase) {
        Some(SleepPhase::Waking) => wake(state, led, t, now).await,
        Some(SleepPhase::FallingAsleep) => fall_asleep(state, led, t).await,
        Some(SleepPhase::Asleep) if !led.stopped.contains(t) => fall_asleep(state, led, t).await,
        Some(SleepPhase::Asleep) => Ok(()),
        // Stopped by this leader, but the record lost its phase to another writer (writes of
        // the record are last-writer-wins): the record is what is wanted.
        None if led.stopped.contains(t) => wake(state, led, t, now).await,
        None => return idle_check(state, led, rec, now).await,
    };
    match outcome {
        Ok(()) => {
            led.retry.remove(t);
            None
        }
        Err(e) => {
            tracing::warn!(tenant = %t, error = %e, "tenant sleep or wake failed; tried again in {RETRY_AFTER} s");
            led.retry.insert(t.clone(), now + RETRY_AFTER);
            Some(now + RETRY_AFTER)
        }
    }
}

/// An awake tenant with a `sleepAfter`: asleep if idle past its deadline (the store's
/// activity read first), else its deadline.
async fn idle_check(
    state: &Arc<AppState>,
    led: &mut Led,
    rec: &TenantRecord,
    now: i64,
) -> Option<i64> {
    let t = &rec.id;
    let Some(after) = sleep_after(state, rec) else {
        led.enabled.remove(t);
        return None;
    };
    let enabled = *led.enabled.entry(t.clone()).or_insert(now);
    let created = paddock_store::unix_of(&rec.created);
    let last = |led: &Led| {
        [
            led.gained,
            enabled,
            created,
            state.activity.last(t).unwrap_or(0),
            led.stored.get(t).copied().unwrap_or(0),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
    };
    if sleeps_at(last(led), after) > now {
        return Some(sleeps_at(last(led), after));
    }
    match state.store.get_activity(t).await {
        Ok(Some(a)) => {
            led.stored.insert(t.clone(), a);
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(tenant = %t, error = %e, "tenant activity unreadable; its sleep waits");
            return Some(now + RETRY_AFTER);
        }
    }
    let at = sleeps_at(last(led), after);
    if at > now {
        return Some(at);
    }
    tracing::info!(tenant = %t, idle_seconds = now - last(led), sleep_after = after, "tenant idle past its sleepAfter: falling asleep");
    if let Err(e) = set_phase(state, t.as_str(), Some(SleepPhase::FallingAsleep)).await {
        tracing::warn!(tenant = %t, error = %e, "tenant sleep not recorded");
        return Some(now + RETRY_AFTER);
    }
    // The record's change brings the loop back to stop its workloads.
    None
}

/// Stops the tenant's workloads on each of its clusters, then records it `Asleep` (unless
/// its record moved on meanwhile: a wake asked).
async fn fall_asleep(
    state: &Arc<AppState>,
    led: &mut Led,
    t: &TenantId,
) -> Result<(), ServerError> {
    let rec = record(state, t.as_str()).await?;
    let mut stopped = 0;
    for r in reconcilers(state, &rec)? {
        stopped += paddock_reconciler::suspend::stop_workloads(&r.upstream, t, Mark::Sleep).await?;
    }
    led.stopped.insert(t.clone());
    let rec = record(state, t.as_str()).await?;
    if rec.sleep.as_ref().map(|s| s.phase) == Some(SleepPhase::FallingAsleep) {
        set_phase(state, t.as_str(), Some(SleepPhase::Asleep)).await?;
        state.metrics.tenant_sleeps.inc();
        tracing::info!(tenant = %t, workloads_stopped = stopped, "tenant asleep");
    }
    Ok(())
}

/// Brings back what the tenant's sleep stopped on each of its clusters, then records it
/// awake; its idleness counts from now.
async fn wake(
    state: &Arc<AppState>,
    led: &mut Led,
    t: &TenantId,
    now: i64,
) -> Result<(), ServerError> {
    let rec = record(state, t.as_str()).await?;
    let mut restored = 0;
    for r in reconcilers(state, &rec)? {
        restored += paddock_reconciler::suspend::wake_workloads(&r.upstream, t).await?;
    }
    led.stopped.remove(t);
    state.activity.note(t, now, None);
    set_phase(state, t.as_str(), None).await?;
    state.metrics.tenant_wakes.inc();
    tracing::info!(tenant = %t, workloads_restored = restored, "tenant awake");
    Ok(())
}
