//! paddock-core: the pure translation core of paddock. See API.md for the contract.
//! No I/O, no clock, no tokio: everything here is deterministic and unit-testable.
//!
//! Organised by concept:
//! - naming and identities: [`tenant`], [`identity`], [`catalog`] (what the upstream serves
//!   and the policy per resource);
//! - [`request`]: parsing and planning a request (paths, query, selectors);
//! - [`rules`]: the rule table of every kind and the one walker that applies it, up and down;
//! - [`wire`]: request body encodings (JSON/YAML, every patch type, protobuf);
//! - [`response`]: streaming response rewriting (lists, watches, tables, discovery, OpenAPI,
//!   exec/attach frames);
//! - [`error`], [`status`]: errors and the `metav1.Status` they become.
#![cfg_attr(test, allow(clippy::unwrap_used))]

// Naming, identities, what the upstream serves.
pub mod builtin_roles;
pub mod catalog;
pub mod cluster;
pub mod context;
pub mod identity;
pub mod impersonate;
pub mod names;
pub mod span;
pub mod tenant;

// Requests, rules, encodings, responses.
pub mod absent;
pub mod guard;
pub mod platform_get;
pub mod platform_grant;
pub mod provision;
pub mod request;
pub mod response;
pub mod review;
pub mod rules;
pub mod wire;

// Tenant governance: fair-share limits and the audit trail (the decisions; the server
// holds the counters and writes the log).
pub mod admission;
pub mod audit;
pub mod audit_platform;
pub mod billing;
pub mod fair_queue;
pub mod fair_weight;
pub mod fairshare;
pub mod usage;
// Tenant-wide quota: what an object charges and the ledger's decisions (issue 15).
pub mod quota;
// Namespace templates: stamping decisions and their admission lock (issue 15).
pub mod templates;

// Errors and their Status.
pub mod error;
pub mod status;

// Upstream health with hysteresis (the decision; the server does the probing).
pub mod health;

// Fuzz harness entry points.
pub mod fuzzing;

// Module paths kept from the flat layout (paddock-server, the fuzz targets and tests use them).
pub use response::{discovery, framer, list, openapi, openapi_pb, splice, table, watch, wsframe};
pub use rules::object;
pub use wire::{body, dupkeys, patch, protobuf};

pub use response::{ChunkRewriter, etag, response_rewriter, rewrite_whole_into};

pub use body::translate_request_body;
pub use catalog::{Catalog, Policy, ResourceInfo, Scope};
pub use error::TranslateError;
pub use identity::{
    Identity, Impersonation, impersonation_for, map_group_down, map_group_up, map_user_down,
    map_user_up,
};
pub use request::{
    ApiPath, ParsedRequest, Plan, ResourcePath, ResponseKind, TenantContext, Verb, parse_request,
    plan, response_kind_for, upstream_accept,
};
pub use rules::{
    Disposition, UpMode, object_down, object_down_as, object_up, object_up_with, text_down,
    text_down_with,
};
pub use status::{status_body, watch_error_event};
pub use tenant::{
    NameKind, TENANT_LABEL, TenantId, TenantIdError, check_prefixed_len, looks_tenant_prefixed,
};
