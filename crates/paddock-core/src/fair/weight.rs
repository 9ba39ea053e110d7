//! What one admitted request weighs, and how long a refused one waits: the pure parts of the
//! noisy-neighbour design (docs/fairshare.md "Noisy neighbour").
//!
//! - **Seats.** A LIST takes more than one in-flight seat of its tenant, as kube-apiserver's
//!   APF work estimator charges a LIST by the objects it will return (one seat per 100, at
//!   most 10): paddock does not know the count before the answer, so it uses the LIST's
//!   `limit` (already lowered to `maxList`), or `maxList` for a LIST without one.
//! - **Tarpit.** A request refused by a rate limit is answered after a short wait, so a client
//!   that ignores `Retry-After` cannot turn refusals (each of which costs paddock TLS framing
//!   and a `Status`) into load faster than its own concurrency allows.

use crate::fair::share::RequestClass;

/// Objects per seat (APF's work estimator: `objectsPerSeat` = 100).
pub const OBJECTS_PER_SEAT: u32 = 100;
/// Most seats one LIST takes (APF's `maximumSeats` = 10).
pub const MAX_LIST_SEATS: u32 = 10;
/// The objects assumed for a LIST without a `limit` when `maxList` is lifted (0): APF's
/// estimate for a LIST it cannot count is its maximum too.
const UNBOUNDED_LIST_OBJECTS: u32 = OBJECTS_PER_SEAT * MAX_LIST_SEATS;

/// Whether a request path names a collection (a LIST), not one object: after `/api/v1` or
/// `/apis/<group>/<version>`, one segment (`pods`, `namespaces`) or `namespaces/<ns>/<res>`.
pub fn is_collection(path: &str) -> bool {
    // At most 7 segments matter (`apis/g/v/namespaces/ns/r` and one more); no allocation.
    let mut segs = [""; 7];
    let mut n = 0;
    for s in path.trim_matches('/').split('/') {
        if n == segs.len() {
            return false;
        }
        segs[n] = s;
        n += 1;
    }
    let rest = match &segs[..n] {
        ["api", _v, rest @ ..] => rest,
        ["apis", _g, _v, rest @ ..] => rest,
        _ => return false,
    };
    matches!(rest, [_] | ["namespaces", _, _])
}

/// The in-flight seats a request takes: 1, or for a LIST `ceil(objects / 100)` within
/// `1..=10` and at most half of `max_inflight` (so two LISTs of a tenant always fit).
pub fn seats(
    class: RequestClass,
    path: &str,
    query: Option<&str>,
    max_list: u32,
    max_inflight: u32,
) -> u32 {
    if class != RequestClass::Read || !is_collection(path) {
        return 1;
    }
    let asked = query.and_then(|q| {
        form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "limit")
            .and_then(|(_, v)| v.parse::<u32>().ok())
            .filter(|n| *n > 0)
    });
    let objects = match (asked, max_list) {
        (Some(n), 0) => n,
        (Some(n), m) => n.min(m),
        (None, 0) => UNBOUNDED_LIST_OBJECTS,
        (None, m) => m,
    };
    let mut seats = objects.div_ceil(OBJECTS_PER_SEAT).clamp(1, MAX_LIST_SEATS);
    if max_inflight > 0 {
        seats = seats.min((max_inflight / 2).max(1));
    }
    seats
}

/// The work seats a watch open takes until its answer starts: a watch that begins with the
/// collection's current objects (no `resourceVersion`, `resourceVersion=0`, or
/// `sendInitialEvents=true`) weighs as a LIST of it ([`seats`]): the apiserver sends those
/// objects as initial events; a watch from a known version (a reflector after its LIST)
/// weighs 1.
pub fn watch_seats(path: &str, query: Option<&str>, max_list: u32, max_inflight: u32) -> u32 {
    let param = |name: &str| {
        query.and_then(|q| {
            form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    };
    let initial = match param("resourceVersion").as_deref() {
        None | Some("") | Some("0") => true,
        Some(_) => param("sendInitialEvents").as_deref() == Some("true"),
    };
    if !initial {
        return 1;
    }
    seats(RequestClass::Read, path, query, max_list, max_inflight)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collections() {
        for p in [
            "/api/v1/pods",
            "/api/v1/namespaces",
            "/api/v1/namespaces/default/configmaps",
            "/apis/apps/v1/deployments",
            "/apis/apps/v1/namespaces/x/deployments/",
        ] {
            assert!(is_collection(p), "{p}");
        }
        for p in [
            "/api/v1/namespaces/default",
            "/api/v1/namespaces/default/configmaps/probe",
            "/api/v1/nodes/n1/status",
            "/apis/apps/v1",
            "/api",
            "/version",
            "/apis/apps/v1/namespaces/x/deployments/d/scale",
        ] {
            assert!(!is_collection(p), "{p}");
        }
    }

    #[test]
    fn list_seats_follow_the_limit() {
        let list = "/api/v1/namespaces/default/configmaps";
        let get = "/api/v1/namespaces/default/configmaps/probe";
        assert_eq!(seats(RequestClass::Read, get, None, 500, 64), 1);
        assert_eq!(seats(RequestClass::Write, list, None, 500, 64), 1);
        assert_eq!(seats(RequestClass::Watch, list, None, 500, 64), 1);
        assert_eq!(
            seats(RequestClass::Read, list, Some("limit=500"), 500, 64),
            5
        );
        assert_eq!(seats(RequestClass::Read, list, Some("limit=1"), 500, 64), 1);
        assert_eq!(
            seats(RequestClass::Read, list, Some("limit=101"), 500, 64),
            2
        );
        // No limit: maxList, or APF's maximum when maxList is lifted.
        assert_eq!(seats(RequestClass::Read, list, None, 500, 64), 5);
        assert_eq!(seats(RequestClass::Read, list, None, 0, 64), 10);
        assert_eq!(seats(RequestClass::Read, list, Some("limit=0"), 0, 64), 10);
        assert_eq!(
            seats(RequestClass::Read, list, Some("limit=9999"), 0, 64),
            10
        );
        // At most half of maxInflight, at least one.
        assert_eq!(seats(RequestClass::Read, list, None, 500, 4), 2);
        assert_eq!(seats(RequestClass::Read, list, None, 500, 1), 1);
        assert_eq!(seats(RequestClass::Read, list, None, 500, 0), 5);
    }

    #[test]
    fn a_watch_with_initial_events_weighs_as_a_list() {
        let list = "/api/v1/namespaces/default/configmaps";
        assert_eq!(watch_seats(list, Some("watch=true"), 500, 64), 5);
        assert_eq!(
            watch_seats(list, Some("watch=1&resourceVersion=0"), 500, 64),
            5
        );
        assert_eq!(
            watch_seats(list, Some("watch=1&resourceVersion=42"), 500, 64),
            1
        );
        assert_eq!(
            watch_seats(
                list,
                Some("watch=1&resourceVersion=42&sendInitialEvents=true"),
                500,
                64
            ),
            5
        );
        // One object's watch (a field selector is still a collection path: weighed by it).
        assert_eq!(
            watch_seats(
                "/api/v1/namespaces/default/configmaps/x",
                Some("watch=1"),
                500,
                64
            ),
            1
        );
    }
}
