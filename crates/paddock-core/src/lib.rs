//! paddock-core: paddock's pure decisions. See API.md for the contract.
//! No I/O, no clock, no tokio: everything here is deterministic and unit-testable.
//!
//! Translation (a request in the tenant's view, upstream and back):
//! - [`tenant`] (ids and the name prefix), [`identity`] (users, groups, `--as`, access
//!   reviews), [`catalog`] (what the upstream serves and the policy per resource);
//! - [`request`]: parsing and planning a request (paths, query, selectors, names);
//! - [`rules`]: the rule table of every kind and the one walker that applies it, up and down;
//! - [`wire`]: request body encodings (JSON/YAML, every patch type, protobuf);
//! - [`response`]: streaming response rewriting (lists, watches, tables, discovery, OpenAPI,
//!   exec/attach frames);
//! - [`error`]: errors and the `metav1.Status` they become.
//!
//! Governance (what a tenant may do and what it is charged):
//! - [`provision`] (what paddock installs upstream, the guard, platform grants),
//!   [`admission`] (the webhook's decisions), [`quota`], [`templates`], [`fair`] (fair
//!   share), [`observe`] (audit, usage, billing key, health), [`clusters`] (placement and
//!   spanning), [`lifecycle`] (suspension, workloads stopped and back, time-to-live).
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod catalog;
pub mod error;
pub mod identity;
pub mod request;
pub mod response;
pub mod rules;
pub mod tenant;
pub mod wire;

pub mod admission;
pub mod clusters;
pub mod fair;
pub mod lifecycle;
pub mod observe;
pub mod portable;
pub mod provision;
pub mod quota;
pub mod templates;

/// Entry points of the fuzz targets (`fuzz/fuzz_targets`), also run as regression tests.
pub mod fuzzing;

pub use response::{ChunkRewriter, etag, response_rewriter, rewrite_whole_into};

pub use crate::catalog::context::TenantContext;
pub use catalog::{Catalog, Policy, ResourceInfo, Scope};
pub use error::TranslateError;
pub use error::status::{status_body, watch_error_event};
pub use identity::{
    Identity, Impersonation, impersonation_for, map_group_down, map_group_up, map_user_down,
    map_user_up,
};
pub use request::{
    ApiPath, ParsedRequest, Plan, ResourcePath, ResponseKind, Verb, parse_request, plan,
    response_kind_for, upstream_accept,
};
pub use rules::{
    Disposition, UpMode, object_down, object_down_as, object_up, object_up_with, text_down,
    text_down_with,
};
pub use tenant::{
    NameKind, TENANT_LABEL, TenantId, TenantIdError, check_prefixed_len, looks_tenant_prefixed,
};
pub use wire::body::translate_request_body;
