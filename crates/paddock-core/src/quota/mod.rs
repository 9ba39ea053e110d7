//! Tenant-wide quota (docs/quota.md): the semantics of a ResourceQuota summed over
//! every namespace of a tenant, with scoped entries as ResourceQuotas with scopes. Pure:
//! quantities, resource names, what an object charges, scope matching, and the ledger's
//! admission and recount decisions. The server stores the ledger (compare-and-swap),
//! answers the admission webhook and runs the recount.

pub mod entries;
pub mod hard;
pub mod ledger;
pub mod names;
pub mod pod;
pub mod quantity;
pub mod scope;
pub mod usage;

pub use entries::{Entry, Quotas};
pub use ledger::{
    Admission, Hard, Ledger, QUOTA_NAME, QuotaSpecError, RESERVATION_GRACE_MS, Reservation, admit,
    admit_entries, display_map, parse_hard, recount, tracked_kinds, used_of, used_of_hard,
};
pub use names::is_known_resource;
pub use quantity::{Milli, QuantityError};
pub use scope::{ScopeSelector, ScopeSelectorRequirement, ScopedSpec};
pub use usage::{ChargedKind, Usage, UsageError, count_resource, recount_shape, usage_of};
