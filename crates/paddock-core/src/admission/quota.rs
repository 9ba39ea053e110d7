//! The tenant quota's place in the webhook (issue 15, docs/quota.md): every create in a
//! tenant namespace (and every tenant Namespace) is sent to paddock, because any kind can be
//! limited by `count/<resource>` and most pods and claims are created by controllers, never
//! through paddock. The decision needs the ledger in the store, so this handler only
//! registers the rule and allows; the server charges the create after every pure handler
//! allowed (paddock-server `admission::server_checks` -> `quota::admit_create`).

use super::{AdmissionRequest, Handler, Phase, Rule, TenantContext, Verdict};

/// Registers creates of every kind for the quota check.
pub struct TenantQuotaCreates;

const RULES: &[Rule] = &[Rule {
    api_groups: &["*"],
    resources: &["*"],
    operations: &["CREATE"],
}];

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
