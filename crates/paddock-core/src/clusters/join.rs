//! Clusters joining and leaving a spanning tenant by label (issue 39; docs/clusters.md
//! "Clusters joining by label"): the decisions, without I/O. The server's leader applies them
//! (`clusters/span_join.rs`).
//!
//! A tenant created with a span selector lives on the clusters it was placed on plus every
//! registered cluster whose labels match the selector, now or later. The rule when a joined
//! cluster's labels stop matching (relabelled): it **drains**. No new namespace of the tenant
//! is placed there (unlabelled creates go elsewhere; a create labelled for it is refused),
//! the namespaces already there keep working (a namespace does not move between clusters:
//! moving one is a migration of its objects, issue 41), and once the tenant holds no
//! namespace there its set-up there (roles, RBAC, replicated cluster-scoped objects) is
//! removed and the cluster leaves the tenant's record. Matching again before that undoes the
//! drain. A cluster that is not ready is left as it is either way: an outage is not a
//! relabelling.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::cluster::{ClusterError, LabelSelector};

/// A tenant's span selector and what it has done so far (kept in the tenant record).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanJoin {
    /// Equality-based label selector over the clusters' labels (placement's forms).
    pub selector: String,
    /// Clusters that joined because they matched (not named when the tenant was created).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub joined: BTreeSet<String>,
    /// Joined clusters whose labels no longer match: leaving once the tenant holds no
    /// namespace there.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub draining: BTreeSet<String>,
}

impl SpanJoin {
    /// A new span selector, checked.
    pub fn new(selector: &str) -> Result<SpanJoin, ClusterError> {
        let parsed = LabelSelector::parse(selector)?;
        Ok(SpanJoin {
            selector: parsed.as_str().to_string(),
            ..SpanJoin::default()
        })
    }

    /// Whether new namespaces may be placed on `cluster`.
    pub fn takes_namespaces(&self, cluster: &str) -> bool {
        !self.draining.contains(cluster)
    }
}

/// A registered cluster as the join decision sees it.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    /// Ready on the deciding replica (bootstrapped, answering).
    pub ready: bool,
    /// Below its capacity hint.
    pub has_room: bool,
}

/// One change to a tenant's clusters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinStep {
    /// Provision the tenant there and add the cluster to its record.
    Join(String),
    /// Stop placing namespaces there.
    Drain(String),
    /// Its labels match again: place namespaces there again.
    Undrain(String),
    /// Drained and holding none of the tenant's namespaces: remove the tenant's set-up there
    /// and the cluster from the record.
    Leave(String),
}

/// What to change for one tenant: `clusters` are the tenant's clusters (home first),
/// `registered` every registered cluster, `namespaces_on` how many of the tenant's
/// namespaces each cluster holds. The home and the clusters named at creation never drain.
pub fn join_steps(
    span: &SpanJoin,
    clusters: &[String],
    registered: &[Candidate<'_>],
    namespaces_on: &BTreeMap<String, usize>,
) -> Result<Vec<JoinStep>, ClusterError> {
    let selector = LabelSelector::parse(&span.selector)?;
    let mut steps = Vec::new();
    for c in registered.iter().filter(|c| c.ready) {
        let member = clusters.iter().any(|n| n == c.name);
        let matches = selector.matches(c.labels);
        if !member && matches && c.has_room {
            steps.push(JoinStep::Join(c.name.to_string()));
        }
        if !span.joined.contains(c.name) || clusters.first().is_some_and(|h| h == c.name) {
            continue;
        }
        let draining = span.draining.contains(c.name);
        let held = namespaces_on.get(c.name).copied().unwrap_or(0);
        if matches && draining {
            steps.push(JoinStep::Undrain(c.name.to_string()));
        } else if !matches && !draining {
            steps.push(JoinStep::Drain(c.name.to_string()));
        } else if !matches && held == 0 {
            steps.push(JoinStep::Leave(c.name.to_string()));
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn span(joined: &[&str], draining: &[&str]) -> SpanJoin {
        SpanJoin {
            selector: "region=eu".into(),
            joined: joined.iter().map(|s| s.to_string()).collect(),
            draining: draining.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_matching_cluster_joins_and_a_non_matching_or_unready_one_does_not() {
        let (eu, us) = (labels(&[("region", "eu")]), labels(&[("region", "us")]));
        let reg = [
            Candidate {
                name: "default",
                labels: &BTreeMap::new(),
                ready: true,
                has_room: true,
            },
            Candidate {
                name: "west",
                labels: &eu,
                ready: true,
                has_room: true,
            },
            Candidate {
                name: "far",
                labels: &us,
                ready: true,
                has_room: true,
            },
            Candidate {
                name: "late",
                labels: &eu,
                ready: false,
                has_room: true,
            },
            Candidate {
                name: "full",
                labels: &eu,
                ready: true,
                has_room: false,
            },
        ];
        let steps = join_steps(
            &span(&[], &[]),
            &names(&["default"]),
            &reg,
            &BTreeMap::new(),
        );
        assert_eq!(steps, Ok(vec![JoinStep::Join("west".into())]));
        // Already a member: nothing.
        let steps = join_steps(
            &span(&["west"], &[]),
            &names(&["default", "west"]),
            &reg,
            &BTreeMap::new(),
        );
        assert_eq!(steps, Ok(vec![]));
    }

    #[test]
    fn a_relabelled_cluster_drains_then_leaves_when_empty_or_comes_back() {
        let us = labels(&[("region", "us")]);
        let eu = labels(&[("region", "eu")]);
        let relabelled = [Candidate {
            name: "west",
            labels: &us,
            ready: true,
            has_room: true,
        }];
        let tenant = names(&["default", "west"]);
        let held: BTreeMap<String, usize> = [("west".to_string(), 2)].into();
        let steps = join_steps(&span(&["west"], &[]), &tenant, &relabelled, &held);
        assert_eq!(steps, Ok(vec![JoinStep::Drain("west".into())]));
        // Draining, namespaces still there: nothing until they are gone.
        let steps = join_steps(&span(&["west"], &["west"]), &tenant, &relabelled, &held);
        assert_eq!(steps, Ok(vec![]));
        let steps = join_steps(
            &span(&["west"], &["west"]),
            &tenant,
            &relabelled,
            &BTreeMap::new(),
        );
        assert_eq!(steps, Ok(vec![JoinStep::Leave("west".into())]));
        // Matching again while draining.
        let back = [Candidate {
            name: "west",
            labels: &eu,
            ready: true,
            has_room: true,
        }];
        let steps = join_steps(&span(&["west"], &["west"]), &tenant, &back, &held);
        assert_eq!(steps, Ok(vec![JoinStep::Undrain("west".into())]));
        // Not ready: an outage is not a relabelling.
        let down = [Candidate {
            name: "west",
            labels: &us,
            ready: false,
            has_room: true,
        }];
        assert_eq!(
            join_steps(&span(&["west"], &[]), &tenant, &down, &held),
            Ok(vec![])
        );
    }

    #[test]
    fn named_clusters_and_the_home_never_drain() {
        let us = labels(&[("region", "us")]);
        let reg = [
            Candidate {
                name: "default",
                labels: &us,
                ready: true,
                has_room: true,
            },
            Candidate {
                name: "east",
                labels: &us,
                ready: true,
                has_room: true,
            },
        ];
        let steps = join_steps(
            &span(&[], &[]),
            &names(&["default", "east"]),
            &reg,
            &BTreeMap::new(),
        );
        assert_eq!(steps, Ok(vec![]));
    }

    #[test]
    fn a_bad_selector_is_refused_when_set() {
        assert!(SpanJoin::new("region in (eu)").is_err());
        assert_eq!(
            SpanJoin::new("region=eu").map(|s| s.selector),
            Ok("region=eu".into())
        );
    }
}
