//! A tenant's suspension, deletion protection and time-to-live as its record holds them
//! (docs/operations.md "Suspend, protection and TTL"); the decisions are paddock-core's
//! `lifecycle`.

use serde::{Deserialize, Serialize};

use crate::{TenantPhase, TenantRecord};

/// Why and since when a tenant is `Suspended`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    /// RFC 3339.
    pub since: String,
    /// Its workloads were stopped too (brought back at resume).
    #[serde(default)]
    pub stop_workloads: bool,
}

/// Where a tenant's sleep stands (docs/operations.md "Sleep and wake"). The record says what
/// is wanted; the leader makes the tenant's clusters follow and moves the phase on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SleepPhase {
    /// Asked (idle past its `sleepAfter`, or `tenant sleep`): its workloads are being stopped.
    FallingAsleep,
    /// Its workloads are stopped.
    Asleep,
    /// Asked to wake (its next request, or `tenant wake`): its workloads are being brought
    /// back; the record loses its `sleep` when they are.
    Waking,
}

/// A tenant's sleep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sleep {
    /// When it was asked to fall asleep (RFC 3339).
    pub since: String,
    pub phase: SleepPhase,
}

/// A time-to-live: the tenant is deleted at `at` unless deletion protection holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Expiry {
    /// When it runs out, RFC 3339.
    pub at: String,
    /// The TTL as it was set, seconds (the warning starts at a tenth of it, or an hour).
    pub ttl_seconds: u64,
}

impl Expiry {
    /// A TTL of `ttl_seconds` counted from `now` (seconds since the epoch).
    pub fn from_now(now: i64, ttl_seconds: u64) -> Expiry {
        let at = now.saturating_add(i64::try_from(ttl_seconds).unwrap_or(i64::MAX));
        Expiry {
            at: rfc3339_of(at),
            ttl_seconds,
        }
    }

    /// `at` as seconds since the epoch; an unreadable time counts as run out long ago (a
    /// record paddock did not write; protection still holds it).
    pub fn at_unix(&self) -> i64 {
        unix_of(&self.at)
    }
}

/// RFC 3339 as seconds since the epoch; 0 when unreadable.
pub fn unix_of(rfc3339: &str) -> i64 {
    time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .map_or(0, time::OffsetDateTime::unix_timestamp)
}

/// Seconds since the epoch as RFC 3339 (UTC, whole seconds).
pub fn rfc3339_of(unix: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

impl TenantPhase {
    /// Not being deleted: `Active` or `Suspended`. A suspended tenant's objects are kept in
    /// place as an active one's (its RBAC mirrors, its namespaces' setup, its grants); only
    /// its writes are refused.
    pub fn is_live(self) -> bool {
        self != TenantPhase::Terminating
    }
}

impl TenantRecord {
    /// Whether the tenant is suspended.
    pub fn is_suspended(&self) -> bool {
        self.phase == TenantPhase::Suspended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expiry_is_counted_from_now_and_read_back() {
        let e = Expiry::from_now(1_767_225_600, 7200);
        assert_eq!(e.at, "2026-01-01T02:00:00Z");
        assert_eq!(e.at_unix(), 1_767_225_600 + 7200);
        let unreadable = Expiry {
            at: "soon".into(),
            ttl_seconds: 1,
        };
        assert_eq!(unreadable.at_unix(), 0);
    }

    #[test]
    fn records_without_the_new_fields_read_and_write_as_before() {
        let old = r#"{"id":"acme01","displayName":"A","labels":{},"phase":"Suspended","created":"2026-01-01T00:00:00Z","generation":3}"#;
        let rec: TenantRecord = serde_json::from_str(old).unwrap();
        assert!(rec.is_suspended() && rec.phase.is_live());
        assert!(!rec.deletion_protection && rec.expiry.is_none() && rec.suspension.is_none());
        let text = serde_json::to_string(&rec).unwrap();
        for absent in ["suspension", "deletionProtection", "expiry"] {
            assert!(!text.contains(absent), "{text}");
        }
        let mut rec = rec;
        rec.deletion_protection = true;
        rec.expiry = Some(Expiry::from_now(0, 60));
        rec.suspension = Some(Suspension {
            since: "2026-01-01T00:00:00Z".into(),
            stop_workloads: true,
        });
        let text = serde_json::to_string(&rec).unwrap();
        assert!(
            text.contains(r#""suspension":{"since":"2026-01-01T00:00:00Z","stopWorkloads":true},"deletionProtection":true,"expiry":{"at":"1970-01-01T00:01:00Z","ttlSeconds":60}"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<TenantRecord>(&text).unwrap(), rec);
        assert!(!TenantPhase::Terminating.is_live());
    }
}
