//! The tenants' activity one replica saw, and the wakes it is asking for (docs/operations.md
//! "Sleep and wake"; the decisions are paddock-core's `lifecycle::sleep`, their use
//! `crate::lifecycle::sleep`); and the users it saw acting in them, for `paddock user list`
//! (docs/security.md "Who is who"; written by `crate::auth::seen`).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

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
    /// By a digest of tenant, sign-in kind and user (no allocation on a request's path; two
    /// users sharing a 64-bit digest would at worst delay one's record by a minute): when
    /// this replica last wrote the user's record, and a digest of the groups it wrote.
    users: Mutex<HashMap<u64, (i64, u64)>>,
}

/// A user's record is written again after this many seconds of use (its `lastSeen` is at
/// most this old while it acts), or at once when its groups change.
pub const USER_NOTE_EVERY: i64 = 60;

/// Users remembered per replica before the memory starts over (each user is then written
/// once more): bounds what a flood of distinct names can cost.
const USERS_REMEMBERED: usize = 50_000;

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

    /// Notes that `user` (signed in as `via`, with `groups`) acted in `t` at `now`; whether
    /// its record should be written now: the first time this replica sees it, when its groups
    /// changed, or [`USER_NOTE_EVERY`] after the last write.
    pub fn user_due(
        &self,
        (t, via, user): (&TenantId, &'static str, &Arc<str>),
        groups: &[String],
        now: i64,
    ) -> bool {
        let digest_of = |v: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            v(&mut h);
            h.finish()
        };
        let key = digest_of(&|h| (t.as_str(), via, &**user).hash(h));
        let digest = digest_of(&|h| groups.hash(h));
        let mut users = self.users.lock();
        if let Some((written, was)) = users.get(&key)
            && *was == digest
            && now - written < USER_NOTE_EVERY
        {
            return false;
        }
        if users.len() >= USERS_REMEMBERED {
            users.clear();
        }
        users.insert(key, (now, digest));
        true
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

    #[test]
    fn a_user_is_written_first_then_once_a_minute_or_when_its_groups_change() {
        let a = Activity::default();
        let t = TenantId::parse("actv01").unwrap_or_else(|_| unreachable!());
        let alice: Arc<str> = "alice".into();
        let devs = ["devs".to_string()];
        let key = (&t, "certificate", &alice);
        assert!(a.user_due(key, &devs, 100));
        assert!(!a.user_due(key, &devs, 159));
        assert!(a.user_due(key, &devs, 160));
        assert!(a.user_due(key, &["ops".to_string()], 161));
        // The same name signed in another way is another identity.
        assert!(a.user_due((&t, "oidc", &alice), &devs, 161));
    }
}
