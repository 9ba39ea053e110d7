//! OpenAPI documents in the tenant's view: `/openapi/v2` (one swagger document),
//! `/openapi/v3` (the index of per-group-version documents) and `/openapi/v3/<api|apis/g>/<v>`.
//!
//! A CRD group appears in these documents in four spellings, all of which must follow the
//! group (checked on real 1.33 documents):
//! - the group itself: paths `/apis/foofoo-example.com/v1/...`, `x-kubernetes-group-version-kind`;
//! - reversed: definition / schema names and `$ref`s, `com.foofoo-example.v1.Widget`;
//! - UpperCamel in operationIds: `listFoofooExampleComV1NamespacedWidget`;
//! - lowerCamel in tags: `foofooExampleCom_v1`.
//!
//! Other tenants' groups (and platform groups a tenant CRD group shadows) are removed: their
//! paths, their definitions, their index entries. The tenant's own groups are renamed in every
//! spelling, keys and values alike, so `$ref`s stay consistent with the renamed schemas.
//! Buffered; output deterministic (serde_json keeps key order).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::catalog::Catalog;
use crate::error::TranslateError;
use crate::tenant::TenantId;

pub fn openapi_down(
    tenant: &TenantId,
    catalog: &Catalog,
    body: &[u8],
) -> Result<Vec<u8>, TranslateError> {
    let mut doc: Value = serde_json::from_slice(body)
        .map_err(|e| TranslateError::Upstream(format!("OpenAPI document: {e}")))?;
    let Some(o) = doc.as_object_mut() else {
        return Err(TranslateError::Upstream(
            "OpenAPI document is not an object".into(),
        ));
    };
    let mut groups = BTreeSet::new();
    if let Some(paths) = o.get("paths").and_then(Value::as_object) {
        for k in paths.keys() {
            if let Some(g) = path_group(k) {
                groups.insert(g.to_owned());
            }
        }
    }
    let mut hidden = Vec::new();
    let mut renames = Vec::new();
    for g in &groups {
        match catalog.tenant_group_view(tenant, g) {
            None => hidden.push(g.clone()),
            Some(v) if v != *g => renames.push((g.clone(), v)),
            Some(_) => {}
        }
    }
    if let Some(paths) = o.get_mut("paths").and_then(Value::as_object_mut) {
        paths.retain(|k, _| path_group(k).is_none_or(|g| !hidden.iter().any(|h| h == g)));
    }
    let hidden_rev: Vec<String> = hidden.iter().map(|g| format!("{}.", reverse(g))).collect();
    let drop_def = |name: &str, def: &Value| {
        hidden_rev.iter().any(|p| name.starts_with(p.as_str()))
            || gvk_groups(def).any(|g| hidden.iter().any(|h| h == g))
    };
    if let Some(defs) = o.get_mut("definitions").and_then(Value::as_object_mut) {
        defs.retain(|k, v| !drop_def(k, v));
    }
    if let Some(schemas) = o
        .get_mut("components")
        .and_then(|c| c.get_mut("schemas"))
        .and_then(Value::as_object_mut)
    {
        schemas.retain(|k, v| !drop_def(k, v));
    }
    if !renames.is_empty() {
        let subs = Substitutions::new(&renames);
        subs.apply(&mut doc);
    }
    serde_json::to_vec(&doc).map_err(|e| TranslateError::Internal(format!("OpenAPI: {e}")))
}

/// The group of an OpenAPI path key: `/apis/<g>/...` (v2 and per-GV v3) or `apis/<g>/<v>`
/// (the v3 index). The core group (`/api/...`) and non-resource paths have none.
fn path_group(k: &str) -> Option<&str> {
    let rest = k.strip_prefix('/').unwrap_or(k).strip_prefix("apis/")?;
    let g = rest.split('/').next()?;
    (!g.is_empty()).then_some(g)
}

fn gvk_groups(def: &Value) -> impl Iterator<Item = &str> {
    def.get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|g| g.get("group").and_then(Value::as_str))
}

/// `foofoo-example.com` -> `com.foofoo-example` (how the apiserver names CRD schemas).
fn reverse(g: &str) -> String {
    g.split('.').rev().collect::<Vec<_>>().join(".")
}

/// `foofoo-example.com` -> `FoofooExampleCom` (operationIds; lowerCamel for tags).
fn camel(g: &str) -> String {
    g.split(['.', '-'])
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Text substitutions for renamed groups, applied to every key and string of a document.
struct Substitutions {
    /// (from, to, is a DNS-ish spelling that needs boundary checks), longest `from` first so a
    /// group that is a suffix of another cannot capture part of it.
    pairs: Vec<(String, String, bool)>,
}

impl Substitutions {
    fn new(renames: &[(String, String)]) -> Self {
        let mut pairs = Vec::new();
        for (from, to) in renames {
            pairs.push((from.clone(), to.clone(), true));
            pairs.push((reverse(from), reverse(to), true));
            let (cf, ct) = (camel(from), camel(to));
            pairs.push((lower_first(&cf) + "_", lower_first(&ct) + "_", false));
            pairs.push((cf, ct, false));
        }
        pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Substitutions { pairs }
    }

    fn apply(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                if let Some(n) = self.text(s) {
                    *s = n;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.apply(x)),
            Value::Object(o) => {
                let needs_key = o.keys().any(|k| self.text(k).is_some());
                if needs_key {
                    let old = std::mem::take(o);
                    let mut new = Map::with_capacity(old.len());
                    for (k, mut x) in old {
                        self.apply(&mut x);
                        new.insert(self.text(&k).unwrap_or(k), x);
                    }
                    *o = new;
                } else {
                    o.values_mut().for_each(|x| self.apply(x));
                }
            }
            _ => {}
        }
    }

    /// Some(new) when `s` changes.
    fn text(&self, s: &str) -> Option<String> {
        let mut cur: Option<String> = None;
        for (from, to, bounded) in &self.pairs {
            let src = cur.as_deref().unwrap_or(s);
            if !src.contains(from.as_str()) {
                continue;
            }
            let replaced = replace_bounded(src, from, to, *bounded);
            if replaced != src {
                cur = Some(replaced);
            }
        }
        cur
    }
}

fn is_dns_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'.'
}

/// Replaces occurrences of `from`; when `bounded`, only where it is not glued to more of a
/// DNS name before it (so `x.foofoo-example.com` is not touched) or after it other than by a
/// `.` followed by a version (`com.foofoo-example.v1.Widget`) or by `/`, `"`, end.
fn replace_bounded(s: &str, from: &str, to: &str, bounded: bool) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    let mut i = 0;
    while let Some(off) = s[i..].find(from) {
        let start = i + off;
        let end = start + from.len();
        let ok = !bounded
            || ((start == 0 || !is_dns_char(b[start - 1]))
                && (end == b.len()
                    || !is_dns_char(b[end])
                    || (b[end] == b'.' && b.get(end + 1) == Some(&b'v'))));
        if ok {
            out.push_str(&s[last..start]);
            out.push_str(to);
            last = end;
        }
        i = end;
    }
    out.push_str(&s[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        assert_eq!(reverse("foofoo-example.com"), "com.foofoo-example");
        assert_eq!(camel("foofoo-example.com"), "FoofooExampleCom");
        assert_eq!(path_group("/apis/a.b/v1/x"), Some("a.b"));
        assert_eq!(path_group("apis/a.b/v1"), Some("a.b"));
        assert_eq!(path_group("/api/v1/pods"), None);
        assert_eq!(path_group("/version"), None);
        let s = Substitutions::new(&[("foofoo-example.com".into(), "example.com".into())]);
        assert_eq!(
            s.text("#/definitions/com.foofoo-example.v1.Widget")
                .as_deref(),
            Some("#/definitions/com.example.v1.Widget")
        );
        assert_eq!(
            s.text("/apis/foofoo-example.com/v1/widgets").as_deref(),
            Some("/apis/example.com/v1/widgets")
        );
        assert_eq!(s.text("x.foofoo-example.com"), None);
        assert_eq!(
            s.text("listFoofooExampleComV1Widget").as_deref(),
            Some("listExampleComV1Widget")
        );
        assert_eq!(
            s.text("foofooExampleCom_v1").as_deref(),
            Some("exampleCom_v1")
        );
    }
}
