//! Request bodies with duplicate object keys.
//!
//! paddock translates request bodies through a DOM, which keeps only the last of duplicate
//! keys. The apiserver, though, reports duplicates (`fieldValidation=Strict` refuses them,
//! `Warn` warns), and a client relies on that. So when a body has duplicate keys, paddock
//! writes its changes into the original bytes instead: members whose value the translation did
//! not change keep their bytes (duplicates included); changed members are replaced in every
//! occurrence; added members are inserted. Nothing else is touched.

use serde_json::Value;

use crate::response::members::{array_elements, object_members};

/// Does any object in this JSON document repeat a key?
pub fn has_duplicate_keys(raw: &[u8]) -> bool {
    fn walk(raw: &[u8], depth: usize) -> bool {
        if depth > 64 {
            return false;
        }
        let t = raw
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map(|i| raw[i]);
        match t {
            Some(b'{') => {
                let Ok(members) = object_members(raw) else {
                    return false;
                };
                let mut seen = std::collections::HashSet::with_capacity(members.len());
                for (k, r) in &members {
                    if !seen.insert(k.clone()) || walk(&raw[r.clone()], depth + 1) {
                        return true;
                    }
                }
                false
            }
            Some(b'[') => {
                let Ok(elems) = array_elements(raw) else {
                    return false;
                };
                elems.iter().any(|r| walk(&raw[r.clone()], depth + 1))
            }
            _ => false,
        }
    }
    walk(raw, 0)
}

/// Writes the difference between `before` (the body as parsed) and `after` (translated) into
/// the original bytes `raw`. `None` when the shapes do not allow it (the caller then sends the
/// translated DOM).
pub fn splice_changes(raw: &[u8], before: &Value, after: &Value) -> Option<Vec<u8>> {
    let (Value::Object(b), Value::Object(a)) = (before, after) else {
        return None;
    };
    let start = raw.iter().position(|c| !c.is_ascii_whitespace())?;
    if raw[start] != b'{' {
        return None;
    }
    let members = object_members(raw).ok()?;
    let mut out = Vec::with_capacity(raw.len() + 64);
    let mut pos = 0;
    for (k, r) in &members {
        let key: &str = k;
        match (b.get(key), a.get(key)) {
            (Some(bv), Some(av)) if bv == av => {}
            (Some(bv), Some(av)) => {
                out.extend_from_slice(&raw[pos..r.start]);
                // Nested objects keep their own duplicates where the translation allows.
                let nested = if bv.is_object() && av.is_object() {
                    splice_changes(&raw[r.clone()], bv, av)
                } else {
                    None
                };
                match nested {
                    Some(n) => out.extend_from_slice(&n),
                    None => out.extend_from_slice(&serde_json::to_vec(av).ok()?),
                }
                pos = r.end;
            }
            // A member the translation removed, or one absent from the DOM: not supported.
            _ => return None,
        }
    }
    out.extend_from_slice(&raw[pos..]);
    // Members the translation added go right after the opening brace.
    let added: Vec<(&String, &Value)> = a
        .iter()
        .filter(|(k, _)| !b.contains_key(k.as_str()))
        .collect();
    if added.is_empty() {
        return Some(out);
    }
    let brace = out.iter().position(|c| *c == b'{')?;
    let mut ins = Vec::new();
    for (k, v) in added {
        ins.extend_from_slice(&serde_json::to_vec(k).ok()?);
        ins.push(b':');
        ins.extend_from_slice(&serde_json::to_vec(v).ok()?);
        ins.push(b',');
    }
    if members.is_empty() {
        ins.pop();
    }
    out.splice(brace + 1..brace + 1, ins);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_found_at_any_depth() {
        assert!(has_duplicate_keys(br#"{"a":1,"a":2}"#));
        assert!(has_duplicate_keys(
            br#"{"spec":{"replicas":1,"replicas":2}}"#
        ));
        assert!(has_duplicate_keys(br#"{"l":[{"x":1,"x":1}]}"#));
        assert!(!has_duplicate_keys(
            br#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#
        ));
        assert!(!has_duplicate_keys(b"[]"));
    }

    #[test]
    fn changed_members_replaced_duplicates_kept() {
        let raw = br#"{"metadata":{"name":"d","namespace":"ns"},"spec":{"unknownField":"foo","replicas":1,"replicas":2}}"#;
        let before: Value = serde_json::from_slice(raw).unwrap();
        let mut after = before.clone();
        after["metadata"]["namespace"] = Value::String("foofoo-ns".into());
        after["metadata"]["labels"] = serde_json::json!({"x": "y"});
        let out = splice_changes(raw, &before, &after).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(r#""replicas":1,"replicas":2"#), "{text}");
        assert!(text.contains(r#""namespace":"foofoo-ns""#), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v, after);
    }
}
