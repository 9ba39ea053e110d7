//! Namespace names inside the CEL expressions of a tenant admission policy.
//!
//! A policy's expressions run in the apiserver against upstream objects, where every namespace
//! name carries the tenant prefix (`foofoo-dev`). An expression such as
//! `namespaceObject.metadata.name == 'dev'` (the conformance test's) would then never hold.
//! paddock rewrites the four ways an expression reads the namespace of the request
//! ([`NAMESPACE_READS`]) into the tenant's name of it, guarded so that a name without the
//! prefix (none, for cluster-scoped requests) stays as it is:
//!
//! `X` -> `(X.startsWith('foofoo-') ? X.substring(7) : X)`
//!
//! and the exact rewritten form back on the way down, so the tenant reads what it wrote.
//! Occurrences inside string literals, as the argument of `has()`, or as part of a longer
//! selection are left alone. Other ways to reach a namespace name (`object.metadata['namespace']`,
//! names inside `params`) see the upstream name: documented in docs/translation.md.

use serde_json::Value;

use crate::tenant::TenantId;

/// The selections that read the namespace of the admitted request.
pub const NAMESPACE_READS: &[&str] = &[
    "namespaceObject.metadata.name",
    "object.metadata.namespace",
    "oldObject.metadata.namespace",
    "request.namespace",
];

fn rewritten(t: &TenantId, x: &str) -> String {
    let p = t.prefix();
    format!("({x}.startsWith('{p}') ? {x}.substring({}) : {x})", p.len())
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Byte ranges of the code outside string literals (CEL: '..', "..", triple-quoted, raw).
fn code_ranges(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut start) = (0, 0);
    while i < b.len() {
        let c = b[i];
        if c != b'\'' && c != b'"' {
            i += 1;
            continue;
        }
        out.push((start, i));
        let raw = i > 0 && matches!(b[i - 1], b'r' | b'R');
        let triple = b.len() >= i + 3 && b[i + 1] == c && b[i + 2] == c;
        let q = if triple { 3 } else { 1 };
        i += q;
        while i < b.len() {
            if b[i] == b'\\' && !raw {
                i += 2;
                continue;
            }
            if b[i] == c && (!triple || (b.len() >= i + 3 && b[i + 1] == c && b[i + 2] == c)) {
                i += q;
                break;
            }
            i += 1;
        }
        start = i.min(b.len());
    }
    out.push((start, b.len()));
    out
}

/// The expression with every namespace read mapped into the tenant's names.
pub(crate) fn expression_up(t: &TenantId, expr: &str) -> String {
    let b = expr.as_bytes();
    let mut out = String::with_capacity(expr.len() + 64);
    let mut copied = 0;
    for (lo, hi) in code_ranges(expr) {
        let mut i = lo;
        while i < hi {
            // Bytes, not `&expr[i..end]`: `i` steps byte by byte and may sit inside a
            // multi-byte character of the tenant's expression. A match starts at an ASCII
            // byte, a character boundary, so the `&expr[..i]` slices below are safe.
            let found = NAMESPACE_READS.iter().find(|r| {
                let end = i + r.len();
                end <= hi
                    && b.get(i..end) == Some(r.as_bytes())
                    && (i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b'.'))
                    && (end == b.len() || !is_ident(b[end]))
                    && !expr[..i].trim_end().ends_with("has(")
            });
            match found {
                Some(r) => {
                    out.push_str(&expr[copied..i]);
                    out.push_str(&rewritten(t, r));
                    i += r.len();
                    copied = i;
                }
                None => i += 1,
            }
        }
    }
    out.push_str(&expr[copied..]);
    out
}

/// The inverse of [`expression_up`].
pub(crate) fn expression_down(t: &TenantId, expr: &str) -> String {
    let mut out = expr.to_owned();
    for r in NAMESPACE_READS {
        out = out.replace(&rewritten(t, r), r);
    }
    out
}

pub(crate) fn cel_up(t: &TenantId, v: &mut Value) {
    if let Value::String(s) = v {
        *s = expression_up(t, s);
    }
}

pub(crate) fn cel_down(t: &TenantId, v: &mut Value) {
    if let Value::String(s) = v {
        *s = expression_down(t, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> TenantId {
        TenantId::parse("foofoo").unwrap()
    }

    #[test]
    fn namespace_reads_are_mapped_and_back() {
        let e = "namespaceObject.metadata.name == 'dev'";
        let up = expression_up(&t(), e);
        assert_eq!(
            up,
            "(namespaceObject.metadata.name.startsWith('foofoo-') ? namespaceObject.metadata.name.substring(7) : namespaceObject.metadata.name) == 'dev'"
        );
        assert_eq!(expression_down(&t(), &up), e);
        let e = "request.namespace != object.metadata.namespace || oldObject.metadata.namespace.size() > 3";
        let up = expression_up(&t(), e);
        assert_eq!(up.matches("startsWith('foofoo-')").count(), 3);
        assert_eq!(expression_down(&t(), &up), e);
    }

    #[test]
    fn literals_has_and_longer_selections_untouched() {
        for e in [
            "'request.namespace' == \"object.metadata.namespace\"",
            "has(object.metadata.namespace)",
            "has( request.namespace )",
            "x.request.namespace == 'a'",
            "request.namespaces == 1",
            "'''request.namespace''' + r'object.metadata.namespace\\'",
            "object.spec.replicas > 1",
        ] {
            assert_eq!(expression_up(&t(), e), e, "{e}");
        }
        // escaped quote inside a literal does not end it
        let e = r"'it\'s request.namespace' + request.namespace";
        assert_eq!(expression_up(&t(), e).matches("startsWith").count(), 1);
    }

    /// A multi-byte character in code (not a literal) once made the scan slice the
    /// expression inside it (a panic on a tenant's policy body).
    #[test]
    fn multibyte_characters_outside_literals_do_not_panic() {
        for e in [
            "é == object.metadata.namespace",
            "ñ request.namespace",
            "object.metadata.namespace == ü",
            "€€€€€€€€€€€€€€€€€€€€€€€€€€€",
        ] {
            let up = expression_up(&t(), e);
            assert_eq!(expression_down(&t(), &up), e, "{e}");
        }
        assert_eq!(
            expression_up(&t(), "é == request.namespace")
                .matches("startsWith")
                .count(),
            1
        );
    }
}
