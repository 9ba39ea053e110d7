//! Scoped entries of a tenant quota (docs/quota.md "Scopes"): a named set of hard limits
//! that charges only the pods matching its scopes, with a ResourceQuota's `spec.scopes` and
//! `spec.scopeSelector` and their semantics (k8s.io/kubernetes pkg/apis/core/validation
//! `validateResourceQuotaScopes` and `validateScopedResourceSelectorRequirement`, the pod
//! evaluator's `podMatchesScopeFunc`): every scope and every selector requirement must match
//! (AND); a pod counts in every entry it matches.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::hard::{Hard, QUOTA_NAME, QuotaSpecError, parse_quantity};
use super::names::{is_dns_label, is_pod_resource, is_standard_quota_resource};
use super::pod;

/// A scoped entry as the platform admin writes it (kept so in the tenant record).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopedSpec {
    /// Resource name to quantity.
    #[serde(default)]
    pub hard: BTreeMap<String, String>,
    /// `BestEffort`, `NotBestEffort`, `Terminating`, `NotTerminating`, `PriorityClass`
    /// (any class), `CrossNamespacePodAffinity`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Requirements on the scopes, e.g. `PriorityClass In (high)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_selector: Option<ScopeSelector>,
}

/// A ResourceQuota's `spec.scopeSelector`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeSelector {
    #[serde(default)]
    pub match_expressions: Vec<ScopeSelectorRequirement>,
}

/// One requirement of a scope selector.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeSelectorRequirement {
    pub scope_name: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub operator: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// A pod scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Terminating,
    NotTerminating,
    BestEffort,
    NotBestEffort,
    PriorityClass,
    CrossNamespacePodAffinity,
}

const SCOPES: &[(Scope, &str)] = &[
    (Scope::Terminating, "Terminating"),
    (Scope::NotTerminating, "NotTerminating"),
    (Scope::BestEffort, "BestEffort"),
    (Scope::NotBestEffort, "NotBestEffort"),
    (Scope::PriorityClass, "PriorityClass"),
    (
        Scope::CrossNamespacePodAffinity,
        "CrossNamespacePodAffinity",
    ),
];

impl Scope {
    pub fn as_str(self) -> &'static str {
        SCOPES
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("", |(_, n)| n)
    }

    fn parse(s: &str) -> Result<Scope, String> {
        if s == "VolumeAttributesClass" {
            return Err("scope VolumeAttributesClass (claims, behind a feature gate) is not offered: a scoped entry holds pods".into());
        }
        SCOPES.iter().find(|(_, n)| *n == s).map(|(x, _)| *x).ok_or_else(|| {
            format!("unsupported scope {s:?} (BestEffort, NotBestEffort, Terminating, NotTerminating, PriorityClass, CrossNamespacePodAffinity)")
        })
    }

    /// `IsResourceQuotaScopeValidForResource` for a standard quota name.
    fn valid_for(self, resource: &str) -> bool {
        match self {
            Scope::BestEffort => resource == "pods",
            _ => matches!(
                resource,
                "pods"
                    | "cpu"
                    | "memory"
                    | "requests.cpu"
                    | "requests.memory"
                    | "limits.cpu"
                    | "limits.memory"
            ),
        }
    }
}

/// A selector operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl Operator {
    fn parse(s: &str) -> Option<Operator> {
        Some(match s {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            _ => return None,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
        }
    }
}

/// One checked requirement (a `scopes` item is `<scope> Exists`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Requirement {
    pub scope: Scope,
    pub operator: Operator,
    pub values: BTreeSet<String>,
}

impl Requirement {
    /// Whether `pod` matches (`podMatchesScopeFunc`; the priority class as a label
    /// selector on `{PriorityClass: <class>}`, no label when the pod names none, so `NotIn`
    /// matches a pod without a class).
    pub fn matches(&self, pod: &Value) -> bool {
        match self.scope {
            Scope::Terminating => pod::is_terminating(pod),
            Scope::NotTerminating => !pod::is_terminating(pod),
            Scope::BestEffort => pod::is_best_effort(pod),
            Scope::NotBestEffort => !pod::is_best_effort(pod),
            Scope::CrossNamespacePodAffinity => pod::uses_cross_namespace_affinity(pod),
            Scope::PriorityClass => {
                let class = pod::priority_class(pod);
                match self.operator {
                    Operator::Exists => class.is_some(),
                    Operator::DoesNotExist => class.is_none(),
                    Operator::In => class.is_some_and(|c| self.values.contains(c)),
                    Operator::NotIn => class.is_none_or(|c| !self.values.contains(c)),
                }
            }
        }
    }

    /// `BestEffort`, `PriorityClass In (high,low)`: how it is shown and keyed.
    pub fn describe(&self) -> String {
        match (self.scope, self.operator) {
            (s, Operator::Exists) if s != Scope::PriorityClass => s.as_str().to_string(),
            (s, op @ (Operator::Exists | Operator::DoesNotExist)) => {
                format!("{} {}", s.as_str(), op.as_str())
            }
            (s, op) => format!(
                "{} {} ({})",
                s.as_str(),
                op.as_str(),
                self.values.iter().cloned().collect::<Vec<_>>().join(",")
            ),
        }
    }
}

/// Checks one scoped entry (`name` as the admin named it) the way the apiserver checks a
/// ResourceQuota's scopes, and more strictly where the apiserver accepts what it never
/// charges: the scopes hold pods only, so every limited name must be one a pod charges.
pub fn parse_scoped(
    name: &str,
    spec: &ScopedSpec,
) -> Result<(Hard, Vec<Requirement>), QuotaSpecError> {
    let err = |m: String| QuotaSpecError::Scoped(name.to_string(), m);
    if !is_dns_label(name) || name == QUOTA_NAME {
        return Err(err(format!(
            "the name must be a DNS label other than {QUOTA_NAME}"
        )));
    }
    let mut reqs = Vec::new();
    for s in &spec.scopes {
        reqs.push(Requirement {
            scope: Scope::parse(s).map_err(|m| err(format!("scopes: {m}")))?,
            operator: Operator::Exists,
            values: BTreeSet::new(),
        });
    }
    for r in spec
        .scope_selector
        .iter()
        .flat_map(|s| &s.match_expressions)
    {
        let scope = Scope::parse(&r.scope_name)
            .map_err(|m| err(format!("scopeSelector.matchExpressions.scopeName: {m}")))?;
        let operator = Operator::parse(&r.operator).ok_or_else(|| {
            err(format!(
                "scopeSelector.matchExpressions.operator: {:?}: not a valid selector operator",
                r.operator
            ))
        })?;
        if scope != Scope::PriorityClass && operator != Operator::Exists {
            return Err(err(format!(
                "scopeSelector.matchExpressions.operator: must be 'Exists' when scope is {}",
                scope.as_str()
            )));
        }
        match (operator, r.values.is_empty()) {
            (Operator::In | Operator::NotIn, true) => {
                return Err(err("scopeSelector.matchExpressions.values: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector".into()));
            }
            (Operator::Exists | Operator::DoesNotExist, false) => {
                return Err(err("scopeSelector.matchExpressions.values: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector".into()));
            }
            _ => {}
        }
        reqs.push(Requirement {
            scope,
            operator,
            values: r.values.iter().cloned().collect(),
        });
    }
    if reqs.is_empty() {
        return Err(err(
            "a scoped entry needs scopes or a scopeSelector (the tenant's unscoped limits are spec.hard)".into(),
        ));
    }
    let has = |s: Scope| reqs.iter().any(|r| r.scope == s);
    if (has(Scope::BestEffort) && has(Scope::NotBestEffort))
        || (has(Scope::Terminating) && has(Scope::NotTerminating))
    {
        return Err(err("conflicting scopes".into()));
    }
    let mut hard = Hard::new();
    for (r, q) in &spec.hard {
        if !is_pod_resource(r) {
            return Err(err(format!(
                "hard[{r}]: a scoped entry limits what pods charge (pods, count/pods, cpu, memory, ephemeral-storage, requests.<those>, limits.<those>, hugepages-<size>, requests.hugepages-<size>, requests.<extended resource>)"
            )));
        }
        if is_standard_quota_resource(r) && reqs.iter().any(|x| !x.scope.valid_for(r)) {
            return Err(err(format!(
                "hard[{r}]: unsupported scope applied to resource"
            )));
        }
        hard.insert(
            r.clone(),
            parse_quantity(r, q).map_err(|e| err(e.to_string()))?,
        );
    }
    reqs.sort();
    reqs.dedup();
    Ok((hard, reqs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: Value) -> ScopedSpec {
        serde_json::from_value(v).expect("spec")
    }

    fn reqs(v: Value) -> Vec<Requirement> {
        parse_scoped("e", &spec(v)).expect("valid").1
    }

    fn matches(v: Value, pod: &Value) -> bool {
        reqs(v).iter().all(|r| r.matches(pod))
    }

    #[test]
    fn scopes_match_as_the_pod_evaluator() {
        let be = json!({"spec": {"containers": [{"name": "a"}]}});
        let burst = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
            "activeDeadlineSeconds": 30, "priorityClassName": "high"}});
        let h = json!({"pods": "3"});
        assert!(matches(json!({"hard": h, "scopes": ["BestEffort"]}), &be));
        assert!(!matches(
            json!({"hard": h, "scopes": ["BestEffort"]}),
            &burst
        ));
        assert!(matches(
            json!({"hard": h, "scopes": ["NotBestEffort"]}),
            &burst
        ));
        assert!(matches(
            json!({"hard": h, "scopes": ["Terminating"]}),
            &burst
        ));
        assert!(matches(
            json!({"hard": h, "scopes": ["NotTerminating"]}),
            &be
        ));
        assert!(matches(
            json!({"hard": h, "scopes": ["PriorityClass"]}),
            &burst
        ));
        assert!(!matches(
            json!({"hard": h, "scopes": ["PriorityClass"]}),
            &be
        ));
        let sel = |op: &str, values: Value| {
            json!({"hard": h, "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": op, "values": values}]}})
        };
        assert!(matches(sel("In", json!(["high", "low"])), &burst));
        assert!(!matches(sel("In", json!(["low"])), &burst));
        assert!(!matches(sel("In", json!(["low"])), &be));
        assert!(matches(sel("NotIn", json!(["low"])), &burst));
        // NotIn matches a pod without a class, as a label selector does
        assert!(matches(sel("NotIn", json!(["high"])), &be));
        assert!(!matches(sel("NotIn", json!(["high"])), &burst));
        assert!(matches(sel("Exists", json!([])), &burst));
        assert!(matches(sel("DoesNotExist", json!([])), &be));
        // every scope must match
        let both = json!({"hard": h, "scopes": ["NotBestEffort", "Terminating"],
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}});
        assert!(matches(both.clone(), &burst));
        let mut no_deadline = burst.clone();
        no_deadline["spec"]["activeDeadlineSeconds"] = Value::Null;
        assert!(!matches(both, &no_deadline));
    }

    #[test]
    fn entries_are_checked_as_the_apiserver_checks_scopes() {
        let bad = |v: Value| {
            parse_scoped("e", &spec(v))
                .map(|_| ())
                .expect_err("refused")
                .to_string()
        };
        assert!(bad(json!({"hard": {"pods": "1"}})).contains("needs scopes"));
        assert!(
            bad(json!({"hard": {"pods": "1"}, "scopes": ["Sometimes"]}))
                .contains("unsupported scope")
        );
        assert!(
            bad(json!({"hard": {"pods": "1"}, "scopes": ["VolumeAttributesClass"]}))
                .contains("not offered")
        );
        assert!(
            bad(json!({"hard": {"pods": "1"}, "scopes": ["BestEffort", "NotBestEffort"]}))
                .contains("conflicting")
        );
        assert!(
            bad(json!({"hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating"]}))
                .contains("conflicting")
        );
        // BestEffort pods have no CPU: requests.cpu under BestEffort is refused, as upstream
        assert!(
            bad(json!({"hard": {"requests.cpu": "1"}, "scopes": ["BestEffort"]}))
                .contains("unsupported scope applied to resource")
        );
        assert!(
            bad(json!({"hard": {"requests.ephemeral-storage": "1"}, "scopes": ["Terminating"]}))
                .contains("unsupported scope applied")
        );
        // what only other kinds charge is never charged under a scope: refused
        assert!(
            bad(json!({"hard": {"count/configmaps": "1"}, "scopes": ["BestEffort"]}))
                .contains("what pods charge")
        );
        assert!(
            bad(json!({"hard": {"pods": "x"}, "scopes": ["BestEffort"]})).contains("quantities")
        );
        let sel = |name: &str, op: &str, values: Value| {
            bad(
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": name, "operator": op, "values": values}]}}),
            )
        };
        assert!(sel("BestEffort", "In", json!(["x"])).contains("must be 'Exists'"));
        assert!(sel("PriorityClass", "In", json!([])).contains("at least one value"));
        assert!(sel("PriorityClass", "Exists", json!(["x"])).contains("must be no value"));
        assert!(sel("PriorityClass", "Near", json!([])).contains("not a valid selector operator"));
        assert!(parse_scoped(QUOTA_NAME, &spec(json!({"scopes": ["BestEffort"]}))).is_err());
        assert!(parse_scoped("Gpu", &spec(json!({"scopes": ["BestEffort"]}))).is_err());
        assert!(serde_json::from_value::<ScopedSpec>(json!({"hard": {}, "scope": []})).is_err());
        // extended resources, count/pods and hugepages-free pod names are fine under scopes
        let (hard, r) = parse_scoped(
            "gpu",
            &spec(
                json!({"hard": {"requests.nvidia.com/gpu": "2", "count/pods": "5", "pods": "4"},
                "scopes": ["NotBestEffort", "NotTerminating"]}),
            ),
        )
        .expect("valid");
        assert_eq!(hard.len(), 3);
        assert_eq!(
            r.iter().map(Requirement::describe).collect::<Vec<_>>(),
            vec!["NotTerminating", "NotBestEffort"]
        );
    }
}
