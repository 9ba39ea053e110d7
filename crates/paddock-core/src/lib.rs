//! paddock-core: the pure translation core of paddock. See API.md for the contract.
//! No I/O, no clock, no tokio: everything here is deterministic and unit-testable.
#![cfg_attr(test, allow(clippy::unwrap_used))]

// Request side (engineer A).
pub mod audit;
pub mod body;
pub mod catalog;
pub mod dupkeys;
pub mod error;
pub mod fairshare;
pub mod identity;
pub mod object;
pub mod patch;
pub mod protobuf;
pub mod request;
pub mod status;
pub mod tenant;

// Response side (engineer B).
pub mod discovery;
pub mod framer;
pub mod fuzzing;
pub mod list;
pub mod openapi;
pub mod response;
pub mod splice;
pub mod table;
pub mod watch;
pub mod wsframe;

pub use response::{ChunkRewriter, etag, response_rewriter};

pub use body::translate_request_body;
pub use catalog::{Catalog, Policy, ResourceInfo, Scope};
pub use error::TranslateError;
pub use identity::{
    Identity, Impersonation, impersonation_for, map_group_down, map_group_up, map_user_down,
    map_user_up,
};
pub use object::{
    Disposition, UpMode, object_down, object_down_as, object_up, object_up_with, text_down,
    text_down_with,
};
pub use request::{
    ApiPath, ParsedRequest, Plan, ResourcePath, ResponseKind, TenantContext, Verb, parse_request,
    plan, response_kind_for, upstream_accept,
};
pub use status::status_body;
pub use tenant::{
    NameKind, TENANT_LABEL, TenantId, TenantIdError, check_prefixed_len, looks_tenant_prefixed,
};
