//! Namespace creates as clients send them, for the `generateName` checks of issue 39: a body
//! of a given content type (JSON, YAML, protobuf as client-go sends built-in kinds, or one
//! paddock cannot read) posted with a kubeconfig's client certificate, and the shape of a
//! name the apiserver generates.

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, anyhow};
use http::Method;
use serde_json::Value;

use crate::http::Tls;

/// The apiserver's alphabet for generated names.
const ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// Whether `name` is `base` and five characters as the apiserver generates them.
pub fn is_generated(name: &str, base: &str) -> bool {
    name.strip_prefix(base)
        .is_some_and(|rest| rest.len() == 5 && rest.chars().all(|c| ALPHABET.contains(c)))
}

fn field(num: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut varint = |mut v: u64| loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    };
    varint((u64::from(num) << 3) | 2);
    varint(bytes.len() as u64);
    out.extend_from_slice(bytes);
    out
}

/// A Namespace with `metadata.generateName` and labels, as client-go encodes it in protobuf
/// (`k8s\0`, then runtime.Unknown: TypeMeta, raw object).
pub fn protobuf_namespace(generate_name: &str, labels: &[(&str, &str)]) -> Vec<u8> {
    let mut meta = field(2, generate_name.as_bytes());
    for (k, v) in labels {
        let entry = [field(1, k.as_bytes()), field(2, v.as_bytes())].concat();
        meta.extend(field(11, &entry));
    }
    let namespace = field(1, &meta);
    let type_meta = [field(1, b"v1"), field(2, b"Namespace")].concat();
    let mut body = b"k8s\x00".to_vec();
    body.extend(field(1, &type_meta));
    body.extend(field(2, &namespace));
    body
}

/// Posts a namespace create with `content_type` and `body`; the status and the answer (JSON).
pub fn create(kubeconfig: &Path, content_type: &str, body: Vec<u8>) -> Result<(u16, Value)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let tls = Tls::from_kubeconfig(kubeconfig, None)?;
    let (status, answer) = rt
        .block_on(tls.send(
            Method::POST,
            "/api/v1/namespaces",
            Some((content_type, body)),
            Duration::from_secs(30),
        ))
        .map_err(|e| anyhow!("creating a namespace ({content_type}): {e}"))?;
    let v = serde_json::from_slice(&answer).unwrap_or(Value::Null);
    Ok((status.as_u16(), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_and_a_protobuf_namespace() {
        assert!(is_generated("dev-x2b4z", "dev-"));
        assert!(!is_generated("dev-x2b4", "dev-"));
        assert!(!is_generated("dev-aaaaa", "dev-"));
        assert!(!is_generated("web-x2b4z", "dev-"));
        let pb = protobuf_namespace("pb-", &[("a", "b")]);
        assert!(pb.starts_with(b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Namespace"));
    }
}
