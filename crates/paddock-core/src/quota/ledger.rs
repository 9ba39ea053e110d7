//! A tenant's quota (hard limits, in the tenant's view) and its ledger: the usage counted
//! upstream at the last recount plus the reservations of creates admitted since. Admission
//! and recount are pure functions from one ledger to the next; the server stores the ledger
//! with compare-and-swap, so every replica's decision is taken against the latest ledger and
//! two replicas can never both spend the last unit (docs/quota.md).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::entries::{Entry, Quotas};
pub use super::hard::{Hard, QUOTA_NAME, QuotaSpecError, parse_hard, tracked_kinds};
use super::quantity::{Milli, Usage, is_binary_resource};

/// How long a reservation waits for its object to appear upstream before it is returned (the
/// create was refused after paddock admitted it, or its object is already gone again).
pub const RESERVATION_GRACE_MS: u64 = 30_000;

impl Serialize for Milli {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}m", self.0))
    }
}

impl<'de> Deserialize<'de> for Milli {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Milli, D::Error> {
        let s = String::deserialize(d)?;
        Milli::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A create admitted and not yet seen upstream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reservation {
    /// What it charges (only the resources the quota limits).
    pub charge: Usage,
    /// When it was admitted (ms since the epoch, the server's clock).
    pub at_ms: u64,
    /// `<resource> <namespace>/<name>`, for people reading the ledger.
    pub object: String,
}

/// A tenant's ledger as stored.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ledger {
    /// Usage of the objects found upstream at the last recount.
    #[serde(default)]
    pub counted: Usage,
    /// When that recount listed upstream (ms since the epoch); 0 = never.
    #[serde(default)]
    pub counted_at_ms: u64,
    /// Creates admitted since, by object uid.
    #[serde(default)]
    pub reservations: BTreeMap<String, Reservation>,
}

impl Ledger {
    /// Usage as admission sees it: counted plus reserved.
    pub fn used(&self) -> Usage {
        let mut u = self.counted.clone();
        for r in self.reservations.values() {
            for (k, v) in &r.charge {
                let slot = u.entry(k.clone()).or_default();
                *slot = slot.plus(*v);
            }
        }
        u
    }
}

/// The outcome of asking to admit one create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Nothing the quota limits is charged (or this uid is already reserved): no write.
    Untouched,
    /// Admitted: store this ledger (compare-and-swap) before answering yes.
    Reserve(Ledger),
    /// Refused: the apiserver-shaped message.
    Exceeded(String),
}

/// Decides one create of an object `uid` charging `charge` against `hard` alone.
pub fn admit(
    hard: &Hard,
    ledger: &Ledger,
    uid: &str,
    object: &str,
    charge: &Usage,
    now_ms: u64,
) -> Admission {
    admit_entries(
        &Quotas::unscoped(hard.clone()),
        ledger,
        uid,
        object,
        charge,
        now_ms,
    )
}

/// Decides one create of an object `uid` charging `charge` (by ledger key:
/// [`Quotas::charge`]) against every entry of `quotas`, as the apiserver's quota admission
/// does over a namespace's ResourceQuotas: a scoped entry whose usage was not counted under
/// its scopes yet refuses (`status unknown for quota`), then the first entry the create would
/// exceed refuses naming it; otherwise the create is reserved in every entry at once.
pub fn admit_entries(
    quotas: &Quotas,
    ledger: &Ledger,
    uid: &str,
    object: &str,
    charge: &Usage,
    now_ms: u64,
) -> Admission {
    let limited_keys: BTreeSet<String> = quotas.limits().map(|(_, _, k, _)| k).collect();
    let limited: Usage = charge
        .iter()
        .filter(|(k, v)| limited_keys.contains(*k) && v.0 != 0)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    if limited.is_empty() || ledger.reservations.contains_key(uid) {
        return Admission::Untouched;
    }
    for e in quotas.entries.iter().filter(|e| e.is_scoped()) {
        let unknown: Vec<&str> = e
            .hard
            .keys()
            .filter(|r| {
                let k = e.key(r);
                limited.contains_key(&k) && !ledger.counted.contains_key(&k)
            })
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Admission::Exceeded(format!(
                "status unknown for quota: {}, resources: {}",
                e.name,
                unknown.join(",")
            ));
        }
    }
    let used = ledger.used();
    let zero = Milli(0);
    for e in &quotas.entries {
        let over: Vec<&String> = e
            .hard
            .iter()
            .filter(|(r, h)| {
                let k = e.key(r);
                limited
                    .get(&k)
                    .is_some_and(|v| used.get(&k).copied().unwrap_or_default().plus(*v) > **h)
            })
            .map(|(r, _)| r)
            .collect();
        if !over.is_empty() {
            return Admission::Exceeded(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                e.name,
                pairs(&over, |r| *limited.get(&e.key(r)).unwrap_or(&zero)),
                pairs(&over, |r| *used.get(&e.key(r)).unwrap_or(&zero)),
                pairs(&over, |r| *e.hard.get(r).unwrap_or(&zero)),
            ));
        }
    }
    let mut next = ledger.clone();
    next.reservations.insert(
        uid.to_string(),
        Reservation {
            charge: limited,
            at_ms: now_ms,
            object: object.to_string(),
        },
    );
    Admission::Reserve(next)
}

fn pairs(names: &[&String], of: impl Fn(&str) -> Milli) -> String {
    names
        .iter()
        .map(|n| format!("{n}={}", of(n).display(is_binary_resource(n))))
        .collect::<Vec<_>>()
        .join(",")
}

/// The next ledger after a recount: `counted` (listed upstream at `listed_at_ms`) replaces the
/// old count; reservations whose object was listed (`seen` uids) are now counted, and those
/// older than the grace period are returned (their object never appeared, or is gone).
pub fn recount(
    ledger: &Ledger,
    counted: Usage,
    seen: &BTreeSet<String>,
    listed_at_ms: u64,
    now_ms: u64,
) -> Ledger {
    let reservations = ledger
        .reservations
        .iter()
        .filter(|(uid, r)| {
            !seen.contains(*uid) && now_ms.saturating_sub(r.at_ms) < RESERVATION_GRACE_MS
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ledger {
        counted,
        counted_at_ms: listed_at_ms,
        reservations,
    }
}

/// `status.used` of the tenant's quota: the usage of every limited resource (zero when none).
pub fn used_of_hard(hard: &Hard, ledger: &Ledger) -> Usage {
    let used = ledger.used();
    hard.keys()
        .map(|k| (k.clone(), used.get(k).copied().unwrap_or_default()))
        .collect()
}

/// `status.used` of an entry: every limited resource counted (with what is reserved);
/// a scoped entry's resources not counted under its scopes yet are left out (unknown,
/// as in a ResourceQuota whose controller has not written its status yet).
pub fn used_of(entry: &Entry, ledger: &Ledger) -> Usage {
    let used = ledger.used();
    entry
        .hard
        .keys()
        .filter_map(|r| {
            let key = entry.key(r);
            if entry.is_scoped() && !ledger.counted.contains_key(&key) {
                return None;
            }
            Some((r.clone(), used.get(&key).copied().unwrap_or_default()))
        })
        .collect()
}

/// Quantities as strings for display (`status.hard`, `status.used`).
pub fn display_map(u: &Usage) -> BTreeMap<String, String> {
    u.iter()
        .map(|(k, v)| (k.clone(), v.display(is_binary_resource(k))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hard(pairs: &[(&str, &str)]) -> Hard {
        parse_hard(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
        .unwrap()
    }

    fn charge(pairs: &[(&str, i64)]) -> Usage {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Milli::units(*v)))
            .collect()
    }

    #[test]
    fn admits_up_to_the_limit_and_refuses_beyond() {
        let h = hard(&[("pods", "2")]);
        let mut l = Ledger::default();
        for i in 0..2 {
            match admit(
                &h,
                &l,
                &format!("u{i}"),
                "pods a/p",
                &charge(&[("pods", 1), ("count/pods", 1)]),
                5,
            ) {
                Admission::Reserve(n) => l = n,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(l.used()["pods"], Milli::units(2));
        // only limited resources are reserved
        assert!(!l.used().contains_key("count/pods"));
        let Admission::Exceeded(msg) = admit(&h, &l, "u9", "pods a/p", &charge(&[("pods", 1)]), 5)
        else {
            panic!()
        };
        assert_eq!(
            msg,
            "exceeded quota: tenant-quota, requested: pods=1, used: pods=2, limited: pods=2"
        );
    }

    #[test]
    fn untracked_charges_and_repeated_uids_write_nothing() {
        let h = hard(&[("pods", "1")]);
        let l = Ledger::default();
        assert_eq!(
            admit(&h, &l, "u", "x", &charge(&[("configmaps", 1)]), 0),
            Admission::Untouched
        );
        let Admission::Reserve(l) = admit(&h, &l, "u", "x", &charge(&[("pods", 1)]), 0) else {
            panic!()
        };
        // the apiserver may call a webhook again for the same object
        assert_eq!(
            admit(&h, &l, "u", "x", &charge(&[("pods", 1)]), 0),
            Admission::Untouched
        );
    }

    #[test]
    fn message_names_every_exceeded_resource_in_kubernetes_units() {
        let h = hard(&[
            ("requests.cpu", "2"),
            ("requests.memory", "1Gi"),
            ("pods", "10"),
        ]);
        let l = Ledger {
            counted: [
                ("requests.cpu".to_string(), Milli(1800)),
                ("requests.memory".to_string(), Milli::parse("1Gi").unwrap()),
            ]
            .into(),
            ..Ledger::default()
        };
        let c: Usage = [
            ("requests.cpu".to_string(), Milli(500)),
            ("requests.memory".to_string(), Milli::parse("64Mi").unwrap()),
            ("pods".to_string(), Milli::units(1)),
        ]
        .into();
        let Admission::Exceeded(msg) = admit(&h, &l, "u", "x", &c, 0) else {
            panic!()
        };
        assert_eq!(
            msg,
            "exceeded quota: tenant-quota, requested: requests.cpu=500m,requests.memory=64Mi, used: requests.cpu=1800m,requests.memory=1Gi, limited: requests.cpu=2,requests.memory=1Gi"
        );
    }

    #[test]
    fn recount_keeps_pending_reservations_and_returns_stale_ones() {
        let h = hard(&[("pods", "5")]);
        let mut l = Ledger::default();
        for (uid, at) in [("seen", 0), ("pending", 90_000), ("stale", 10_000)] {
            let Admission::Reserve(n) = admit(&h, &l, uid, "x", &charge(&[("pods", 1)]), at) else {
                panic!()
            };
            l = n;
        }
        let seen: BTreeSet<String> = ["seen".to_string()].into();
        let next = recount(&l, charge(&[("pods", 1)]), &seen, 95_000, 100_000);
        assert_eq!(
            next.reservations.keys().collect::<Vec<_>>(),
            vec!["pending"]
        );
        // counted 1 (the seen object) + 1 pending
        assert_eq!(next.used()["pods"], Milli::units(2));
        assert_eq!(used_of_hard(&h, &next)["pods"], Milli::units(2));
    }

    #[test]
    fn specs_refuse_unknown_names_and_bad_quantities() {
        let bad = |k: &str, v: &str| parse_hard(&[(k.to_string(), v.to_string())].into()).is_err();
        assert!(bad("pods", "ten"));
        assert!(bad("pods", "-1"));
        assert!(bad("nodes", "1"));
        assert!(bad("count/", "1"));
        assert!(bad("limits.hugepages-2Mi", "1"));
        assert!(!bad("count/widgets.example.com", "5"));
        assert!(!bad(
            "fast.storageclass.storage.k8s.io/requests.storage",
            "10Gi"
        ));
        assert!(!bad("requests.hugepages-2Mi", "1Gi"));
    }

    #[test]
    fn tracked_kinds_follow_the_limited_names() {
        let h = hard(&[
            ("pods", "1"),
            ("limits.memory", "1Gi"),
            ("count/widgets.example.com", "1"),
            ("services.nodeports", "0"),
            (
                "fast.storageclass.storage.k8s.io/persistentvolumeclaims",
                "1",
            ),
            ("namespaces", "3"),
            ("count/configmaps", "20"),
        ]);
        let k: Vec<(String, String)> = tracked_kinds(&h).into_iter().collect();
        let want: Vec<(String, String)> = [
            ("", "configmaps"),
            ("", "namespaces"),
            ("", "persistentvolumeclaims"),
            ("", "pods"),
            ("", "services"),
            ("example.com", "widgets"),
        ]
        .iter()
        .map(|(g, r)| (g.to_string(), r.to_string()))
        .collect();
        assert_eq!(k, want);
    }

    #[test]
    fn entries_are_admitted_together_and_refused_by_name() {
        let scoped: BTreeMap<String, super::super::ScopedSpec> = serde_json::from_value(
            serde_json::json!({"besteffort": {"hard": {"pods": "2"}, "scopes": ["BestEffort"]}}),
        )
        .unwrap();
        let q = Quotas::parse(
            Some(&[("requests.nvidia.com/gpu".to_string(), "2".to_string())].into()),
            &scoped,
        )
        .unwrap()
        .unwrap();
        let pod = super::super::ChargedKind {
            group: "",
            resource: "pods",
        };
        let be = serde_json::json!({"spec": {"containers": [{"name": "a"}]}});
        let c = q.charge(&pod, &be).unwrap();
        let mut l = Ledger::default();
        // not counted under its scopes yet: refused, as a ResourceQuota without a status
        let Admission::Exceeded(msg) = admit_entries(&q, &l, "p0", "x", &c, 0) else {
            panic!()
        };
        assert_eq!(msg, "status unknown for quota: besteffort, resources: pods");
        q.known_zeros(&mut l.counted);
        for i in 0..2 {
            let Admission::Reserve(n) = admit_entries(&q, &l, &format!("p{i}"), "x", &c, 0) else {
                panic!()
            };
            l = n;
        }
        let Admission::Exceeded(msg) = admit_entries(&q, &l, "p9", "x", &c, 0) else {
            panic!()
        };
        assert_eq!(
            msg,
            "exceeded quota: besteffort, requested: pods=1, used: pods=2, limited: pods=2"
        );
        // a GPU pod is not BestEffort... unless it states no CPU or memory: give it some
        let gpu = serde_json::json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"cpu": "100m", "nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}}}]}});
        let c = q.charge(&pod, &gpu).unwrap();
        let Admission::Reserve(l2) = admit_entries(&q, &l, "g1", "x", &c, 0) else {
            panic!()
        };
        let Admission::Exceeded(msg) = admit_entries(&q, &l2, "g2", "x", &c, 0) else {
            panic!()
        };
        assert_eq!(
            msg,
            "exceeded quota: tenant-quota, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2"
        );
        let e = &q.entries[1];
        assert_eq!(used_of(e, &l2)["pods"], Milli::units(2));
    }

    #[test]
    fn extended_limits_are_refused_with_the_reason() {
        let e = parse_hard(&[("limits.nvidia.com/gpu".to_string(), "1".to_string())].into())
            .unwrap_err();
        assert!(matches!(e, QuotaSpecError::ExtendedLimit(_)), "{e}");
        assert!(e.to_string().contains("requests.<name> only"));
    }

    #[test]
    fn ledger_round_trips_as_json() {
        let mut l = Ledger::default();
        l.counted.insert("requests.cpu".into(), Milli(1500));
        let s = serde_json::to_string(&l).unwrap();
        assert!(s.contains("\"1500m\""), "{s}");
        assert_eq!(serde_json::from_str::<Ledger>(&s).unwrap(), l);
    }
}
