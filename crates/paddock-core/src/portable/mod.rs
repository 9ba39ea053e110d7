//! A tenant's objects carried out of paddock and back in (issue 41: `paddock tenant export`,
//! `import`, `move`; docs/operations.md "Export, import and move"): the archive's format
//! ([`archive`]), which objects are exported and how each is cleaned ([`objects`]), and the
//! checks an import makes on the whole archive before anything is written ([`import`]).
//! Pure: the server reads and writes the objects through the tenant's own pipeline.

pub mod archive;
pub mod import;
pub mod objects;

/// Why an archive is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PortableError {
    #[error("the archive is truncated: {0}")]
    Truncated(String),
    #[error("the archive is damaged: {0}")]
    Damaged(String),
    #[error("not a paddock tenant export: {0}")]
    Foreign(String),
    #[error("the archive names kinds this paddock refuses: {0}")]
    Refused(String),
}
