//! Labels of protobuf object bodies, read and set by the server (pod security labels of
//! Namespace bodies it holds at the platform's level).

use super::pb::Field;
use super::pb::{MAGIC, as_bytes, as_str, decode, encode, len_field, malformed};
use crate::error::TranslateError;

/// Field `num` of a map entry {1: key, 2: value}, as a string ("" when absent).
fn entry_str(kv: &[Field], num: u32) -> Result<String, TranslateError> {
    Ok(kv
        .iter()
        .find(|x| x.num == num)
        .map(as_str)
        .transpose()?
        .unwrap_or_default())
}

/// Reads the value of one label of a protobuf object body (ObjectMeta = field 1 of the object,
/// labels = field 11, map entries {1: key, 2: value}).
pub fn protobuf_label(body: &[u8], key: &str) -> Result<Option<String>, TranslateError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("missing k8s\\0 prefix"))?;
    let unknown = decode(rest)?;
    let Some(raw) = unknown.iter().rev().find(|x| x.num == 2) else {
        return Ok(None);
    };
    let obj = decode(as_bytes(raw)?)?;
    let Some(meta) = obj.iter().rev().find(|x| x.num == 1) else {
        return Ok(None);
    };
    for entry in decode(as_bytes(meta)?)?.iter().filter(|x| x.num == 11) {
        let kv = decode(as_bytes(entry)?)?;
        if entry_str(&kv, 1)? == key {
            return Ok(Some(entry_str(&kv, 2)?));
        }
    }
    Ok(None)
}

/// `metadata.name` of a protobuf object body (ObjectMeta field 1), `None` when unset (the
/// tenant quota charges a namespace create by its name).
pub fn protobuf_name(body: &[u8]) -> Result<Option<String>, TranslateError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("missing k8s\\0 prefix"))?;
    let unknown = decode(rest)?;
    let Some(raw) = unknown.iter().rev().find(|x| x.num == 2) else {
        return Ok(None);
    };
    let obj = decode(as_bytes(raw)?)?;
    let Some(meta) = obj.iter().rev().find(|x| x.num == 1) else {
        return Ok(None);
    };
    let name = decode(as_bytes(meta)?)?
        .iter()
        .rev()
        .find(|x| x.num == 1)
        .map(as_str)
        .transpose()?;
    Ok(name.filter(|n| !n.is_empty()))
}

/// Sets one label of a protobuf object body, replacing an existing value; every other byte of
/// the object is kept. Used by the server to hold policy labels (pod security) at the
/// platform's level on bodies it cannot turn into JSON.
pub fn set_protobuf_label(body: &[u8], key: &str, value: &str) -> Result<Vec<u8>, TranslateError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("missing k8s\\0 prefix"))?;
    let mut unknown = decode(rest)?;
    let raw_idx = unknown
        .iter()
        .rposition(|x| x.num == 2)
        .ok_or_else(|| malformed("no raw object"))?;
    let mut obj = decode(as_bytes(&unknown[raw_idx])?)?;
    let meta_idx = match obj.iter().rposition(|x| x.num == 1) {
        Some(i) => i,
        None => {
            obj.insert(0, len_field(1, Vec::new()));
            0
        }
    };
    let mut meta = decode(as_bytes(&obj[meta_idx])?)?;
    let mut kept = Vec::with_capacity(meta.len() + 1);
    for f in meta.drain(..) {
        if f.num == 11 && entry_str(&decode(as_bytes(&f)?)?, 1)? == key {
            continue;
        }
        kept.push(f);
    }
    let entry = vec![
        len_field(1, key.as_bytes().to_vec()),
        len_field(2, value.as_bytes().to_vec()),
    ];
    kept.push(len_field(11, encode(&entry)));
    obj[meta_idx] = len_field(1, encode(&kept));
    unknown[raw_idx] = len_field(2, encode(&obj));
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&encode(&unknown));
    Ok(out)
}

#[cfg(test)]
mod label_tests {
    use super::*;
    use crate::wire::protobuf::envelope_type;

    #[test]
    fn set_protobuf_label_replaces_and_keeps_the_rest() {
        let meta = encode(&[
            len_field(1, b"ns1".to_vec()),
            len_field(
                11,
                encode(&[len_field(1, b"a".to_vec()), len_field(2, b"1".to_vec())]),
            ),
            len_field(
                11,
                encode(&[
                    len_field(1, b"psa".to_vec()),
                    len_field(2, b"privileged".to_vec()),
                ]),
            ),
        ]);
        let obj = encode(&[len_field(1, meta), len_field(2, Vec::new())]);
        let unknown = encode(&[
            len_field(
                1,
                encode(&[
                    len_field(1, b"v1".to_vec()),
                    len_field(2, b"Namespace".to_vec()),
                ]),
            ),
            len_field(2, obj),
        ]);
        let mut body = MAGIC.to_vec();
        body.extend_from_slice(&unknown);
        assert_eq!(
            protobuf_label(&body, "psa").unwrap().as_deref(),
            Some("privileged")
        );
        let out = set_protobuf_label(&body, "psa", "baseline").unwrap();
        assert_eq!(
            protobuf_label(&out, "psa").unwrap().as_deref(),
            Some("baseline")
        );
        assert_eq!(protobuf_label(&out, "a").unwrap().as_deref(), Some("1"));
        assert_eq!(protobuf_name(&out).unwrap().as_deref(), Some("ns1"));
        assert_eq!(
            envelope_type(&out).unwrap(),
            ("v1".to_string(), "Namespace".to_string())
        );
        let added = set_protobuf_label(&out, "new", "x").unwrap();
        assert_eq!(protobuf_label(&added, "new").unwrap().as_deref(), Some("x"));
    }
}
