//! Namespace templates (docs/templates.md): objects the platform admin writes once,
//! in the tenant's view, that paddock stamps into tenant namespaces. A *mandatory* template is
//! stamped into every namespace of the tenants it names (all tenants when it names none) and
//! locked; an *optional* one only into namespaces whose creator asked for it with the label
//! `templates.paddock.io/<name>: "true"`, and the tenant owns the result.
//!
//! Everything here is a decision: which templates a namespace should have, what a template's
//! objects are upstream (the same rule table as a tenant's writes), what the namespace's
//! `paddock.io/templates` annotation says, which stamped objects are stale, and the admission
//! guard that locks mandatory objects. The reconciler and the server do the I/O.

mod builtin;
mod drift;
mod guard;
mod model;
#[cfg(test)]
mod tests;

pub use builtin::{BUILTIN_DEFAULT, BUILTIN_PL1, builtin_templates};
pub use drift::{
    FIELD_MANAGER, Observed, SETUP_GRACE, Verdict, annotated, drifted, fingerprint, verdict,
    watched_kinds, written_by_another,
};
pub use guard::{TEMPLATES_GUARD_NAME, TEMPLATES_NAMESPACE_GUARD_NAME, templates_guards};
pub use model::*;
