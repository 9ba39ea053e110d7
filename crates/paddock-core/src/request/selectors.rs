//! Query parameters and label/field selectors, translated into the upstream's names.

use super::parse::{ResourcePath, Verb};
use crate::catalog::context::TenantContext;
use crate::identity::names::{api_version_up, name_up, resolve_ref_kind};

use crate::catalog::{Policy, ResourceInfo};
use crate::error::TranslateError;
use crate::tenant::{NAMESPACE_NAME_LABEL, NameKind, TENANT_LABEL, check_prefixed_len};

/// Query parameters the apiserver documents (meta/v1 ListOptions, GetOptions, DeleteOptions,
/// CreateOptions, PatchOptions, UpdateOptions, pod log/exec/attach/portforward options,
/// `timeout` from client-go, `hash` from OpenAPI v3). Anything else is refused: a parameter we
/// do not know might carry a name we would forward untranslated.
pub(super) const KNOWN_QUERY: &[&str] = &[
    "pretty",
    "watch",
    "labelSelector",
    "fieldSelector",
    "resourceVersion",
    "resourceVersionMatch",
    "limit",
    "continue",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "force",
    "propagationPolicy",
    "gracePeriodSeconds",
    "orphanDependents",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "includeObject",
    "timeout",
    "container",
    "follow",
    "previous",
    "sinceSeconds",
    "sinceTime",
    "timestamps",
    "tailLines",
    "limitBytes",
    "insecureSkipTLSVerifyBackend",
    "stream",
    "stdin",
    "stdout",
    "stderr",
    "tty",
    "command",
    "ports",
    "hash",
];

pub(super) fn translate_query(
    ctx: &TenantContext,
    info: &ResourceInfo,
    r: &ResourcePath,
    verb: Verb,
    q: &[(String, String)],
) -> Result<Vec<(String, String)>, TranslateError> {
    // Proxied requests carry the backend's own query: forward it as it is.
    if r.subresource.as_deref() == Some("proxy") {
        return Ok(q.to_vec());
    }
    let mut out = Vec::with_capacity(q.len() + 1);
    let mut saw_label = false;
    // The term every list of this resource must carry upstream: the tenant's own label on
    // what it owns; on shared read-only kinds, the absence of any tenant label, so that
    // paddock's per-tenant objects among them (each tenant's FlowSchema) stay out of every
    // answer, including Tables without objects, where the down rules could not see the label.
    let tenant_term = if !matches!(verb, Verb::List | Verb::Watch | Verb::DeleteCollection) {
        None
    } else if info.lists_platform_objects() {
        // Lists and watches: the platform's objects beside the tenant's own (others' dropped
        // on the way down). A deletecollection: the tenant's own only. Either way paddock's
        // per-tenant plumbing (which carries the tenant label too) is left out upstream,
        // Tables without objects included.
        let plumbing = format!("!{}", crate::tenant::MANAGED_FOR_LABEL);
        Some(if verb == Verb::DeleteCollection {
            format!("{},{plumbing}", ctx.tenant.tenant_label_selector())
        } else {
            plumbing
        })
    } else if info.stamps_label() {
        Some(ctx.tenant.tenant_label_selector())
    } else if matches!(
        info.policy,
        Policy::SharedReadOnly | Policy::PlatformGranted
    ) {
        Some(format!("!{TENANT_LABEL}"))
    } else {
        None
    };
    // Repeated selectors are refused: which one the apiserver honours is not ours to guess,
    // and the tenant term must be in the one it does.
    for key in ["labelSelector", "fieldSelector"] {
        if q.iter().filter(|(k, _)| k == key).count() > 1 {
            return Err(TranslateError::bad(format!(
                "query parameter {key} may appear only once"
            )));
        }
    }
    for (k, v) in q {
        match k.as_str() {
            "labelSelector" => {
                let mut sel = translate_label_selector(ctx, info, v)?;
                if let Some(term) = tenant_term.as_deref().filter(|_| !saw_label) {
                    push_term(&mut sel, term);
                }
                saw_label = true;
                out.push((k.clone(), sel));
            }
            "fieldSelector" => out.push((k.clone(), translate_field_selector(ctx, info, v)?)),
            k2 if KNOWN_QUERY.contains(&k2) => out.push((k.clone(), v.clone())),
            _ => {
                return Err(TranslateError::bad(format!(
                    "unknown query parameter {k:?}"
                )));
            }
        }
    }
    if let Some(term) = tenant_term.filter(|_| !saw_label) {
        out.push(("labelSelector".to_owned(), term));
    }
    Ok(out)
}

fn push_term(sel: &mut String, term: &str) {
    if !sel.trim().is_empty() {
        sel.push(',');
    }
    sel.push_str(term);
}

/// Splits at commas outside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Rewrites a label selector: refuses terms on the tenant label, maps the values of
/// `kubernetes.io/metadata.name` when listing namespaces. Terms it does not change are kept
/// byte for byte.
pub fn translate_label_selector(
    ctx: &TenantContext,
    info: &ResourceInfo,
    sel: &str,
) -> Result<String, TranslateError> {
    if sel.trim().is_empty() {
        return Ok(String::new());
    }
    let map_ns_label = info.upstream_group.is_empty() && info.resource == "namespaces";
    let mut terms = Vec::new();
    for raw in split_top_level(sel) {
        let term = raw.trim();
        if term.is_empty() {
            return Err(TranslateError::bad(format!(
                "invalid label selector {sel:?}: empty term"
            )));
        }
        let parsed = parse_label_term(term)
            .ok_or_else(|| TranslateError::bad(format!("invalid label selector term {term:?}")))?;
        if parsed.key == TENANT_LABEL {
            return Err(TranslateError::forbidden(format!(
                "label selector on {TENANT_LABEL} is not allowed: the label is reserved"
            )));
        }
        if map_ns_label && parsed.key == NAMESPACE_NAME_LABEL && !parsed.values.is_empty() {
            let vals = parsed
                .values
                .iter()
                .map(|v| {
                    if v.is_empty() {
                        return Ok(String::new());
                    }
                    check_prefixed_len(NameKind::LabelValue, v)?;
                    Ok(ctx.tenant.upstream_name(v))
                })
                .collect::<Result<Vec<_>, TranslateError>>()?;
            terms.push(parsed.render(&vals));
        } else if let Some(key) = crate::rules::aggregate::selector_term_key_up(info, parsed.key)? {
            terms.push(
                LabelTerm {
                    key: &key,
                    ..parsed
                }
                .render_values(),
            );
        } else {
            terms.push(term.to_owned());
        }
    }
    Ok(terms.join(","))
}

struct LabelTerm<'a> {
    key: &'a str,
    /// "", "!", "=", "==", "!=", "in", "notin", ">", "<"
    op: &'a str,
    values: Vec<&'a str>,
}

impl LabelTerm<'_> {
    /// The term with its own values.
    fn render_values(&self) -> String {
        let vals: Vec<String> = self.values.iter().map(|v| (*v).to_owned()).collect();
        self.render(&vals)
    }

    fn render(&self, vals: &[String]) -> String {
        match self.op {
            "in" | "notin" => format!("{} {} ({})", self.key, self.op, vals.join(",")),
            "!" => format!("!{}", self.key),
            op => format!(
                "{}{}{}",
                self.key,
                op,
                vals.first().map(String::as_str).unwrap_or("")
            ),
        }
    }
}

fn parse_label_term(term: &str) -> Option<LabelTerm<'_>> {
    if let Some(open) = term.find('(') {
        let close = term.rfind(')')?;
        if close != term.len() - 1 || close < open {
            return None;
        }
        let head: Vec<&str> = term[..open].split_whitespace().collect();
        let [key, op] = head.as_slice() else {
            return None;
        };
        if *op != "in" && *op != "notin" {
            return None;
        }
        let values = term[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .collect();
        return Some(LabelTerm { key, op, values });
    }
    for op in ["!=", "==", "=", ">", "<"] {
        if let Some((k, v)) = term.split_once(op) {
            return Some(LabelTerm {
                key: k.trim(),
                op,
                values: vec![v.trim()],
            });
        }
    }
    if let Some(k) = term.strip_prefix('!') {
        return Some(LabelTerm {
            key: k.trim(),
            op: "!",
            values: vec![],
        });
    }
    if term.contains(char::is_whitespace) {
        return None;
    }
    Some(LabelTerm {
        key: term,
        op: "",
        values: vec![],
    })
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut esc = false;
    for c in s.chars() {
        if esc {
            cur.push('\\');
            cur.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if esc {
        cur.push('\\');
    }
    out.push(cur);
    out
}

fn unescape_field(v: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in v.chars() {
        if esc {
            out.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    out
}

fn escape_field(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// Rewrites a field selector: `metadata.name` of cluster-scoped kinds, `metadata.namespace`,
/// and the namespace, name (for cluster-scoped kinds) and apiVersion (tenant CRD groups) of
/// the rule table's object-reference fields (`involvedObject.*`, `regarding.*`, `related.*`).
/// Other keys (`spec.nodeName`, `status.phase`, ...) pass.
pub fn translate_field_selector(
    ctx: &TenantContext,
    info: &ResourceInfo,
    sel: &str,
) -> Result<String, TranslateError> {
    if sel.trim().is_empty() {
        return Ok(sel.to_owned());
    }
    let t = &ctx.tenant;
    struct Term {
        key: String,
        op: &'static str,
        value: String,
    }
    let mut terms = Vec::new();
    for raw in split_unescaped(sel, ',') {
        let (op, idx) = ["!=", "==", "="]
            .iter()
            .find_map(|op| find_unescaped(&raw, op).map(|i| (*op, i)))
            .ok_or_else(|| TranslateError::bad(format!("invalid field selector term {raw:?}")))?;
        terms.push(Term {
            key: raw[..idx].trim().to_owned(),
            op,
            value: unescape_field(&raw[idx + op.len()..]),
        });
    }
    // Fields that hold an object reference come from the rule table (`involvedObject`,
    // `regarding`, `related`); the kind of the referenced object decides whether its name is
    // prefixed.
    let ref_info = |field: &str| -> Option<ResourceInfo> {
        let kind = terms
            .iter()
            .find(|x| x.key == format!("{field}.kind"))?
            .value
            .clone();
        let av = terms
            .iter()
            .find(|x| x.key == format!("{field}.apiVersion"))
            .map(|x| x.value.clone());
        resolve_ref_kind(ctx, av.as_deref(), &kind)
    };
    let mut out = Vec::new();
    for term in &terms {
        let v = &term.value;
        let reference = term.key.split_once('.').filter(|(field, _)| {
            crate::rules::table::reference_field_selectors().any(|f| f == *field)
        });
        let new = if v.is_empty() {
            v.clone()
        } else {
            match (term.key.as_str(), reference) {
                ("metadata.name", _) if info.prefixes_name() => name_up(t, info, v)?,
                ("metadata.name", _) if crate::rules::apiservice::names_by_rule(info) => {
                    crate::rules::apiservice::name_up(ctx, v)
                }
                ("metadata.namespace", _) | (_, Some((_, "namespace"))) => {
                    check_prefixed_len(NameKind::Namespace, v)?;
                    t.upstream_name(v)
                }
                (_, Some((field, "name"))) => match ref_info(field) {
                    Some(i) if i.prefixes_name() => name_up(t, &i, v)?,
                    _ => v.clone(),
                },
                (_, Some((_, "apiVersion"))) => api_version_up(ctx, v),
                _ => v.clone(),
            }
        };
        out.push(format!("{}{}{}", term.key, term.op, escape_field(&new)));
    }
    Ok(out.join(","))
}

fn find_unescaped(s: &str, pat: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        // Bytes, not `&s[i..]`: after an escape `i` may sit inside a multi-byte character
        // (found by the path_parser fuzz target). A match starts at an ASCII byte, which is
        // always a character boundary.
        if b[i..].starts_with(pat.as_bytes()) {
            // `!=` must not be found as `=` after a `!`.
            if pat == "=" && i > 0 && b[i - 1] == b'!' {
                i += 1;
                continue;
            }
            return Some(i);
        }
        i += 1;
    }
    None
}
