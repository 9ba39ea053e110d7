//! The replica's short memory of each user's own view (proxy/views, docs/security.md "Each
//! user's own view"): which of the tenant's namespaces are a user's, as upstream's rules
//! reviews said a moment ago. A `kubectl get ns` is then not one review per namespace every
//! time; the memory is short, so a RoleBinding written or removed shows within
//! [`DECISION_TTL`] (plus a watch's re-evaluation interval). Nothing here runs in the
//! background: entries are only read and written by requests.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long one answer about one user is used.
pub const DECISION_TTL: Duration = Duration::from_secs(3);
/// Above this many users remembered, expired ones are dropped at the next write.
const PRUNE_ABOVE: usize = 4096;

#[derive(Default)]
struct UserEntry {
    /// The user's rules where no RoleBinding can be (what holds in every namespace).
    baseline: Option<(Instant, Arc<Value>)>,
    /// Per upstream namespace name: is it the user's?
    namespaces: HashMap<String, (Instant, bool)>,
}

impl UserEntry {
    fn expired(&self, now: Instant) -> bool {
        let old = |at: &Instant| now.duration_since(*at) >= DECISION_TTL;
        self.baseline.as_ref().is_none_or(|(at, _)| old(at))
            && self.namespaces.values().all(|(at, _)| old(at))
    }
}

/// Per user (tenant, user, groups): the recent answers.
#[derive(Default)]
pub struct UserViews {
    users: parking_lot::Mutex<HashMap<String, UserEntry>>,
}

/// The key of one user: tenant, user and groups (sorted), as impersonated upstream.
pub fn user_key(tenant: &str, user: &str, groups: &[String]) -> String {
    let mut g: Vec<&str> = groups.iter().map(String::as_str).collect();
    g.sort_unstable();
    format!("{tenant}\n{user}\n{}", g.join("\n"))
}

impl UserViews {
    /// The remembered baseline of `key`, if recent.
    pub fn baseline(&self, key: &str) -> Option<Arc<Value>> {
        let users = self.users.lock();
        let (at, v) = users.get(key)?.baseline.as_ref()?;
        (at.elapsed() < DECISION_TTL).then(|| v.clone())
    }

    /// The remembered answer for `namespace` (upstream name), if recent.
    pub fn decision(&self, key: &str, namespace: &str) -> Option<bool> {
        let users = self.users.lock();
        let (at, yes) = users.get(key)?.namespaces.get(namespace)?;
        (at.elapsed() < DECISION_TTL).then_some(*yes)
    }

    pub fn put_baseline(&self, key: &str, v: Arc<Value>) {
        self.with_entry(key, |e| e.baseline = Some((Instant::now(), v)));
    }

    pub fn put_decision(&self, key: &str, namespace: &str, yes: bool) {
        self.with_entry(key, |e| {
            e.namespaces
                .insert(namespace.to_owned(), (Instant::now(), yes));
        });
    }

    fn with_entry(&self, key: &str, f: impl FnOnce(&mut UserEntry)) {
        let mut users = self.users.lock();
        if users.len() > PRUNE_ABOVE {
            let now = Instant::now();
            users.retain(|_, e| !e.expired(now));
        }
        let entry = users.entry(key.to_owned()).or_default();
        // Namespaces deleted since are forgotten with their age.
        let now = Instant::now();
        entry
            .namespaces
            .retain(|_, (at, _)| now.duration_since(*at) < DECISION_TTL);
        f(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_per_user_and_namespace() {
        let v = UserViews::default();
        let alice = user_key("t", "alice", &["b".into(), "a".into()]);
        assert_eq!(alice, user_key("t", "alice", &["a".into(), "b".into()]));
        assert_eq!(v.decision(&alice, "t-web"), None);
        v.put_decision(&alice, "t-web", true);
        v.put_decision(&alice, "t-db", false);
        assert_eq!(v.decision(&alice, "t-web"), Some(true));
        assert_eq!(v.decision(&alice, "t-db"), Some(false));
        let bob = user_key("t", "bob", &[]);
        assert_eq!(v.decision(&bob, "t-web"), None);
        assert!(v.baseline(&alice).is_none());
        v.put_baseline(&alice, Arc::new(Value::Null));
        assert!(v.baseline(&alice).is_some());
    }
}
