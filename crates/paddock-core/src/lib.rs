//! paddock-core: the pure translation core of paddock. See API.md for the contract.
//! No I/O, no clock, no tokio: everything here is deterministic and unit-testable.

// Request side (engineer A).
pub mod body;
pub mod catalog;
pub mod error;
pub mod identity;
pub mod object;
pub mod patch;
pub mod protobuf;
pub mod request;
pub mod status;
pub mod tenant;

// Response side (engineer B).
pub mod framer;
pub mod list;
pub mod watch;

pub use body::translate_request_body;
pub use catalog::{Catalog, Policy, ResourceInfo, Scope};
pub use error::TranslateError;
pub use identity::{
    Identity, Impersonation, impersonation_for, map_group_down, map_group_up, map_user_down,
    map_user_up,
};
pub use object::{Disposition, object_down, object_up, text_down};
pub use request::{
    ApiPath, ParsedRequest, Plan, ResourcePath, ResponseKind, TenantContext, Verb, parse_request,
    plan, response_kind_for, upstream_accept,
};
pub use status::status_body;
pub use tenant::{
    NameKind, TENANT_LABEL, TenantId, TenantIdError, check_prefixed_len, looks_tenant_prefixed,
};
