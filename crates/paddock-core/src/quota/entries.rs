//! A tenant's quotas: the unscoped `tenant-quota` and its named scoped entries
//! (docs/quota.md), all kept in one ledger so that one compare-and-swap admits a create in
//! every entry it charges at once. Ledger keys: the resource name for `tenant-quota` (as
//! before scoped entries existed), `<entry>[<scopes>]:<resource>` for a scoped entry, so a
//! usage counted under other scopes is never read as this entry's.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::hard::{Hard, QUOTA_NAME, QuotaSpecError, parse_hard, tracked_kinds};
use super::pod::{missing_pod_resources, must_specify};
use super::quantity::{Milli, Usage, UsageError};
use super::scope::{Requirement, ScopedSpec, parse_scoped};
use super::usage::{ChargedKind, usage_of};

/// One quota of a tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `tenant-quota`, or the scoped entry's name.
    pub name: String,
    pub hard: Hard,
    /// Empty for `tenant-quota`.
    pub scopes: Vec<Requirement>,
}

impl Entry {
    pub fn is_scoped(&self) -> bool {
        !self.scopes.is_empty()
    }

    /// Whether the entry charges `obj` (a scoped entry: a pod matching every scope).
    pub fn matches(&self, kind: &ChargedKind<'_>, obj: &Value) -> bool {
        !self.is_scoped()
            || (kind.group.is_empty()
                && kind.resource == "pods"
                && self.scopes.iter().all(|r| r.matches(obj)))
    }

    /// The ledger key of `resource` in this entry.
    pub fn key(&self, resource: &str) -> String {
        if self.is_scoped() {
            format!("{}[{}]:{resource}", self.name, self.describe().join(";"))
        } else {
            resource.to_string()
        }
    }

    /// The scopes as shown: `BestEffort`, `PriorityClass In (high)`.
    pub fn describe(&self) -> Vec<String> {
        self.scopes.iter().map(Requirement::describe).collect()
    }
}

/// Every quota of a tenant: `tenant-quota` first (when it limits anything), then the scoped
/// entries by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Quotas {
    pub entries: Vec<Entry>,
}

impl Quotas {
    /// Only `tenant-quota`.
    pub fn unscoped(hard: Hard) -> Quotas {
        Quotas {
            entries: vec![Entry {
                name: QUOTA_NAME.to_string(),
                hard,
                scopes: Vec::new(),
            }],
        }
    }

    /// Parses what the tenant record holds; `None` when nothing is limited.
    pub fn parse(
        hard: Option<&BTreeMap<String, String>>,
        scoped: &BTreeMap<String, ScopedSpec>,
    ) -> Result<Option<Quotas>, QuotaSpecError> {
        let mut entries = Vec::new();
        if let Some(h) = hard.filter(|h| !h.is_empty()) {
            entries.push(Entry {
                name: QUOTA_NAME.to_string(),
                hard: parse_hard(h)?,
                scopes: Vec::new(),
            });
        }
        for (name, spec) in scoped {
            let (hard, scopes) = parse_scoped(name, spec)?;
            entries.push(Entry {
                name: name.clone(),
                hard,
                scopes,
            });
        }
        Ok((!entries.is_empty()).then_some(Quotas { entries }))
    }

    /// The unscoped entry, if it limits anything.
    pub fn unscoped_entry(&self) -> Option<&Entry> {
        self.entries.iter().find(|e| !e.is_scoped())
    }

    /// Every limited resource: (entry, resource, ledger key, hard).
    pub fn limits(&self) -> impl Iterator<Item = (&Entry, &str, String, Milli)> + '_ {
        self.entries.iter().flat_map(|e| {
            e.hard
                .iter()
                .map(move |(r, h)| (e, r.as_str(), e.key(r), *h))
        })
    }

    /// What `obj` charges, by ledger key: its whole usage under the plain names (as
    /// `tenant-quota` counts it), and the part every matching scoped entry limits under that
    /// entry's keys.
    pub fn charge(&self, kind: &ChargedKind<'_>, obj: &Value) -> Result<Usage, UsageError> {
        let base = usage_of(kind, obj)?;
        let mut out = base.clone();
        for e in self
            .entries
            .iter()
            .filter(|e| e.is_scoped() && e.matches(kind, obj))
        {
            for r in e.hard.keys() {
                if let Some(v) = base.get(r) {
                    out.insert(e.key(r), *v);
                }
            }
        }
        Ok(out)
    }

    /// A recount's usage also knows the scoped entries' zeros: a scoped key absent from the
    /// ledger's count means "not counted under these scopes yet", not zero.
    pub fn known_zeros(&self, counted: &mut Usage) {
        for (e, _, key, _) in self.limits() {
            if e.is_scoped() {
                counted.entry(key).or_default();
            }
        }
    }

    /// The kinds a recount must watch.
    pub fn tracked_kinds(&self) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        for e in &self.entries {
            out.extend(tracked_kinds(&e.hard));
            if e.is_scoped() {
                out.insert((String::new(), "pods".into()));
            }
        }
        out
    }

    /// The apiserver's refusal of a pod that does not state a CPU or memory figure a matching
    /// entry limits: `failed quota: <entry>: must specify requests.cpu for: app`.
    pub fn missing_resources(&self, kind: &ChargedKind<'_>, pod: &Value) -> Option<String> {
        if !(kind.group.is_empty() && kind.resource == "pods") {
            return None;
        }
        self.entries
            .iter()
            .filter(|e| e.matches(kind, pod))
            .find_map(|e| {
                let missing = missing_pod_resources(pod, e.hard.keys().map(String::as_str));
                (!missing.is_empty())
                    .then(|| format!("failed quota: {}: {}", e.name, must_specify(&missing)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::ledger::{Ledger, used_of};
    use serde_json::json;

    fn quotas(hard: Value, scoped: Value) -> Quotas {
        let hard: BTreeMap<String, String> = serde_json::from_value(hard).expect("hard");
        let scoped: BTreeMap<String, ScopedSpec> = serde_json::from_value(scoped).expect("scoped");
        Quotas::parse(Some(&hard), &scoped)
            .expect("valid")
            .expect("some")
    }

    const POD: ChargedKind<'static> = ChargedKind {
        group: "",
        resource: "pods",
    };

    #[test]
    fn a_pod_charges_every_entry_it_matches() {
        let q = quotas(
            json!({"pods": "10", "requests.nvidia.com/gpu": "2"}),
            json!({"besteffort": {"hard": {"pods": "3"}, "scopes": ["BestEffort"]},
                   "gpu-steady": {"hard": {"requests.nvidia.com/gpu": "1", "count/pods": "9"},
                                  "scopes": ["NotTerminating"]}}),
        );
        assert_eq!(q.entries.len(), 3);
        assert_eq!(q.entries[0].name, QUOTA_NAME);
        let gpu_pod = json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}}]}});
        let c = q.charge(&POD, &gpu_pod).expect("charge");
        // BestEffort (no CPU or memory), not terminating: all three
        assert_eq!(c["pods"], Milli::units(1));
        assert_eq!(c["requests.nvidia.com/gpu"], Milli::units(1));
        assert_eq!(c["besteffort[BestEffort]:pods"], Milli::units(1));
        assert_eq!(
            c["gpu-steady[NotTerminating]:requests.nvidia.com/gpu"],
            Milli::units(1)
        );
        assert_eq!(c["gpu-steady[NotTerminating]:count/pods"], Milli::units(1));
        let mut job = gpu_pod.clone();
        job["spec"]["activeDeadlineSeconds"] = json!(60);
        job["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("1");
        let c = q.charge(&POD, &job).expect("charge");
        assert!(!c.keys().any(|k| k.contains('[')), "{c:?}");
        // other kinds never charge a scoped entry
        let cm = ChargedKind {
            group: "",
            resource: "configmaps",
        };
        assert!(
            !q.charge(&cm, &json!({}))
                .expect("charge")
                .keys()
                .any(|k| k.contains('['))
        );
        assert!(q.tracked_kinds().contains(&(String::new(), "pods".into())));
    }

    #[test]
    fn must_specify_names_the_matching_entry() {
        let q = quotas(
            json!({"pods": "10"}),
            json!({"steady": {"hard": {"requests.cpu": "2"}, "scopes": ["NotBestEffort"]}}),
        );
        let be = json!({"spec": {"containers": [{"name": "a"}]}});
        assert_eq!(q.missing_resources(&POD, &be), None);
        let mem_only = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"memory": "1Gi"}}}]}});
        assert_eq!(
            q.missing_resources(&POD, &mem_only).as_deref(),
            Some("failed quota: steady: must specify requests.cpu for: a")
        );
    }

    #[test]
    fn scoped_usage_is_unknown_until_counted() {
        let q = quotas(
            json!({}),
            json!({"be": {"hard": {"pods": "3"}, "scopes": ["BestEffort"]}}),
        );
        assert!(q.unscoped_entry().is_none());
        let e = &q.entries[0];
        let mut ledger = Ledger::default();
        assert!(used_of(e, &ledger).is_empty());
        q.known_zeros(&mut ledger.counted);
        assert_eq!(used_of(e, &ledger)["pods"], Milli(0));
        assert_eq!(Quotas::parse(None, &BTreeMap::new()), Ok(None));
    }
}
