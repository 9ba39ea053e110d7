//! A tenant's quota (hard limits, in the tenant's view) and its ledger: the usage counted
//! upstream at the last recount plus the reservations of creates admitted since. Admission
//! and recount are pure functions from one ledger to the next; the server stores the ledger
//! with compare-and-swap, so every replica's decision is taken against the latest ledger and
//! two replicas can never both spend the last unit (docs/quota.md).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::quantity::{Milli, QuantityError, is_binary_resource};
use super::usage::Usage;

/// Name of the one quota object a tenant sees (`kubectl get tenantquotas`) and that refusals
/// name (`exceeded quota: tenant-quota, ...`).
pub const QUOTA_NAME: &str = "tenant-quota";

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

/// Hard limits by resource name.
pub type Hard = BTreeMap<String, Milli>;

/// An unknown resource name or a bad quantity in a quota.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaSpecError {
    #[error("spec.hard[{0}]: {1}")]
    Quantity(String, QuantityError),
    #[error("spec.hard[{0}]: must be zero or more")]
    Negative(String),
    #[error(
        "spec.hard[{0}]: not a resource a tenant quota can limit (namespaces, pods, services, services.nodeports, services.loadbalancers, persistentvolumeclaims, requests.storage, <class>.storageclass.storage.k8s.io/requests.storage|persistentvolumeclaims, requests.<r>, limits.<r>, cpu, memory, ephemeral-storage, configmaps, secrets, count/<resource>[.<group>])"
    )]
    UnknownResource(String),
}

const PLAIN_NAMES: &[&str] = &[
    "namespaces",
    "pods",
    "services",
    "services.nodeports",
    "services.loadbalancers",
    "persistentvolumeclaims",
    "requests.storage",
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
    "cpu",
    "memory",
    "ephemeral-storage",
];

fn is_dns_label_ish(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// Whether `name` is a resource a tenant quota can limit.
pub fn is_known_resource(name: &str) -> bool {
    if PLAIN_NAMES.contains(&name) {
        return true;
    }
    if let Some(r) = name
        .strip_prefix("requests.")
        .or_else(|| name.strip_prefix("limits."))
    {
        return matches!(r, "cpu" | "memory" | "ephemeral-storage")
            || (r.starts_with("hugepages-") && name.starts_with("requests."));
    }
    if let Some(r) = name.strip_prefix("count/") {
        return is_dns_label_ish(r);
    }
    if let Some((class, what)) = name.split_once(".storageclass.storage.k8s.io/") {
        return is_dns_label_ish(class)
            && matches!(what, "requests.storage" | "persistentvolumeclaims");
    }
    false
}

/// Parses and checks the hard limits an admin wrote.
pub fn parse_hard(hard: &BTreeMap<String, String>) -> Result<Hard, QuotaSpecError> {
    let mut out = Hard::new();
    for (name, q) in hard {
        if !is_known_resource(name) {
            return Err(QuotaSpecError::UnknownResource(name.clone()));
        }
        let m = Milli::parse(q).map_err(|e| QuotaSpecError::Quantity(name.clone(), e))?;
        if m.0 < 0 {
            return Err(QuotaSpecError::Negative(name.clone()));
        }
        out.insert(name.clone(), m);
    }
    Ok(out)
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

/// Decides one create of an object `uid` charging `charge` against `hard`.
pub fn admit(
    hard: &Hard,
    ledger: &Ledger,
    uid: &str,
    object: &str,
    charge: &Usage,
    now_ms: u64,
) -> Admission {
    let limited: Usage = charge
        .iter()
        .filter(|(k, v)| hard.contains_key(*k) && v.0 != 0)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    if limited.is_empty() || ledger.reservations.contains_key(uid) {
        return Admission::Untouched;
    }
    let used = ledger.used();
    let over: Vec<&String> = limited
        .iter()
        .filter(|(k, v)| {
            let u = used.get(*k).copied().unwrap_or_default();
            u.plus(**v) > hard[*k]
        })
        .map(|(k, _)| k)
        .collect();
    if !over.is_empty() {
        return Admission::Exceeded(exceeded_message(hard, &used, &limited, &over));
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

/// `exceeded quota: tenant-quota, requested: pods=1, used: pods=10, limited: pods=10`, the
/// shape of the apiserver's ResourceQuota refusal.
fn exceeded_message(hard: &Hard, used: &Usage, requested: &Usage, over: &[&String]) -> String {
    let zero = Milli(0);
    format!(
        "exceeded quota: {QUOTA_NAME}, requested: {}, used: {}, limited: {}",
        pairs(over, |n| *requested.get(n).unwrap_or(&zero)),
        pairs(over, |n| *used.get(n).unwrap_or(&zero)),
        pairs(over, |n| *hard.get(n).unwrap_or(&zero)),
    )
}

/// The apiserver's refusal of a pod that does not state a resource the quota limits.
pub fn must_specify_message(missing: &[String]) -> String {
    format!(
        "failed quota: {QUOTA_NAME}: must specify {}",
        missing.join(",")
    )
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

/// Quantities as strings for display (`status.hard`, `status.used`).
pub fn display_map(u: &Usage) -> BTreeMap<String, String> {
    u.iter()
        .map(|(k, v)| (k.clone(), v.display(is_binary_resource(k))))
        .collect()
}

/// Which kinds (group, resource; tenant view) a recount must list to know the usage of the
/// limited resources.
pub fn tracked_kinds(hard: &Hard) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for name in hard.keys() {
        let kind: Option<(&str, String)> = if let Some(r) = name.strip_prefix("count/") {
            Some(match r.split_once('.') {
                Some((res, group)) => (group, res.to_string()),
                None => ("", r.to_string()),
            })
        } else if name == "pods"
            || name.starts_with("requests.") && name != "requests.storage"
            || name.starts_with("limits.")
            || matches!(name.as_str(), "cpu" | "memory" | "ephemeral-storage")
        {
            Some(("", "pods".into()))
        } else if name.starts_with("services") {
            Some(("", "services".into()))
        } else if name == "persistentvolumeclaims"
            || name == "requests.storage"
            || name.contains(".storageclass.storage.k8s.io/")
        {
            Some(("", "persistentvolumeclaims".into()))
        } else {
            PLAIN_NAMES
                .contains(&name.as_str())
                .then(|| ("", name.clone()))
        };
        if let Some((g, r)) = kind {
            out.insert((g.to_string(), r));
        }
    }
    out
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
    fn ledger_round_trips_as_json() {
        let mut l = Ledger::default();
        l.counted.insert("requests.cpu".into(), Milli(1500));
        let s = serde_json::to_string(&l).unwrap();
        assert!(s.contains("\"1500m\""), "{s}");
        assert_eq!(serde_json::from_str::<Ledger>(&s).unwrap(), l);
    }
}
