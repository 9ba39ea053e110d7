//! The fast path of the per-item rewrite: byte splicing instead of a DOM.
//!
//! For most items of a big LIST or watch (pods, configmaps, secrets, …) the only change
//! `object_down` makes is `metadata.namespace` losing the tenant prefix, or the item being
//! dropped. Finding that one field takes a few dozen bytes of scanning (metadata is the first
//! member of a built-in object, namespace its third), so the item can be copied out with one
//! splice, at memcpy speed, instead of being parsed into a `serde_json::Value` and serialised
//! again, which is an order of magnitude slower (docs/performance.md, "Translation throughput").
//!
//! The fast path answers only when it is sure to produce exactly what `object_down` would;
//! otherwise it says [`Fast::Fallback`] and the DOM path runs. It is sure when:
//! - the kind is one the kind table marks for splicing (namespaced, built in, the tenant's);
//! - the item holds none of the fields the kind's own rules (the rule table) rewrite, so only
//!   the universal `metadata` rules apply, and they only ever rewrite strings that carry the
//!   tenant's own prefix or the tenant label;
//! - the item contains the tenant prefix exactly once (the namespace value itself) and never
//!   the tenant label key, so none of those other rules can fire;
//! - the namespace value is a plain string (no escapes).
//!
//! An item whose namespace is not the tenant's is dropped without looking further: for these
//! kinds `object_down` drops it before any other rule runs. Tests compare both paths on every
//! captured fixture and on generated items.

use std::cell::RefCell;
use std::sync::{Arc, LazyLock};

use memchr::memmem::Finder;

use crate::response::members::Members;
use crate::rules::schema::{FieldRule, Holds};
use crate::rules::table::rules_for;
use crate::tenant::{TENANT_ID_LEN, TENANT_LABEL, TenantId};

/// A kind the splicer takes (`catalog::kinds`, `splice`) and the guards its items must pass.
///
/// `object_down` of such an item applies the universal `metadata` rules, which only ever
/// rewrite strings that carry the tenant's own prefix or the tenant label (checked below), and
/// the kind's own field rules from the rule table (`rules::table`). Those can rewrite any
/// value (a namespace of another tenant's is redacted), so an item holding one of those fields
/// at all takes the DOM path: the guards are the JSON keys that end the kind's rule paths,
/// derived from the rule table, never kept by hand.
struct FastKind {
    group: &'static str,
    kind: &'static str,
    /// The guarded keys: `"namespace"` may occur as a key once (the object's own), every
    /// other not at all.
    keys: Vec<&'static str>,
    /// One finder of `"<key>` (no closing quote) per guarded key that has no other guarded key
    /// as a prefix: `"namespace` also finds `"namespaces"` and `"namespaceSelector"`, so a pod
    /// takes two passes, not four.
    needles: Vec<Finder<'static>>,
    /// Its objects may carry a sleep's record, which `object_down` reads back as the tenant
    /// left the object (`rules::asleep`): an item that holds the record takes the DOM path.
    sleeps: bool,
}

static FAST_KINDS: LazyLock<Vec<FastKind>> = LazyLock::new(|| {
    crate::catalog::kinds::spliced()
        .map(|k| (k, guarded_keys(k.group, k.kind)))
        .filter(|(_, keys)| !keys.contains(&""))
        .map(|(k, keys)| FastKind {
            group: k.group,
            kind: k.kind,
            needles: keys
                .iter()
                .filter(|key| !keys.iter().any(|p| p != *key && key.starts_with(p)))
                .map(|key| Finder::new(format!("\"{key}").as_bytes()).into_owned())
                .collect(),
            keys,
            sleeps: crate::rules::asleep::sleeps(k.group, k.kind),
        })
        .collect()
});

/// The JSON keys that end the paths of a kind's field rules, embedded structures included.
/// A rule on the whole object (an empty path) shows as an empty key: such a kind is never
/// spliced.
pub fn guarded_keys(group: &str, kind: &str) -> Vec<&'static str> {
    fn visit(fields: &[FieldRule], out: &mut Vec<&'static str>) {
        for r in fields {
            // An embedded structure's own rules decide; its key alone changes nothing.
            if let Holds::Embed(s) = r.holds {
                visit(s.fields, out);
                continue;
            }
            let key = r.path.last().map_or("", |step| step.json);
            if !out.contains(&key) {
                out.push(key);
            }
        }
    }
    let mut keys = Vec::new();
    if let Some(rules) = rules_for(group, kind) {
        visit(rules.fields, &mut keys);
    }
    keys
}

fn fast_kind(group: &str, kind: &str) -> Option<&'static FastKind> {
    FAST_KINDS
        .iter()
        .find(|k| k.group == group && k.kind == kind)
}

pub fn is_fast_kind(group: &str, kind: &str) -> bool {
    fast_kind(group, kind).is_some()
}

impl FastKind {
    /// Whether `raw` holds none of the kind's rule fields (beyond its own namespace).
    fn unguarded(&self, raw: &[u8]) -> bool {
        let mut namespaces = 0;
        for needle in &self.needles {
            for at in needle.find_iter(raw) {
                let text = &raw[at + 1..];
                // A string that never ends is no key (and no valid answer).
                let Some(len) = memchr::memchr(b'"', text) else {
                    continue;
                };
                let key = &text[..len];
                if !is_key(&text[len + 1..]) || !self.keys.iter().any(|k| k.as_bytes() == key) {
                    continue;
                }
                if key != b"namespace" {
                    return false;
                }
                namespaces += 1;
                if namespaces > 1 {
                    return false;
                }
            }
        }
        true
    }
}

/// Whether the string that ends where `rest` starts is an object key: only a key is followed
/// by a colon. The same word as a value (`"path":"namespace"` in a pod's service-account
/// volume) is not a field, and counting it would send most pods down the DOM path.
fn is_key(rest: &[u8]) -> bool {
    rest.iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .is_some_and(|b| *b == b':')
}

/// Outcome of the fast path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fast {
    /// The rewritten item was appended to `out`.
    Keep,
    /// The item is not the tenant's; nothing was written.
    Drop,
    /// Not sure: run the DOM path. Nothing was written.
    Fallback,
}

/// Per-response splicer. Its finders are made once, not per item nor per response: the two
/// fixed needles once per process, the tenant's prefix once per thread and tenant (a finder
/// that owns its needle is an allocation, which per response is one per request).
pub struct Splicer {
    prefix: [u8; TENANT_ID_LEN + 1],
    find_prefix: Arc<Finder<'static>>,
}

static FIND_LABEL: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(TENANT_LABEL.as_bytes()));
static FIND_SLEPT: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(crate::rules::asleep::SLEPT_ANNOTATION.as_bytes()));
static FIND_API_VERSION: LazyLock<Finder<'static>> =
    LazyLock::new(|| Finder::new(b"\"apiVersion\":\""));

/// How many tenants' prefix finders a thread keeps.
const PREFIX_FINDERS: usize = 8;

thread_local! {
    static PREFIX_FINDER: RefCell<Vec<(TenantId, Arc<Finder<'static>>)>> =
        const { RefCell::new(Vec::new()) };
}

/// The finder of `"<tid>-"`, made once per thread and tenant (the last few kept).
fn prefix_finder(tenant: &TenantId) -> Arc<Finder<'static>> {
    PREFIX_FINDER.with_borrow_mut(|kept| {
        if let Some((_, f)) = kept.iter().find(|(t, _)| t == tenant) {
            return f.clone();
        }
        let f = Arc::new(Finder::new(tenant.prefix().as_bytes()).into_owned());
        if kept.len() >= PREFIX_FINDERS {
            kept.remove(0);
        }
        kept.push((tenant.clone(), f.clone()));
        f
    })
}

impl Splicer {
    pub fn new(tenant: &TenantId) -> Self {
        let mut prefix = [b'-'; TENANT_ID_LEN + 1];
        prefix[..TENANT_ID_LEN].copy_from_slice(tenant.as_str().as_bytes());
        Splicer {
            prefix,
            find_prefix: prefix_finder(tenant),
        }
    }

    /// Rewrites one complete object. `default_gk` is the (group, kind) of items that carry no
    /// `kind` of their own (items of built-in lists), from the request's resource.
    pub fn object(&self, raw: &[u8], default_gk: Option<(&str, &str)>, out: &mut Vec<u8>) -> Fast {
        let mut api_version = None;
        let mut kind = None;
        let mut top = Members::new(raw);
        let meta_start = loop {
            let Ok(Some((key, escaped))) = top.next_key() else {
                return Fast::Fallback;
            };
            if escaped {
                return Fast::Fallback;
            }
            let is_meta = &raw[key.clone()] == b"metadata";
            if is_meta {
                // Descend without scanning metadata to its end: namespace is near its start,
                // and managedFields (half of a pod) need not be scanned a second time.
                break top.value_start();
            }
            let Ok(v) = top.value() else {
                return Fast::Fallback;
            };
            match &raw[key] {
                b"apiVersion" => api_version = Some(v),
                b"kind" => kind = Some(v),
                _ => {}
            }
        };
        let fast = match (api_version, kind) {
            (Some(av), Some(k)) => {
                let (Some(av), Some(k)) = (plain_str(&raw[av]), plain_str(&raw[k])) else {
                    return Fast::Fallback;
                };
                let group = av.rsplit_once('/').map_or("", |(g, _)| g);
                fast_kind(group, k)
            }
            (None, None) => default_gk.and_then(|(g, k)| fast_kind(g, k)),
            _ => None,
        };
        let Some(fast) = fast else {
            return Fast::Fallback;
        };
        self.namespace_splice(raw, meta_start, fast, out, &mut Found::default())
    }

    /// Like [`Splicer::object`] for an object that stands for an item of kind `gk` whatever
    /// kind it names itself: the `object` of a Table row, a PartialObjectMetadata that
    /// `table::row_object_down` rewrites as the listed kind.
    pub fn object_as(&self, raw: &[u8], gk: (&str, &str), out: &mut Vec<u8>) -> Fast {
        self.object_as_found(raw, gk, out).0
    }

    /// [`Splicer::object_as`], also telling where the object's name and namespace are when the
    /// walk to the namespace passed them (a Table row's Name and Namespace cells come from
    /// them, without parsing the object again past its managedFields).
    pub fn object_as_found(
        &self,
        raw: &[u8],
        gk: (&str, &str),
        out: &mut Vec<u8>,
    ) -> (Fast, Found) {
        let mut found = Found::default();
        let fast = self.object_as_into(raw, gk, out, &mut found);
        (fast, found)
    }

    fn object_as_into(
        &self,
        raw: &[u8],
        gk: (&str, &str),
        out: &mut Vec<u8>,
        found: &mut Found,
    ) -> Fast {
        let Some(fast) = fast_kind(gk.0, gk.1) else {
            return Fast::Fallback;
        };
        let mut top = Members::new(raw);
        let meta_start = loop {
            let Ok(Some((key, escaped))) = top.next_key() else {
                return Fast::Fallback;
            };
            if escaped {
                return Fast::Fallback;
            }
            if &raw[key] == b"metadata" {
                break top.value_start();
            }
            if top.value().is_err() {
                return Fast::Fallback;
            }
        };
        self.namespace_splice(raw, meta_start, fast, out, found)
    }

    /// The namespace of the object `raw` whose metadata starts at `meta_start`: drop, splice,
    /// or fall back.
    fn namespace_splice(
        &self,
        raw: &[u8],
        meta_start: usize,
        fast: &FastKind,
        out: &mut Vec<u8>,
        found: &mut Found,
    ) -> Fast {
        if fast.sleeps && FIND_SLEPT.find(raw).is_some() {
            return Fast::Fallback;
        }
        let meta = &raw[meta_start..];
        let mut members = Members::new(meta);
        let mut name = None;
        let ns = loop {
            let Ok(Some((key, escaped))) = members.next_key() else {
                return Fast::Fallback;
            };
            if escaped {
                return Fast::Fallback;
            }
            let Ok(v) = members.value() else {
                return Fast::Fallback;
            };
            match &meta[key] {
                b"namespace" => break v,
                b"name" => name = Some(meta_start + v.start..meta_start + v.end),
                _ => {}
            }
        };
        // Absolute range of the namespace's characters, quotes excluded.
        let (s, e) = (meta_start + ns.start, meta_start + ns.end);
        let val = &raw[s..e];
        if val.len() < 2 || val[0] != b'"' || val[val.len() - 1] != b'"' {
            return Fast::Fallback;
        }
        let inner = &val[1..val.len() - 1];
        if inner.is_empty() || inner.contains(&b'\\') {
            return Fast::Fallback;
        }
        if !inner.starts_with(&self.prefix) {
            return Fast::Drop;
        }
        if FIND_LABEL.find(raw).is_some() || self.foreign_group(raw) || !fast.unguarded(raw) {
            return Fast::Fallback;
        }
        let mut hits = self.find_prefix.find_iter(raw);
        let first = hits.next();
        if first != Some(s + 1) || hits.next().is_some() {
            return Fast::Fallback;
        }
        let base = out.len();
        out.extend_from_slice(&raw[..s + 1]);
        out.extend_from_slice(&raw[s + 1 + self.prefix.len()..]);
        // The name of a fast kind (namespaced, built in) reads the same inside the tenant; it
        // precedes the splice, so its offsets in `out` are its offsets in `raw`.
        found.name = name
            .filter(|r: &std::ops::Range<usize>| plain_str(&raw[r.clone()]).is_some())
            .map(|r| base + r.start + 1..base + r.end - 1);
        found.namespace = Some(base + s + 1..base + e - 1 - self.prefix.len());
        Fast::Keep
    }
}

impl Splicer {
    /// Whether a reference's `apiVersion` (ownerReferences, managedFields) names a group of the
    /// tenant form that is not the tenant's: `object_down` redacts those, so the DOM path runs.
    fn foreign_group(&self, raw: &[u8]) -> bool {
        FIND_API_VERSION.find_iter(raw).any(|at| {
            let v = &raw[at + b"\"apiVersion\":\"".len()..];
            let end = v.iter().position(|b| *b == b'"').unwrap_or(v.len());
            let av = &v[..end];
            match av.iter().rposition(|b| *b == b'/') {
                Some(slash) => {
                    let g = &av[..slash];
                    g.contains(&b'-')
                        && !g.starts_with(&self.prefix)
                        && std::str::from_utf8(g).is_ok_and(crate::tenant::looks_tenant_prefixed)
                }
                None => false,
            }
        })
    }
}

/// Where [`Splicer::object_as_found`] put the object's name and namespace as the tenant reads
/// them: byte ranges of `out` (the rewritten object), quotes excluded, free of escapes. Set
/// only on [`Fast::Keep`]; `name` is None when the name did not come before the namespace.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    pub name: Option<std::ops::Range<usize>>,
    pub namespace: Option<std::ops::Range<usize>>,
}

/// The contents of a JSON string token without escapes.
fn plain_str(tok: &[u8]) -> Option<&str> {
    let inner = tok.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.contains(&b'\\') {
        return None;
    }
    std::str::from_utf8(inner).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(raw: &str, gk: Option<(&str, &str)>) -> (Fast, String) {
        let s = Splicer::new(&TenantId::parse("foofoo").unwrap());
        let mut out = Vec::new();
        let f = s.object(raw.as_bytes(), gk, &mut out);
        (f, String::from_utf8(out).unwrap())
    }

    #[test]
    fn splices_namespace() {
        let pod =
            r#"{"metadata":{"name":"a","namespace":"foofoo-default","uid":"u"},"spec":{"x":"}"}}"#;
        assert_eq!(
            run(pod, Some(("", "Pod"))),
            (
                Fast::Keep,
                r#"{"metadata":{"name":"a","namespace":"default","uid":"u"},"spec":{"x":"}"}}"#
                    .into()
            )
        );
        let other = pod.replace("foofoo-default", "barbar-default");
        assert_eq!(run(&other, Some(("", "Pod"))).0, Fast::Drop);
        let with_kind =
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"namespace":"foofoo-x"}}"#;
        assert_eq!(run(with_kind, None).0, Fast::Keep);
    }

    #[test]
    fn an_item_holding_a_sleeps_record_takes_the_dom_path() {
        let d = r#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","namespace":"foofoo-default","annotations":{"paddock.io/slept":"3"}},"spec":{"replicas":0}}"#;
        assert_eq!(run(d, None).0, Fast::Fallback);
        // Not a kind a sleep stops: spliced as before.
        let cm = d.replace(
            r#""kind":"Deployment","apiVersion":"apps/v1""#,
            r#""kind":"ConfigMap","apiVersion":"v1""#,
        );
        assert_eq!(run(&cm, None).0, Fast::Keep);
        assert_eq!(run(&d.replace("slept", "other"), None).0, Fast::Keep);
    }

    #[test]
    fn found_names_the_rewritten_name_and_namespace() {
        let s = Splicer::new(&TenantId::parse("foofoo").unwrap());
        let mut out = b"prior".to_vec();
        let raw = r#"{"kind":"PartialObjectMetadata","metadata":{"name":"web-1","namespace":"foofoo-prod","uid":"u"}}"#;
        let (f, found) = s.object_as_found(raw.as_bytes(), ("", "Pod"), &mut out);
        assert_eq!(f, Fast::Keep);
        assert_eq!(&out[found.name.unwrap()], b"web-1");
        assert_eq!(&out[found.namespace.unwrap()], b"prod");
        // Name after the namespace: not seen by the walk, so not reported.
        let late = r#"{"metadata":{"namespace":"foofoo-prod","name":"web-1"}}"#;
        let (f, found) = s.object_as_found(late.as_bytes(), ("", "Pod"), &mut Vec::new());
        assert_eq!(f, Fast::Keep);
        assert_eq!(found.name, None);
        // An escaped name is not reported either (the caller parses instead).
        let esc = r#"{"metadata":{"name":"w\u0065b","namespace":"foofoo-prod"}}"#;
        let (f, found) = s.object_as_found(esc.as_bytes(), ("", "Pod"), &mut Vec::new());
        assert_eq!(f, Fast::Keep);
        assert_eq!(found.name, None);
        assert!(found.namespace.is_some());
    }

    /// The fast path's claim comes from the rule table: every kind marked for splicing has
    /// rule paths that end in a key (none on the whole object), and an item holding one of
    /// those fields takes the DOM path, which alone decides what such a field shows.
    #[test]
    fn guards_come_from_the_rule_table() {
        for k in crate::catalog::kinds::spliced() {
            assert!(
                is_fast_kind(k.group, k.kind),
                "{} cannot be spliced",
                k.kind
            );
        }
        let pod = guarded_keys("", "Pod");
        for key in ["namespaces", "namespaceSelector", "volumeName", "namespace"] {
            assert!(pod.contains(&key), "{key} in {pod:?}");
        }
        assert!(guarded_keys("", "ConfigMap").is_empty());
        assert_eq!(guarded_keys("", "ServiceAccount"), ["secrets"]);
        let ns = r#"{"metadata":{"name":"a","namespace":"foofoo-d"},"spec":{}}"#;
        assert_eq!(run(ns, Some(("", "Pod"))).0, Fast::Keep);
        // The words as values are no fields (every pod's service-account volume has one).
        let sa = r#""volumes":[{"projected":{"sources":[{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"fieldPath":"metadata.namespace"}}]}}]}}]"#;
        let item = ns.replace(r#""spec":{}"#, &format!(r#""spec":{{{sa}}}"#));
        assert_eq!(run(&item, Some(("", "Pod"))).0, Fast::Keep, "{item}");
        // Every guarded key as a key sends the item down the DOM path, also those found by
        // a shorter key's needle ("namespace" finds "namespaces" and "namespaceSelector").
        for key in pod.iter().filter(|k| **k != "namespace") {
            let held = ns.replace(r#""spec":{}"#, &format!(r#""spec":{{"{key}":"x"}}"#));
            assert_eq!(run(&held, Some(("", "Pod"))).0, Fast::Fallback, "{held}");
        }
        let twice = ns.replace(r#""spec":{}"#, r#""spec":{"namespace":"x"}"#);
        assert_eq!(run(&twice, Some(("", "Pod"))).0, Fast::Fallback);
        let pods = fast_kind("", "Pod").map(|k| k.needles.len());
        assert_eq!(
            pods,
            Some(2),
            "one pass for the namespace keys, one for volumeName"
        );
        // A key with white space before its colon is still a key.
        let spaced = ns.replace(r#""spec":{}"#, r#""spec":{"volumeName" : "x"}"#);
        assert_eq!(run(&spaced, Some(("", "Pod"))).0, Fast::Fallback);
        for field in [
            r#""affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"namespaces":["barbar-x"],"topologyKey":"k"}]}}"#,
            r#""volumes":[{"name":"v","ephemeral":{"volumeClaimTemplate":{"spec":{"volumeName":"pv-1"}}}}]"#,
            r#""volumes":[{"name":"v","ephemeral":{"volumeClaimTemplate":{"spec":{"dataSourceRef":{"namespace":"barbar-x"}}}}}]"#,
        ] {
            let item = ns.replace(r#""spec":{}"#, &format!(r#""spec":{{{field}}}"#));
            assert_eq!(run(&item, Some(("", "Pod"))).0, Fast::Fallback, "{item}");
        }
    }

    #[test]
    fn falls_back_when_unsure() {
        for (raw, gk) in [
            // kind with more reference fields
            (
                r#"{"metadata":{"namespace":"foofoo-d"}}"#,
                Some(("", "Event")),
            ),
            // unknown kind
            (r#"{"metadata":{"namespace":"foofoo-d"}}"#, None),
            // the prefix elsewhere (an owner of the tenant's CRD group)
            (
                r#"{"metadata":{"namespace":"foofoo-d","ownerReferences":[{"apiVersion":"foofoo-ex.com/v1"}]}}"#,
                Some(("", "Pod")),
            ),
            // another tenant's group in a reference (the DOM path redacts it)
            (
                r#"{"metadata":{"namespace":"foofoo-d","ownerReferences":[{"apiVersion":"barbar-ex.com/v1"}]}}"#,
                Some(("", "Pod")),
            ),
            // the tenant label
            (
                r#"{"metadata":{"namespace":"foofoo-d","labels":{"paddock.io/tenant":"foofoo"}}}"#,
                Some(("", "Pod")),
            ),
            // escapes, empty namespace, no namespace, kind without apiVersion
            (
                r#"{"metadata":{"namespace":"foofoo-\u0064"}}"#,
                Some(("", "Pod")),
            ),
            (r#"{"metadata":{"namespace":""}}"#, Some(("", "Pod"))),
            (r#"{"metadata":{"name":"x"}}"#, Some(("", "Pod"))),
            (
                r#"{"kind":"Pod","metadata":{"namespace":"foofoo-d"}}"#,
                None,
            ),
            (r#"{"spec":{}}"#, Some(("", "Pod"))),
        ] {
            let (f, out) = run(raw, gk);
            assert_eq!(f, Fast::Fallback, "{raw}");
            assert!(out.is_empty());
        }
    }
}
