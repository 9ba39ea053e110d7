//! A tenant's sleep, the pure half (docs/operations.md "Sleep and wake"): which of its
//! requests count as activity (and wake it when asleep), how a policy's `sleepAfter` is read,
//! how often a replica shares what it saw, and when the leader puts an idle tenant to sleep.
//! Times are whole seconds since the Unix epoch, given by the caller (no clock here).
//!
//! **What counts.** Every request of the tenant's users through paddock, except:
//!
//! | request | why it does not count |
//! |---|---|
//! | discovery and metadata: `/api`, `/apis`, `/apis/<group>[/<version>]`, `/api/v1`, `/openapi/...`, `/version`, `/healthz`, `/livez`, `/readyz` | tools and dashboards read them on their own (kubectl's discovery cache, k9s), not a person acting |
//! | watches (`?watch=true`, `/watch/` paths) | a watch stays open for minutes and is re-opened by itself; a tool left open would keep its tenant awake for ever |
//! | reviews (`authorization.k8s.io`, `authentication.k8s.io`: `kubectl auth can-i`, `whoami`) | questions, not work |
//! | paddock's own group (`/apis/paddock.io/...`: the tenant's own record) | a question about the tenant, not work in it |
//! | the tenant's ServiceAccounts (its pods through paddock, docs/inside.md) | the workloads' own traffic: a controller that polls would keep its tenant awake for ever |
//!
//! A request that does not count does not wake a sleeping tenant either.

use crate::lifecycle::door;

/// The user names of a tenant's ServiceAccounts start so (in the tenant's view).
const SERVICE_ACCOUNT_USER: &str = "system:serviceaccount:";

/// Paths that are discovery or metadata, exactly.
const DISCOVERY: [&str; 8] = [
    "/api", "/apis", "/api/v1", "/version", "/healthz", "/livez", "/readyz", "/openapi",
];

/// The longest time between two writes of a tenant's activity by one replica.
pub const MAX_SHARE_INTERVAL: u64 = 60;

/// Whether a request of `user` with `method` on `path` (`watch`: it asks for a watch) counts
/// as the tenant's activity (the module's table).
pub fn counts(method: &str, path: &str, watch: bool, user: &str) -> bool {
    if watch || user.starts_with(SERVICE_ACCOUNT_USER) {
        return false;
    }
    let path = path.trim_end_matches('/');
    if DISCOVERY.contains(&path)
        || path.starts_with("/openapi/")
        || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
        || path.contains("/watch/")
        || path
            .strip_prefix(paddock_api::GROUP_PATH)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        || door::is_review(path)
    {
        return false;
    }
    // `/apis/<group>` and `/apis/<group>/<version>`: a group's discovery.
    let group_discovery = method == "GET"
        && path
            .strip_prefix("/apis/")
            .is_some_and(|rest| rest.split('/').count() <= 2);
    !group_discovery
}

/// How often one replica writes a tenant's activity to the store, at most: a quarter of its
/// `sleepAfter`, between a second and [`MAX_SHARE_INTERVAL`]. The first counted request after
/// a quiet interval is written at once; the ones after it within the interval are not.
pub fn share_interval(sleep_after: u64) -> u64 {
    (sleep_after / 4).clamp(1, MAX_SHARE_INTERVAL)
}

/// Whether a replica that last wrote the tenant's activity at `written` writes it again for
/// a request at `now`.
pub fn share_due(written: Option<i64>, now: i64, sleep_after: u64) -> bool {
    written.is_none_or(|w| now.saturating_sub(w) >= interval_secs(sleep_after))
}

fn interval_secs(sleep_after: u64) -> i64 {
    i64::try_from(share_interval(sleep_after)).unwrap_or(i64::MAX)
}

/// When a tenant last active at `last` (the latest of what the store and this replica know,
/// or when it last woke) falls asleep: `sleepAfter` later, plus one share interval, because
/// another replica may have seen a request up to an interval after the activity it wrote.
/// So a tenant sleeps between `sleepAfter` and `sleepAfter` + the interval after its last
/// counted request, never sooner.
pub fn sleeps_at(last: i64, sleep_after: u64) -> i64 {
    let after = i64::try_from(sleep_after).unwrap_or(i64::MAX);
    last.saturating_add(after)
        .saturating_add(interval_secs(sleep_after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_acting_count_and_tools_watches_reviews_and_pods_do_not() {
        let u = "alice";
        for (method, path) in [
            ("GET", "/api/v1/namespaces/default/pods"),
            ("GET", "/apis/apps/v1/namespaces/default/deployments"),
            ("GET", "/apis/apps/v1/deployments"),
            ("GET", "/api/v1/namespaces"),
            ("POST", "/api/v1/namespaces/default/configmaps"),
            ("PATCH", "/apis/apps/v1/namespaces/x/deployments/d/scale"),
            ("GET", "/api/v1/namespaces/x/pods/p/log"),
            ("DELETE", "/apis/example.com/v1/widgets/w"),
        ] {
            assert!(counts(method, path, false, u), "{method} {path}");
        }
        for (method, path) in [
            ("GET", "/api"),
            ("GET", "/apis"),
            ("GET", "/apis/"),
            ("GET", "/api/v1"),
            ("GET", "/apis/apps"),
            ("GET", "/apis/apps/v1"),
            ("GET", "/openapi/v3/apis/apps/v1"),
            ("GET", "/openapi/v2"),
            ("GET", "/version"),
            ("GET", "/readyz"),
            ("GET", "/api/v1/watch/namespaces/x/pods"),
            (
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            ),
            ("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews"),
            ("GET", "/apis/paddock.io/v1alpha1/tenants/abcdef"),
        ] {
            assert!(!counts(method, path, false, u), "{method} {path}");
        }
        assert!(!counts("GET", "/api/v1/namespaces/x/pods", true, u));
        assert!(!counts(
            "GET",
            "/api/v1/namespaces/x/configmaps",
            false,
            "system:serviceaccount:x:default"
        ));
    }

    #[test]
    fn activity_is_shared_at_most_every_interval_and_sleep_waits_one_more() {
        assert_eq!(share_interval(8), 2);
        assert_eq!(share_interval(2), 1);
        assert_eq!(share_interval(3600), MAX_SHARE_INTERVAL);
        assert!(share_due(None, 100, 8));
        assert!(!share_due(Some(99), 100, 8));
        assert!(share_due(Some(98), 100, 8));
        // Last seen at 100 with sleepAfter 8 s: asleep at 110 (8 s + a 2 s interval).
        assert_eq!(sleeps_at(100, 8), 110);
        assert_eq!(sleeps_at(100, 3600), 100 + 3600 + 60);
    }
}
