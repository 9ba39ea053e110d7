//! A tenant's time-to-live: when it is due for deletion, when `paddock tenant list` warns, and
//! what deletion protection does to it. Times are whole seconds since the Unix epoch, given by
//! the caller (no clock here).
//!
//! The warning starts when the time left is at most a tenth of the TTL or one hour, whichever
//! is longer: a day-long TTL warns for its last 2.4 hours, a two-hour one for its last hour,
//! and one of a few minutes from the start. A tenant whose TTL has run out but whose deletion
//! protection is on is not deleted (protection wins) and is listed as held.

/// The least warning time: an hour.
pub const WARN_AT_LEAST: u64 = 3600;

/// Where a tenant with a TTL stands at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Still running, `left` seconds to go; `warn`: close enough to say so.
    Running { left: u64, warn: bool },
    /// Run out: the leader deletes it.
    Due,
    /// Run out `over` seconds ago, but deletion protection holds it.
    Held { over: u64 },
}

/// The verdict for a tenant whose TTL of `ttl` seconds ends at `expires`, at `now`.
pub fn verdict(expires: i64, ttl: u64, protected: bool, now: i64) -> Verdict {
    if now < expires {
        let left = expires.abs_diff(now);
        return Verdict::Running {
            left,
            warn: left <= warn_window(ttl),
        };
    }
    if protected {
        Verdict::Held {
            over: now.abs_diff(expires),
        }
    } else {
        Verdict::Due
    }
}

/// How long before the end the warning starts: a tenth of the TTL, at least an hour.
pub fn warn_window(ttl: u64) -> u64 {
    (ttl / 10).max(WARN_AT_LEAST)
}

/// The earliest of the `(expires, protected)` deadlines still to come or due now, for the loop
/// that deletes expired tenants: it sleeps until then. Held tenants (protected and run out) are
/// not waited for: their record changes when the protection is lifted, which wakes the loop.
pub fn next_deadline(tenants: impl IntoIterator<Item = (i64, bool)>, now: i64) -> Option<i64> {
    tenants
        .into_iter()
        .filter(|&(expires, protected)| !(protected && expires <= now))
        .map(|(expires, _)| expires)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ttl_runs_warns_then_is_due_unless_protected() {
        // Two hours: the last hour warns.
        let ttl = 7200;
        assert_eq!(
            verdict(10_000, ttl, false, 10_000 - 3601),
            Verdict::Running {
                left: 3601,
                warn: false
            }
        );
        assert_eq!(
            verdict(10_000, ttl, false, 10_000 - 3600),
            Verdict::Running {
                left: 3600,
                warn: true
            }
        );
        assert_eq!(verdict(10_000, ttl, false, 10_000), Verdict::Due);
        assert_eq!(
            verdict(10_000, ttl, true, 10_005),
            Verdict::Held { over: 5 }
        );
        // A day: a tenth is longer than an hour.
        assert_eq!(warn_window(86_400), 8_640);
        // Seconds: warned from the start.
        assert_eq!(
            verdict(100, 8, false, 93),
            Verdict::Running {
                left: 7,
                warn: true
            }
        );
    }

    #[test]
    fn the_loop_waits_for_the_earliest_deadline_but_not_for_held_tenants() {
        assert_eq!(next_deadline([], 50), None);
        assert_eq!(
            next_deadline([(90, false), (70, true), (80, false)], 50),
            Some(70)
        );
        // Run out and protected: held, not a deadline (the loop would spin on it).
        assert_eq!(next_deadline([(40, true), (90, false)], 50), Some(90));
        // Run out and unprotected: due now.
        assert_eq!(next_deadline([(40, false), (90, false)], 50), Some(40));
    }
}
