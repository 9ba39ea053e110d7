//! The tenant quota's place in the webhook (docs/quota.md): every create in a
//! tenant namespace (and every tenant Namespace) is sent to paddock, because any kind can be
//! limited by `count/<resource>` and most pods and claims are created by controllers, never
//! through paddock. The decision needs the ledger in the store, so this handler only
//! registers the rule and allows; the server charges the create after every pure handler
//! allowed (paddock-server `admission::server_checks` -> `quota::admit_create`).

use super::{AdmissionRequest, Handler, Phase, Rule, TenantContext, Verdict};

/// Registers creates of every kind for the quota check.
pub struct TenantQuotaCreates;

/// Every namespaced kind, and the tenant's Namespaces (a wildcard rule is namespaced only).
const RULES: &[Rule] = &[
    Rule {
        api_groups: &["*"],
        resources: &["*"],
        operations: &["CREATE"],
    },
    Rule {
        api_groups: &[""],
        resources: &["namespaces"],
        operations: &["CREATE"],
    },
];

impl Handler for TenantQuotaCreates {
    fn name(&self) -> &'static str {
        "tenant-quota"
    }
    fn phase(&self) -> Phase {
        Phase::Validating
    }
    fn rules(&self) -> &'static [Rule] {
        RULES
    }
    fn admit(&self, _req: &AdmissionRequest, _ctx: &TenantContext<'_>) -> Verdict {
        Verdict::Allow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wildcard_rule_is_namespaced_and_namespaces_are_named() {
        let rules: Vec<_> = RULES.iter().map(Rule::to_json).collect();
        assert_eq!(rules[0]["scope"], "Namespaced");
        assert_eq!(rules[1]["resources"][0], "namespaces");
        assert_eq!(rules[1]["scope"], "*");
    }
}
