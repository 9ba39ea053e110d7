//! The protobuf wire format, schema-less: a message is a list of tag/value fields, decoded and
//! re-encoded without loss (unknown fields keep their bytes).

use crate::error::TranslateError;

/// The 4-byte prefix of every Kubernetes protobuf body.
pub const MAGIC: &[u8; 4] = b"k8s\x00";

pub(crate) fn malformed(what: &str) -> TranslateError {
    TranslateError::BadRequest(format!("malformed protobuf body: {what}"))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Wire {
    Varint(u64),
    I64([u8; 8]),
    Len(Vec<u8>),
    I32([u8; 4]),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub num: u32,
    pub val: Wire,
}

pub(crate) fn read_varint(b: &[u8], pos: &mut usize) -> Result<u64, TranslateError> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos).ok_or_else(|| malformed("truncated varint"))?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(malformed("varint too long"))
}

pub(crate) fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

pub(crate) fn decode(b: &[u8]) -> Result<Vec<Field>, TranslateError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let key = read_varint(b, &mut pos)?;
        let num = u32::try_from(key >> 3).map_err(|_| malformed("field number"))?;
        if num == 0 {
            return Err(malformed("field number 0"));
        }
        let take = |pos: &mut usize, n: usize| -> Result<&[u8], TranslateError> {
            let end = pos
                .checked_add(n)
                .filter(|e| *e <= b.len())
                .ok_or_else(|| malformed("truncated field"))?;
            let s = &b[*pos..end];
            *pos = end;
            Ok(s)
        };
        let val = match key & 7 {
            0 => Wire::Varint(read_varint(b, &mut pos)?),
            1 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(take(&mut pos, 8)?);
                Wire::I64(a)
            }
            2 => {
                let n =
                    usize::try_from(read_varint(b, &mut pos)?).map_err(|_| malformed("length"))?;
                Wire::Len(take(&mut pos, n)?.to_vec())
            }
            5 => {
                let mut a = [0u8; 4];
                a.copy_from_slice(take(&mut pos, 4)?);
                Wire::I32(a)
            }
            _ => return Err(malformed("unsupported wire type")),
        };
        out.push(Field { num, val });
    }
    Ok(out)
}

pub(crate) fn encode(fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        let wt = match f.val {
            Wire::Varint(_) => 0,
            Wire::I64(_) => 1,
            Wire::Len(_) => 2,
            Wire::I32(_) => 5,
        };
        write_varint(&mut out, (u64::from(f.num) << 3) | wt);
        match &f.val {
            Wire::Varint(v) => write_varint(&mut out, *v),
            Wire::I64(a) => out.extend_from_slice(a),
            Wire::I32(a) => out.extend_from_slice(a),
            Wire::Len(d) => {
                write_varint(&mut out, d.len() as u64);
                out.extend_from_slice(d);
            }
        }
    }
    out
}

pub(crate) fn len_field(num: u32, data: Vec<u8>) -> Field {
    Field {
        num,
        val: Wire::Len(data),
    }
}

pub(crate) fn as_str(f: &Field) -> Result<String, TranslateError> {
    match &f.val {
        Wire::Len(d) => String::from_utf8(d.clone()).map_err(|_| malformed("string is not UTF-8")),
        _ => Err(malformed("expected a string")),
    }
}

pub(crate) fn as_bytes(f: &Field) -> Result<&[u8], TranslateError> {
    match &f.val {
        Wire::Len(d) => Ok(d),
        _ => Err(malformed("expected a message")),
    }
}
