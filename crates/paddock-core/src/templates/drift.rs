//! The watch-driven sync's decisions (docs/templates.md "Sync"): which kinds to watch, whether
//! a stamped object seen by a watch is paddock's own write or drift, and whether a namespace
//! must be stamped, from the caches alone (no upstream read).
//!
//! Telling paddock's writes from drift: the sync remembers, per stamped object, a fingerprint
//! of what the apiserver answered to its last apply (the object without status and without
//! the metadata every write moves). An event whose object has that fingerprint is paddock's own
//! write, or a change of status only (a quota's usage): nothing to do. Any other content is
//! drift, and the namespace is stamped; the apply's answer becomes the new fingerprint, so a
//! field someone else added without touching paddock's costs one no-op apply, once. An object
//! paddock has no fingerprint of (seen first after a start, or written by another replica or
//! by the set-up) is judged by `managedFields`: drift when a manager other than paddock wrote
//! it (not its status) at or after paddock's last apply.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde_json::Value;

use super::model::{
    FoundLocked, LOCKED_LABEL, NamespaceTemplate, TEMPLATE_KINDS, TEMPLATE_LABEL, TemplateKind,
    needs_stamp, stale_locked, template_kind,
};

/// paddock's field manager for stamped objects (`paddock_upstream::upjson::apply`).
pub const FIELD_MANAGER: &str = "paddock";

/// Metadata every write moves, or the apiserver sets: not part of what is compared.
const VOLATILE_METADATA: &[&str] = &[
    "resourceVersion",
    "managedFields",
    "generation",
    "creationTimestamp",
    "uid",
    "selfLink",
];

/// Top-level fields not compared: the status, and the type, which a LIST's items leave out
/// (a watch event's object and an apply's answer carry it; the cache is per kind anyway).
const NOT_COMPARED: &[&str] = &["status", "kind", "apiVersion"];

/// A fingerprint of what an object says, leaving out its status, its type and volatile
/// metadata; key order does not matter. The same object hashes the same whether it was read
/// from a LIST, a watch event or an apply's answer.
pub fn fingerprint(obj: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    if let Value::Object(m) = obj {
        let mut keys: Vec<&String> = m
            .keys()
            .filter(|k| !NOT_COMPARED.contains(&k.as_str()))
            .collect();
        keys.sort();
        for k in keys {
            k.hash(&mut h);
            if k == "metadata" {
                hash_metadata(&m[k], &mut h);
            } else {
                hash_value(&m[k], &mut h);
            }
        }
    } else {
        hash_value(obj, &mut h);
    }
    h.finish()
}

fn hash_metadata(meta: &Value, h: &mut impl Hasher) {
    match meta {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m
                .keys()
                .filter(|k| !VOLATILE_METADATA.contains(&k.as_str()))
                .collect();
            keys.sort();
            for k in keys {
                k.hash(h);
                hash_value(&m[k], h);
            }
        }
        other => hash_value(other, h),
    }
}

fn hash_value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.to_string()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for x in a {
                hash_value(x, h);
            }
        }
        Value::Object(m) => {
            (5u8, m.len()).hash(h);
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for k in keys {
                k.hash(h);
                hash_value(&m[k], h);
            }
        }
    }
}

/// How long a namespace first seen by a watch `ADDED`, and not yet annotated with its
/// templates, is left to its set-up: a namespace created through paddock is stamped by its
/// set-up (`paddock_reconciler::templates::stamp_at_setup`), and the sync, seeing it the
/// moment it exists, stamped it once or twice more over the set-up's writes (10 no-op
/// applies per namespace).
pub const SETUP_GRACE: Duration = Duration::from_secs(2);

/// Whether the namespace carries its templates' annotation (its set-up or a sync stamped it).
pub fn annotated(ns: &Value) -> bool {
    ns["metadata"]["annotations"]
        .get(super::model::TEMPLATES_ANNOTATION)
        .is_some()
}

/// Whether a manager other than paddock wrote the object (not its status) at or after
/// paddock's last apply of it. `time` is RFC 3339 in whole seconds, so it compares as text;
/// a tie counts as someone else's (one no-op apply rather than a missed edit).
pub fn written_by_another(obj: &Value) -> bool {
    let Some(entries) = obj["metadata"]["managedFields"].as_array() else {
        return false;
    };
    let main = |e: &&Value| e["subresource"].as_str().unwrap_or("").is_empty();
    let ours = entries
        .iter()
        .filter(main)
        .filter(|e| e["manager"] == FIELD_MANAGER && e["operation"] == "Apply")
        .filter_map(|e| e["time"].as_str())
        .max();
    let Some(ours) = ours else {
        return true;
    };
    entries
        .iter()
        .filter(main)
        .filter(|e| !(e["manager"] == FIELD_MANAGER && e["operation"] == "Apply"))
        .filter_map(|e| e["time"].as_str())
        .any(|t| t >= ours)
}

/// Whether a stamped object seen by a watch differs from what paddock last wrote:
/// `recorded` is the fingerprint of paddock's last apply of it, when this replica has one.
pub fn drifted(live: &Value, recorded: Option<u64>) -> bool {
    match recorded {
        Some(fp) => fingerprint(live) != fp,
        None => written_by_another(live),
    }
}

/// The kinds whose locked objects the sync watches: those the mandatory templates stamp.
pub fn watched_kinds(templates: &[NamespaceTemplate]) -> Vec<&'static TemplateKind> {
    TEMPLATE_KINDS
        .iter()
        .filter(|k| {
            templates
                .iter()
                .filter(|t| t.mandatory)
                .flat_map(|t| &t.manifests)
                .any(|m| template_kind(m).is_some_and(|mk| mk == *k))
        })
        .collect()
}

/// A locked object in the watch caches, with what the sync remembers of it.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    pub kind: &'static TemplateKind,
    pub object: &'a Value,
    /// Fingerprint of paddock's last apply of it (this replica).
    pub recorded: Option<u64>,
}

/// What the sync does with a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    InStep,
    /// Stamp it, deleting these locked objects no wanted template stamps any more.
    Stamp {
        prune: Vec<FoundLocked>,
    },
}

/// The verdict on a namespace, from the caches: stamp it when its annotation is out of step
/// with `wanted`, a locked object it should have is missing (only for kinds in `synced`, whose
/// cache has been listed), one it has drifted, or one is stale (its template no longer wants
/// it).
pub fn verdict(
    ns: &Value,
    wanted: &[&NamespaceTemplate],
    observed: &[Observed<'_>],
    synced: &BTreeSet<&str>,
) -> Verdict {
    let found: Vec<FoundLocked> = observed
        .iter()
        .filter_map(|o| {
            Some(FoundLocked {
                kind: o.kind,
                name: o.object["metadata"]["name"].as_str()?.to_string(),
                template: o.object["metadata"]["labels"][TEMPLATE_LABEL]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            })
        })
        .collect();
    let prune: Vec<FoundLocked> = stale_locked(&found, wanted).into_iter().cloned().collect();
    let present: BTreeSet<(&str, &str)> = found
        .iter()
        .map(|f| (f.kind.resource, f.name.as_str()))
        .collect();
    let missing = locked_keys(wanted)
        .any(|(res, name)| synced.contains(res) && !present.contains(&(res, name)));
    let drift = observed.iter().any(|o| {
        o.object["metadata"]["labels"][LOCKED_LABEL] == "true" && drifted(o.object, o.recorded)
    });
    if needs_stamp(ns, wanted) || missing || drift || !prune.is_empty() {
        Verdict::Stamp { prune }
    } else {
        Verdict::InStep
    }
}

/// The (resource, name) of every object the wanted mandatory templates stamp.
fn locked_keys<'a>(
    wanted: &'a [&'a NamespaceTemplate],
) -> impl Iterator<Item = (&'static str, &'a str)> + 'a {
    wanted.iter().filter(|w| w.mandatory).flat_map(|w| {
        w.manifests
            .iter()
            .filter_map(|o| Some((template_kind(o)?.resource, o["metadata"]["name"].as_str()?)))
    })
}

#[cfg(test)]
#[path = "drift_tests.rs"]
mod tests;
