//! The rules: which field of which kind holds something tenant-relative ([`table`]), and how
//! each is moved into the tenant's space on the way up and back on the way down. One walker
//! ([`walk`]) applies the table to JSON objects; protobuf bodies, patches and field selectors
//! reach the same rules through it (`crate::wire`, `crate::request`).

pub mod aggregate;
pub mod apiservice;
pub mod asleep;
mod cel;
pub mod doc;
pub(crate) mod flowcontrol;
mod meta;
pub mod modes;
pub mod object;
mod policy;
mod rbac;
mod refs;
mod relay;
pub(crate) mod reviews;
pub mod schema;
mod selectors;
pub mod table;
pub mod text;
pub(crate) mod walk;

pub use aggregate::{AGGREGATE_LABEL_PREFIX, TENANT_AGGREGATE_LABEL_PREFIX};
pub use flowcontrol::SHARES_ANNOTATION;
pub use modes::{Disposition, UpMode};
pub use object::{object_down, object_down_as, object_up, object_up_with};
pub use policy::BUILTIN_PARAM_KINDS;
pub use refs::api_version_down;
pub use text::{REDACTED, status_down, text_down, text_down_with};
