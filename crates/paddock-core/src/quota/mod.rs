//! Tenant-wide quota (docs/quota.md): the semantics of a ResourceQuota summed over
//! every namespace of a tenant. Pure: quantities, what an object charges, and the ledger's
//! admission and recount decisions. The server stores the ledger (compare-and-swap), answers
//! the admission webhook and runs the recount.

pub mod ledger;
pub mod quantity;
pub mod usage;

pub use ledger::{
    Admission, Hard, Ledger, QUOTA_NAME, QuotaSpecError, RESERVATION_GRACE_MS, Reservation, admit,
    display_map, is_known_resource, must_specify_message, parse_hard, recount, tracked_kinds,
    used_of_hard,
};
pub use quantity::{Milli, QuantityError};
pub use usage::{
    ChargedKind, Usage, UsageError, count_resource, missing_pod_resources, recount_shape, usage_of,
};
