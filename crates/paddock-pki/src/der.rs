//! A tiny DER reader/writer: just enough to splice a multi-valued subject into a certificate
//! or a CSR produced by rcgen and re-sign it.
//!
//! Why: rcgen's `DistinguishedName` keeps at most one value per attribute type, but a
//! Kubernetes client certificate carries one `O` per group. rcgen builds every other part of
//! the certificate (extensions, validity, serial, key identifiers); we replace the subject
//! element of the signed structure (`TBSCertificate` or `CertificationRequestInfo`) with our
//! own encoding and sign the result again with the same key and algorithm.

use crate::PkiError;

pub(crate) const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
const TAG_OID: u8 = 0x06;
const TAG_UTF8: u8 = 0x0c;
const TAG_BIT_STRING: u8 = 0x03;

/// OID 2.5.4.3 (commonName), 2.5.4.10 (organizationName), 2.5.4.11 (organizationalUnitName).
const OID_CN: [u8; 3] = [0x55, 0x04, 0x03];
const OID_O: [u8; 3] = [0x55, 0x04, 0x0a];
const OID_OU: [u8; 3] = [0x55, 0x04, 0x0b];

fn bad(what: &str) -> PkiError {
    PkiError::X509(format!("malformed DER: {what}"))
}

/// One TLV element: the whole encoding and the content part.
pub(crate) struct Tlv<'a> {
    pub tag: u8,
    pub whole: &'a [u8],
    pub content: &'a [u8],
}

/// Reads one TLV from the front of `input`; returns it and the rest.
pub(crate) fn read_tlv(input: &[u8]) -> Result<(Tlv<'_>, &[u8]), PkiError> {
    let tag = *input.first().ok_or_else(|| bad("empty input"))?;
    if tag & 0x1f == 0x1f {
        return Err(bad("multi-byte tags are not supported"));
    }
    let first = *input.get(1).ok_or_else(|| bad("missing length"))?;
    let (len, header) = if first < 0x80 {
        (first as usize, 2usize)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 {
            return Err(bad("unsupported length encoding"));
        }
        let bytes = input.get(2..2 + n).ok_or_else(|| bad("truncated length"))?;
        let len = bytes.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, 2 + n)
    };
    let end = header
        .checked_add(len)
        .ok_or_else(|| bad("length overflow"))?;
    let whole = input.get(..end).ok_or_else(|| bad("truncated element"))?;
    let content = whole
        .get(header..)
        .ok_or_else(|| bad("truncated element"))?;
    let rest = input.get(end..).ok_or_else(|| bad("truncated element"))?;
    Ok((
        Tlv {
            tag,
            whole,
            content,
        },
        rest,
    ))
}

/// All TLVs in `content`, in order.
pub(crate) fn read_all(mut content: &[u8]) -> Result<Vec<Tlv<'_>>, PkiError> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (tlv, rest) = read_tlv(content)?;
        out.push(tlv);
        content = rest;
    }
    Ok(out)
}

fn push_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        let significant = &bytes[skip..];
        out.push(0x80 | significant.len() as u8);
        out.extend_from_slice(significant);
    }
}

/// Encodes one TLV.
pub(crate) fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    push_len(&mut out, content.len());
    out.extend_from_slice(content);
    out
}

fn rdn(oid: &[u8], value: &str) -> Vec<u8> {
    let mut atv = tlv(TAG_OID, oid);
    atv.extend_from_slice(&tlv(TAG_UTF8, value.as_bytes()));
    tlv(TAG_SET, &tlv(TAG_SEQUENCE, &atv))
}

/// The DER of a Name: one RDN per group (`O`), then the tenant (`OU`), then the user (`CN`).
/// Every value is a UTF8String.
pub(crate) fn encode_subject(user: &str, groups: &[String], tenant: Option<&str>) -> Vec<u8> {
    let mut rdns = Vec::new();
    for g in groups {
        rdns.extend_from_slice(&rdn(&OID_O, g));
    }
    if let Some(t) = tenant {
        rdns.extend_from_slice(&rdn(&OID_OU, t));
    }
    rdns.extend_from_slice(&rdn(&OID_CN, user));
    tlv(TAG_SEQUENCE, &rdns)
}

/// Takes a signed structure `SEQUENCE { toBeSigned, AlgorithmIdentifier, BIT STRING }`
/// (a certificate or a CSR), replaces element `subject_index` of `toBeSigned` with
/// `new_subject`, and signs the new `toBeSigned` with `sign` (which must use the same
/// algorithm as the original signature, whose AlgorithmIdentifier is kept).
pub(crate) fn replace_subject_and_resign(
    signed: &[u8],
    subject_index: usize,
    new_subject: &[u8],
    sign: impl FnOnce(&[u8]) -> Result<Vec<u8>, PkiError>,
) -> Result<Vec<u8>, PkiError> {
    let (outer, rest) = read_tlv(signed)?;
    if outer.tag != TAG_SEQUENCE || !rest.is_empty() {
        return Err(bad("not a single SEQUENCE"));
    }
    let parts = read_all(outer.content)?;
    let [tbs, alg, _sig] = parts.as_slice() else {
        return Err(bad("signed structure must have 3 elements"));
    };
    if tbs.tag != TAG_SEQUENCE || alg.tag != TAG_SEQUENCE {
        return Err(bad("unexpected element types"));
    }
    let fields = read_all(tbs.content)?;
    let old_subject = fields
        .get(subject_index)
        .ok_or_else(|| bad("no subject element"))?;
    if old_subject.tag != TAG_SEQUENCE {
        return Err(bad("subject element is not a SEQUENCE"));
    }
    let mut tbs_content = Vec::with_capacity(tbs.content.len() + new_subject.len());
    for (i, f) in fields.iter().enumerate() {
        if i == subject_index {
            tbs_content.extend_from_slice(new_subject);
        } else {
            tbs_content.extend_from_slice(f.whole);
        }
    }
    let new_tbs = tlv(TAG_SEQUENCE, &tbs_content);
    let signature = sign(&new_tbs)?;
    let mut bits = Vec::with_capacity(signature.len() + 1);
    bits.push(0); // no unused bits
    bits.extend_from_slice(&signature);
    let mut body = new_tbs;
    body.extend_from_slice(alg.whole);
    body.extend_from_slice(&tlv(TAG_BIT_STRING, &bits));
    Ok(tlv(TAG_SEQUENCE, &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lengths_roundtrip() {
        for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let content = vec![7u8; len];
            let enc = tlv(TAG_SEQUENCE, &content);
            let (t, rest) = read_tlv(&enc).unwrap();
            assert!(rest.is_empty());
            assert_eq!(t.content.len(), len);
            assert_eq!(t.whole.len(), enc.len());
        }
    }

    #[test]
    fn truncated_is_an_error() {
        let enc = tlv(TAG_SEQUENCE, &[1, 2, 3]);
        assert!(read_tlv(&enc[..enc.len() - 1]).is_err());
        assert!(read_tlv(&[]).is_err());
    }
}
