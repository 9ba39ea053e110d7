//! What a translation is asked to do with an object: keep or drop it on the way down, and how
//! complete the body is on the way up. A leaf of `rules`: every rule module may name these
//! without depending on the entry points in `object`.

/// Whether an upstream object belongs in the tenant's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Keep,
    /// The object is not the tenant's (list item / watch event removed).
    Drop,
}

/// How complete the object given to [`object_up_with`](super::object::object_up_with) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpMode {
    /// A whole object (create, update) or a server-side apply configuration: paddock may add
    /// fields (the tenant label, a webhook's namespaceSelector).
    Full,
    /// An RFC 7386 merge patch: present fields replace, arrays replace whole.
    MergePatch,
    /// A strategic merge patch: lists with merge keys are merged element by element, so a
    /// missing field in an element keeps the stored (already translated) value.
    StrategicMerge,
}
