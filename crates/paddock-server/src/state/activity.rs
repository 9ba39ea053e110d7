//! The tenants' activity one replica saw, and the wakes it is asking for (docs/operations.md
//! "Sleep and wake"; the decisions are paddock-core's `lifecycle::sleep`, their use
//! `crate::lifecycle::sleep`).

use std::collections::{HashMap, HashSet};

use paddock_core::TenantId;
use paddock_core::lifecycle::sleep::share_due;
use parking_lot::Mutex;

/// One replica's view of its tenants' activity.
#[derive(Debug, Default)]
pub struct Activity {
    /// By tenant: the last counted request seen here, and when this replica last wrote it.
    seen: Mutex<HashMap<TenantId, (i64, Option<i64>)>>,
    /// Tenants whose wake this replica is asking for.
    waking: Mutex<HashSet<TenantId>>,
}

impl Activity {
    /// The last counted request of `t` this replica saw.
    pub fn last(&self, t: &TenantId) -> Option<i64> {
        self.seen.lock().get(t).map(|(last, _)| *last)
    }

    /// Notes a request of `t` at `now`; whether the store should hear of it now.
    pub fn note(&self, t: &TenantId, now: i64, sleep_after: Option<u64>) -> bool {
        let mut seen = self.seen.lock();
        let entry = seen.entry(t.clone()).or_insert((now, None));
        entry.0 = entry.0.max(now);
        let due = sleep_after.is_some_and(|after| share_due(entry.1, now, after));
        if due {
            entry.1 = Some(now);
        }
        due
    }

    /// Whether this replica starts asking for `t`'s wake (false: it is asking already).
    pub fn start_waking(&self, t: &TenantId) -> bool {
        self.waking.lock().insert(t.clone())
    }

    /// This replica's ask for `t`'s wake is done.
    pub fn done_waking(&self, t: &TenantId) {
        self.waking.lock().remove(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_shares_the_first_request_then_once_per_interval() {
        let a = Activity::default();
        let t = TenantId::parse("actv01").unwrap_or_else(|_| unreachable!());
        // sleepAfter 8 s: a 2 s interval.
        assert!(a.note(&t, 100, Some(8)));
        assert!(!a.note(&t, 101, Some(8)));
        assert!(a.note(&t, 102, Some(8)));
        assert_eq!(a.last(&t), Some(102));
        // Never earlier than what was seen; no sleepAfter: noted, never shared.
        assert!(!a.note(&t, 90, None));
        assert_eq!(a.last(&t), Some(102));
        assert!(a.start_waking(&t) && !a.start_waking(&t));
        a.done_waking(&t);
        assert!(a.start_waking(&t));
    }
}
