//! YAML text of JSON values as gnostic writes them into `Any` fields of the OpenAPI v2
//! protobuf document (openapi_pb.rs): yaml.v3's `Marshal` of the parsed node with its style
//! cleared.

use serde_json::{Map, Value};

/// YAML text of a JSON value as gnostic writes an `Any`: yaml.v3's block style (indent 4,
/// sequences indented under their key, a mapping in a sequence item starting on the dash's
/// line), scalars plain where yaml.v3 would write them plain. Where yaml.v3's choice is
/// intricate (multi-line text, long lines it would fold at column 80) the string is written
/// double-quoted instead: the same value for every YAML reader, not the same bytes.
pub fn yaml_text(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => yaml_map(&mut out, m, 0, 0),
        Value::Array(a) if !a.is_empty() => yaml_seq(&mut out, a, 0),
        _ => {
            out.push_str(&yaml_inline(v));
            out.push('\n');
        }
    }
    out
}

fn yaml_inline(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => yaml_string(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// A block mapping whose keys are at column `col`; what it contains is indented from `base`,
/// which is `col` except for a mapping that starts on a sequence item's line (libyaml
/// indents from the dash there, not from the keys).
fn yaml_map(out: &mut String, m: &Map<String, Value>, col: usize, base: usize) {
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            out.push_str(&" ".repeat(col));
        }
        out.push_str(&yaml_string(k));
        out.push(':');
        match v {
            Value::Object(c) if !c.is_empty() => {
                out.push('\n');
                out.push_str(&" ".repeat(base + 4));
                yaml_map(out, c, base + 4, base + 4);
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                out.push_str(&" ".repeat(base + 4));
                yaml_seq(out, a, base + 4);
            }
            _ => {
                out.push(' ');
                out.push_str(&yaml_inline(v));
                out.push('\n');
            }
        }
    }
}

fn yaml_seq(out: &mut String, a: &[Value], col: usize) {
    for (i, v) in a.iter().enumerate() {
        if i > 0 {
            out.push_str(&" ".repeat(col));
        }
        out.push_str("- ");
        match v {
            Value::Object(c) if !c.is_empty() => yaml_map(out, c, col + 2, col),
            Value::Array(x) if !x.is_empty() => yaml_seq(out, x, col + 2),
            _ => {
                out.push_str(&yaml_inline(v));
                out.push('\n');
            }
        }
    }
}

/// A string scalar: plain when yaml.v3 would write it plain, double-quoted when plain text
/// would read back as another type, single-quoted when plain would read back wrong.
fn yaml_string(s: &str) -> String {
    if s.is_empty() || resolves_to_non_string(s) || s.len() > 60 && s.contains(' ') {
        return json_quoted(s);
    }
    if s.chars().any(|c| c.is_control() || c == '\u{feff}') {
        return json_quoted(s);
    }
    if plain_allowed(s) {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', "''"))
}

fn json_quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// yaml.v3 `resolve`: text that a plain scalar would turn into null, a bool, a number.
fn resolves_to_non_string(s: &str) -> bool {
    const WORDS: [&str; 15] = [
        "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", ".nan",
        ".NaN", ".NAN", ".inf", "<<",
    ];
    if WORDS.contains(&s) {
        return true;
    }
    let t = s.trim_start_matches(['+', '-']);
    if matches!(t, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    let plain = s.replace('_', "");
    is_yaml_float(&plain)
        || plain.parse::<i64>().is_ok()
        || s.strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
        || s.strip_prefix("0o")
            .is_some_and(|o| !o.is_empty() && o.chars().all(|c| c.is_digit(8)))
        || s.strip_prefix("0b")
            .is_some_and(|b| !b.is_empty() && b.chars().all(|c| c == '0' || c == '1'))
}

/// yaml.v3's float pattern `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let mant_ok = match mant.split_once('.') {
        Some(("", frac)) => !frac.is_empty() && digits(frac),
        Some((int, frac)) => digits(int) && digits(frac),
        None => !mant.is_empty() && digits(mant),
    };
    let exp_ok = exp.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mant_ok && exp_ok
}

/// libyaml's analysis of a plain scalar in block context.
fn plain_allowed(s: &str) -> bool {
    // `s` is not empty (the one caller returns before), so `b[0]` and `b[b.len() - 1]` hold.
    let b = s.as_bytes();
    if s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    if b[0] == b' ' || b[b.len() - 1] == b' ' {
        return false;
    }
    let first_indicator = matches!(
        b[0],
        b'#' | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    );
    let dash_like = matches!(b[0], b'-' | b'?' | b':') && (b.len() == 1 || b[1] == b' ');
    if first_indicator || dash_like {
        return false;
    }
    for (i, c) in b.iter().enumerate() {
        let next_space = b.get(i + 1).is_none_or(|n| *n == b' ');
        if *c == b':' && next_space {
            return false;
        }
        if *c == b'#' && i > 0 && b[i - 1] == b' ' {
            return false;
        }
    }
    true
}
