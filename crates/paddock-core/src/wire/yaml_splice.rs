//! Server-side apply bodies in YAML, translated without moving a line.
//!
//! The apiserver reads an apply body itself and reports what is wrong with it by line
//! (`line 9: key "foo" already set in map` under `fieldValidation=Strict`); a client relies on
//! those answers. Re-serialising the translated object would lose duplicate keys and renumber
//! every line. So paddock writes its changes into the original text instead: a top-level
//! member the translation did not change keeps its bytes (duplicates, comments and all); a
//! changed one (`apiVersion` of a tenant CRD, `metadata` with a prefixed name or a stamped
//! label) is written as one line of JSON flow style (which is YAML) followed by as many empty
//! lines as it had, so every other line keeps its number; an added member goes at the end.
//!
//! Only a plain block mapping at the top level is handled this way (no directives, no
//! `---`, no flow document); the result is parsed again and must equal the translated object,
//! else the caller sends the translated object as JSON.

use serde_json::Value;

/// One top-level member: its key and its lines `[start, end)`.
struct Member {
    key: String,
    start: usize,
    end: usize,
}

/// The key of a top-level `key: value` line; None for anything else.
fn top_key(line: &str) -> Option<String> {
    let first = line.chars().next()?;
    if matches!(first, ' ' | '\t' | '#' | '\r' | '\n') {
        return None;
    }
    let (k, _) = line.split_once(':')?;
    let k = k.trim_end();
    let unquoted = k
        .strip_prefix('"')
        .and_then(|x| x.strip_suffix('"'))
        .or_else(|| k.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
        .unwrap_or(k);
    Some(unquoted.to_owned())
}

fn members(lines: &[&str]) -> Option<Vec<Member>> {
    let mut out: Vec<Member> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_end();
        if t.starts_with("---") || t.starts_with("...") || t.starts_with('%') {
            return None;
        }
        let Some(first) = line.chars().next() else {
            continue;
        };
        if matches!(first, ' ' | '\t' | '#' | '\r' | '\n') {
            continue;
        }
        // Any other line at column 0 must be a `key:` line (not a flow document, a list).
        if matches!(first, '{' | '[' | '-' | '?' | '&' | '*' | '!' | '|' | '>') {
            return None;
        }
        let key = top_key(line)?;
        if let Some(last) = out.last_mut() {
            last.end = i;
        }
        out.push(Member {
            key,
            start: i,
            end: lines.len(),
        });
    }
    Some(out)
}

/// The translated object written into the original YAML text (see the module comment), or
/// None when that is not possible.
pub fn splice_yaml(raw: &[u8], before: &Value, after: &Value) -> Option<Vec<u8>> {
    let (Value::Object(b), Value::Object(a)) = (before, after) else {
        return None;
    };
    let text = std::str::from_utf8(raw).ok()?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let members = members(&lines)?;
    if b.keys().any(|k| !a.contains_key(k)) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 64);
    // Lines before the first member (blank lines, comments) stay.
    let first = members.first().map_or(lines.len(), |m| m.start);
    out.extend(lines[..first].iter().copied());
    for m in &members {
        let chunk: String = lines[m.start..m.end].concat();
        if b.get(&m.key) == a.get(&m.key) {
            out.push_str(&chunk);
            continue;
        }
        // A changed member that occurs twice cannot be written in one place.
        if members.iter().filter(|x| x.key == m.key).count() > 1 {
            return None;
        }
        let value = a.get(&m.key)?;
        out.push_str(&serde_json::to_string(&m.key).ok()?);
        out.push_str(": ");
        out.push_str(&serde_json::to_string(value).ok()?);
        let newlines = chunk.matches('\n').count();
        out.push_str(&"\n".repeat(newlines.max(1)));
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    for (k, v) in a.iter().filter(|(k, _)| !b.contains_key(*k)) {
        out.push_str(&serde_json::to_string(k).ok()?);
        out.push_str(": ");
        out.push_str(&serde_json::to_string(v).ok()?);
        out.push('\n');
    }
    let reread: Value = serde_norway::from_str(&out).ok()?;
    (reread == *after).then(|| out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The conformance test's body: duplicate `foo` on line 9 stays on line 9.
    #[test]
    fn duplicates_keep_their_line() {
        let raw = "\napiVersion: example.com/v1\nkind: Noxu\nmetadata:\n  name: mytest\nspec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n  cronSpec: \"* * * * */5\"\n  ports:\n  - name: x\n    containerPort: 80\n    protocol: TCP";
        let before: Value = serde_norway::from_str(raw).unwrap();
        let mut after = before.clone();
        after["apiVersion"] = json!("foofoo-example.com/v1");
        after["metadata"] = json!({"name":"foofoo-mytest","labels":{"paddock.io/tenant":"foofoo"}});
        let out = String::from_utf8(splice_yaml(raw.as_bytes(), &before, &after).unwrap()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], r#""apiVersion": "foofoo-example.com/v1""#);
        assert_eq!(lines[2], "kind: Noxu");
        assert_eq!(
            lines[3],
            r#""metadata": {"name":"foofoo-mytest","labels":{"paddock.io/tenant":"foofoo"}}"#
        );
        assert_eq!(lines[4], "");
        assert_eq!(lines[7], "  foo: foo1");
        assert_eq!(lines[8], "  foo: foo2", "line 9 keeps the duplicate");
        assert_eq!(lines.len(), raw.lines().count());
    }

    #[test]
    fn unchanged_is_byte_identical_and_added_members_go_last() {
        let raw = "# c\nkind: ConfigMap\napiVersion: v1\ndata:\n  a: |\n    x\n";
        let v: Value = serde_norway::from_str(raw).unwrap();
        assert_eq!(splice_yaml(raw.as_bytes(), &v, &v).unwrap(), raw.as_bytes());
        let mut after = v.clone();
        after["metadata"] = json!({"labels":{"t":"x"}});
        let out = String::from_utf8(splice_yaml(raw.as_bytes(), &v, &after).unwrap()).unwrap();
        assert!(out.starts_with(raw));
        assert!(out.ends_with("\"metadata\": {\"labels\":{\"t\":\"x\"}}\n"));
    }

    #[test]
    fn other_shapes_fall_back() {
        let v = json!({"a":1});
        let w = json!({"a":2});
        for raw in ["---\na: 1\n", "{\"a\": 1}", "- a\n", "a: 1\na: 1\n"] {
            assert!(splice_yaml(raw.as_bytes(), &v, &w).is_none(), "{raw}");
        }
        // a removed member
        assert!(splice_yaml(b"a: 1\nb: 2\n", &json!({"a":1,"b":2}), &json!({"a":1})).is_none());
    }
}
