//! Upstream clusters as a platform resource, and where a new tenant is placed
//! (docs/clusters.md). Pure: names, label selectors and the placement decision; the records,
//! the per-cluster connections and the API live in the store and the gateway.

use std::collections::BTreeMap;

/// The cluster the configured `upstream` is registered as. A paddock with one upstream has
/// only this one, and a tenant record that names no cluster lives on it.
pub const DEFAULT_CLUSTER: &str = "default";

/// Longest cluster name: it appears in Status messages, metrics labels and store keys.
pub const MAX_CLUSTER_NAME: usize = 40;

/// Why a name, selector or placement is refused (answered as a 400 or a 409 `Status`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "cluster name {0:?} is not valid: lowercase letters, digits and '-', starting with a letter, at most 40 characters"
    )]
    InvalidName(String),
    #[error("label selector {0:?} is not valid: {1}")]
    InvalidSelector(String, String),
    #[error(
        "label {0:?}={1:?} is not valid: a key is an optional DNS prefix and '/' and a name, a name and a value at most 63 characters of alphanumerics, '-', '_' and '.', starting and ending with an alphanumeric (a value may be empty)"
    )]
    InvalidLabel(String, String),
    #[error("no cluster matches {0}")]
    NoneMatches(String),
    #[error("cluster {0:?} is not registered")]
    Unknown(String),
    #[error("cluster {0:?} is full ({1} tenants, capacity {2})")]
    Full(String, u32, u32),
}

/// Checks a cluster name (a DNS label starting with a letter, at most [`MAX_CLUSTER_NAME`]).
pub fn check_cluster_name(name: &str) -> Result<(), ClusterError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_CLUSTER_NAME
        && name.as_bytes()[0].is_ascii_lowercase()
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(ClusterError::InvalidName(name.to_string()))
    }
}

/// One requirement of an equality-based label selector (Kubernetes' `a=b`, `a!=b`, `a`, `!a`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
}

/// An equality-based label selector, as `kubectl -l` takes it (`env=prod,tier!=edge,gpu`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    text: String,
    reqs: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses `k=v`, `k==v`, `k!=v`, `k` and `!k`, separated by commas. Set-based forms
    /// (`in`, `notin`) are refused rather than misread.
    pub fn parse(text: &str) -> Result<LabelSelector, ClusterError> {
        let bad = |why: &str| ClusterError::InvalidSelector(text.to_string(), why.to_string());
        let mut reqs = Vec::new();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(bad("empty requirement"));
            }
            if part.contains(" in ") || part.contains(" notin ") || part.contains('(') {
                return Err(bad(
                    "only equality requirements (k=v, k!=v, k, !k) are supported",
                ));
            }
            let req = if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some(k) = part.strip_prefix('!') {
                Requirement::NotExists(k.trim().into())
            } else {
                Requirement::Exists(part.into())
            };
            let (k, v) = match &req {
                Requirement::Equals(k, v) | Requirement::NotEquals(k, v) => (k, v.as_str()),
                Requirement::Exists(k) | Requirement::NotExists(k) => (k, ""),
            };
            if !valid_label_part(k, true) || !valid_label_part(v, false) {
                return Err(bad("a key or value is not a valid label"));
            }
            reqs.push(req);
        }
        Ok(LabelSelector {
            text: text.to_string(),
            reqs,
        })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.reqs.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
    }

    /// The selector as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// Checks a cluster label as Kubernetes checks an object's labels (so that every selector
/// that can name it parses).
pub fn check_label(key: &str, value: &str) -> Result<(), ClusterError> {
    if valid_label_part(key, true) && valid_label_part(value, false) {
        Ok(())
    } else {
        Err(ClusterError::InvalidLabel(
            key.to_string(),
            value.to_string(),
        ))
    }
}

/// A label key (with an optional DNS prefix) or value: at most 63 characters of
/// alphanumerics, `-`, `_`, `.` (a value may be empty).
fn valid_label_part(s: &str, key: bool) -> bool {
    let name = if key {
        match s.rsplit_once('/') {
            Some((prefix, name)) if !prefix.is_empty() && prefix.len() <= 253 => name,
            Some(_) => return false,
            None => s,
        }
    } else {
        s
    };
    if name.is_empty() {
        return !key;
    }
    name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric()
}

/// How the admin asked a tenant to be placed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Placement {
    /// The least loaded cluster with room (the default).
    #[default]
    LeastLoaded,
    /// The least loaded of the clusters whose labels match.
    Selector(LabelSelector),
    /// Exactly these clusters (the first is the tenant's home).
    Names(Vec<String>),
}

impl Placement {
    /// The admin's `--clusters` text: a label selector when it contains `=` or starts with
    /// `!`, else a comma-separated list of names; empty means least loaded.
    pub fn parse(text: &str) -> Result<Placement, ClusterError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Placement::LeastLoaded);
        }
        if text.contains('=') || text.starts_with('!') {
            return LabelSelector::parse(text).map(Placement::Selector);
        }
        let names: Vec<String> = text.split(',').map(|s| s.trim().to_string()).collect();
        for n in &names {
            check_cluster_name(n)?;
        }
        Ok(Placement::Names(names))
    }
}

/// What placement needs to know of one registered cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterLoad {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// Tenants placed on it now.
    pub tenants: u32,
    /// The admin's capacity hint (most tenants it should hold); `None`: unbounded.
    pub capacity: Option<u32>,
}

impl ClusterLoad {
    /// Below its capacity hint (always, without one).
    pub fn has_room(&self) -> bool {
        self.capacity.is_none_or(|c| self.tenants < c)
    }

    /// Load as a fraction of capacity in millis; a cluster without a hint counts its tenants
    /// against 1,000 (so hinted and unhinted clusters compare on one scale).
    fn load_millis(&self) -> u64 {
        let cap = u64::from(self.capacity.unwrap_or(1000).max(1));
        u64::from(self.tenants) * 1_000_000 / cap
    }
}

/// Chooses the clusters of a new tenant: one cluster (the least loaded with room among those
/// allowed), or exactly the named ones. Ties go to the name first in order, so every replica
/// decides the same.
pub fn place(placement: &Placement, clusters: &[ClusterLoad]) -> Result<Vec<String>, ClusterError> {
    match placement {
        Placement::Names(names) => {
            for n in names {
                let c = clusters
                    .iter()
                    .find(|c| &c.name == n)
                    .ok_or_else(|| ClusterError::Unknown(n.clone()))?;
                if !c.has_room() {
                    return Err(ClusterError::Full(
                        c.name.clone(),
                        c.tenants,
                        c.capacity.unwrap_or(0),
                    ));
                }
            }
            Ok(names.clone())
        }
        Placement::LeastLoaded | Placement::Selector(_) => {
            let allowed = |c: &&ClusterLoad| match placement {
                Placement::Selector(s) => s.matches(&c.labels),
                _ => true,
            };
            let what = match placement {
                Placement::Selector(s) => format!("the selector {:?}", s.as_str()),
                _ => "(any cluster)".to_string(),
            };
            let candidates: Vec<&ClusterLoad> = clusters.iter().filter(allowed).collect();
            if candidates.is_empty() {
                return Err(ClusterError::NoneMatches(what));
            }
            candidates
                .into_iter()
                .filter(|c| c.has_room())
                .min_by(|a, b| {
                    a.load_millis()
                        .cmp(&b.load_millis())
                        .then_with(|| a.name.cmp(&b.name))
                })
                .map(|c| vec![c.name.clone()])
                .ok_or_else(|| ClusterError::NoneMatches(format!("{what} with room")))
        }
    }
}

/// The clusters a tenant record names, or the default cluster when it names none (records
/// written before clusters existed).
pub fn tenant_clusters(named: &[String]) -> Vec<&str> {
    if named.is_empty() {
        vec![DEFAULT_CLUSTER]
    } else {
        named.iter().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cluster_labels_are_checked_as_kubernetes_checks_labels() {
        for (k, v) in [("env", "prod"), ("paddock.io/zone", "eu-1"), ("tier", "")] {
            assert!(super::check_label(k, v).is_ok(), "{k}={v}");
        }
        for (k, v) in [
            ("", "x"),
            ("env", "has space"),
            ("-env", "x"),
            ("env", "x,y"),
            ("/env", "x"),
        ] {
            assert!(super::check_label(k, v).is_err(), "{k}={v}");
        }
    }

    use super::*;

    fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn load(name: &str, kv: &[(&str, &str)], tenants: u32, cap: Option<u32>) -> ClusterLoad {
        ClusterLoad {
            name: name.into(),
            labels: labels(kv),
            tenants,
            capacity: cap,
        }
    }

    #[test]
    fn names() {
        for ok in ["default", "eu-1", "a", "prod-west-2"] {
            check_cluster_name(ok).unwrap();
        }
        for bad in ["", "1a", "A", "a_b", "a-", "a.b", &"a".repeat(41)] {
            assert!(check_cluster_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn selectors() {
        let l = labels(&[("env", "prod"), ("region", "eu"), ("gpu", "")]);
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&l);
        assert!(m("env=prod"));
        assert!(m("env==prod,region=eu"));
        assert!(!m("env=prod,region=us"));
        assert!(m("env!=dev"));
        assert!(m("gpu"));
        assert!(!m("!gpu"));
        assert!(m("!spot"));
        assert!(m("example.com/tier!=edge"));
        for bad in ["", "env=prod,", "env in (a,b)", "=x", "a b=c", "env=pr od"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn placement_text() {
        assert_eq!(Placement::parse("").unwrap(), Placement::LeastLoaded);
        assert_eq!(
            Placement::parse("a, b").unwrap(),
            Placement::Names(vec!["a".into(), "b".into()])
        );
        assert!(matches!(
            Placement::parse("env=prod").unwrap(),
            Placement::Selector(_)
        ));
        assert!(Placement::parse("a,B").is_err());
    }

    #[test]
    fn least_loaded_by_count_then_capacity_then_name() {
        let cs = [
            load("b", &[], 3, None),
            load("a", &[], 3, None),
            load("c", &[], 5, None),
        ];
        assert_eq!(place(&Placement::LeastLoaded, &cs).unwrap(), ["a"]);
        // Capacity hints: 30 of 100 is less loaded than 3 of 5.
        let cs = [
            load("small", &[], 3, Some(5)),
            load("big", &[], 30, Some(100)),
        ];
        assert_eq!(place(&Placement::LeastLoaded, &cs).unwrap(), ["big"]);
        // A full cluster is never chosen; all full is an error naming why.
        let cs = [load("x", &[], 2, Some(2)), load("y", &[], 9, None)];
        assert_eq!(place(&Placement::LeastLoaded, &cs).unwrap(), ["y"]);
        let cs = [load("x", &[], 2, Some(2))];
        assert!(place(&Placement::LeastLoaded, &cs).is_err());
        assert!(place(&Placement::LeastLoaded, &[]).is_err());
    }

    #[test]
    fn selector_and_names() {
        let cs = [
            load("dev-1", &[("env", "dev")], 0, None),
            load("prod-1", &[("env", "prod")], 4, None),
            load("prod-2", &[("env", "prod")], 2, None),
        ];
        let sel = Placement::parse("env=prod").unwrap();
        assert_eq!(place(&sel, &cs).unwrap(), ["prod-2"]);
        let none = Placement::parse("env=staging").unwrap();
        assert_eq!(
            place(&none, &cs).unwrap_err().to_string(),
            "no cluster matches the selector \"env=staging\""
        );
        let names = Placement::parse("prod-1,dev-1").unwrap();
        assert_eq!(place(&names, &cs).unwrap(), ["prod-1", "dev-1"]);
        assert_eq!(
            place(&Placement::parse("nope").unwrap(), &cs).unwrap_err(),
            ClusterError::Unknown("nope".into())
        );
    }

    #[test]
    fn records_without_clusters_live_on_default() {
        assert_eq!(tenant_clusters(&[]), [DEFAULT_CLUSTER]);
        assert_eq!(tenant_clusters(&["b".into()]), ["b"]);
    }
}
