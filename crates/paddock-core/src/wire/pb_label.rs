//! Labels and names of protobuf object bodies, read and set by the server (pod security labels
//! of Namespace bodies it holds at the platform's level; a namespace's cluster label and the
//! name paddock generates for `generateName`).

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

/// The fields of the ObjectMeta of a protobuf object body (field 1 of the object inside the
/// envelope's raw field 2), `None` when the body has no object or no metadata.
fn meta_fields(body: &[u8]) -> Result<Option<Vec<Field>>, TranslateError> {
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
    decode(as_bytes(meta)?).map(Some)
}

/// Reads the value of one label of a protobuf object body (ObjectMeta = field 1 of the object,
/// labels = field 11, map entries {1: key, 2: value}).
pub fn protobuf_label(body: &[u8], key: &str) -> Result<Option<String>, TranslateError> {
    for entry in meta_fields(body)?
        .unwrap_or_default()
        .iter()
        .filter(|x| x.num == 11)
    {
        let kv = decode(as_bytes(entry)?)?;
        if entry_str(&kv, 1)? == key {
            return Ok(Some(entry_str(&kv, 2)?));
        }
    }
    Ok(None)
}

/// A string field of the ObjectMeta (the last one written), `None` when unset or empty.
fn meta_str(body: &[u8], num: u32) -> Result<Option<String>, TranslateError> {
    let value = meta_fields(body)?
        .unwrap_or_default()
        .iter()
        .rev()
        .find(|x| x.num == num)
        .map(as_str)
        .transpose()?;
    Ok(value.filter(|n| !n.is_empty()))
}

/// `metadata.name` of a protobuf object body (ObjectMeta field 1), `None` when unset (the
/// tenant quota charges a namespace create by its name).
pub fn protobuf_name(body: &[u8]) -> Result<Option<String>, TranslateError> {
    meta_str(body, 1)
}

/// `metadata.generateName` of a protobuf object body (ObjectMeta field 2), `None` when unset.
pub fn protobuf_generate_name(body: &[u8]) -> Result<Option<String>, TranslateError> {
    meta_str(body, 2)
}

/// The body with its ObjectMeta's fields changed by `change`; every other byte of the object
/// is kept (an object without metadata gets one).
fn with_meta(
    body: &[u8],
    change: impl FnOnce(Vec<Field>) -> Result<Vec<Field>, TranslateError>,
) -> Result<Vec<u8>, TranslateError> {
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
    let meta = change(decode(as_bytes(&obj[meta_idx])?)?)?;
    obj[meta_idx] = len_field(1, encode(&meta));
    unknown[raw_idx] = len_field(2, encode(&obj));
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&encode(&unknown));
    Ok(out)
}

/// Sets one label of a protobuf object body, replacing an existing value; every other byte of
/// the object is kept. Used by the server to hold policy labels (pod security) at the
/// platform's level on bodies it cannot turn into JSON.
pub fn set_protobuf_label(body: &[u8], key: &str, value: &str) -> Result<Vec<u8>, TranslateError> {
    with_meta(body, |mut meta| {
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
        Ok(kept)
    })
}

/// Sets `metadata.name` of a protobuf object body (ObjectMeta field 1, first, replacing any
/// other); every other byte of the object is kept.
pub fn set_protobuf_name(body: &[u8], name: &str) -> Result<Vec<u8>, TranslateError> {
    with_meta(body, |meta| {
        let mut out = Vec::with_capacity(meta.len() + 1);
        out.push(len_field(1, name.as_bytes().to_vec()));
        out.extend(meta.into_iter().filter(|f| f.num != 1));
        Ok(out)
    })
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

    #[test]
    fn generate_name_is_read_and_a_name_set_keeping_the_rest() {
        let meta = encode(&[
            len_field(2, b"dev-".to_vec()),
            len_field(
                11,
                encode(&[len_field(1, b"a".to_vec()), len_field(2, b"1".to_vec())]),
            ),
        ]);
        let obj = encode(&[len_field(1, meta), len_field(2, Vec::new())]);
        let mut body = MAGIC.to_vec();
        body.extend_from_slice(&encode(&[len_field(2, obj)]));
        assert_eq!(protobuf_name(&body).unwrap(), None);
        assert_eq!(
            protobuf_generate_name(&body).unwrap().as_deref(),
            Some("dev-")
        );
        let named = set_protobuf_name(&body, "dev-x2b4z").unwrap();
        assert_eq!(protobuf_name(&named).unwrap().as_deref(), Some("dev-x2b4z"));
        assert_eq!(
            protobuf_generate_name(&named).unwrap().as_deref(),
            Some("dev-")
        );
        assert_eq!(protobuf_label(&named, "a").unwrap().as_deref(), Some("1"));
        let renamed = set_protobuf_name(&named, "dev-bcdfg").unwrap();
        assert_eq!(
            protobuf_name(&renamed).unwrap().as_deref(),
            Some("dev-bcdfg")
        );
        // An object without metadata gets one.
        let mut bare = MAGIC.to_vec();
        bare.extend_from_slice(&encode(&[len_field(2, Vec::new())]));
        let named = set_protobuf_name(&bare, "n").unwrap();
        assert_eq!(protobuf_name(&named).unwrap().as_deref(), Some("n"));
    }
}
