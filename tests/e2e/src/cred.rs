//! A tenant user's client credential as PEM files (for curl and raw TLS clients), taken from
//! the kubeconfig `paddock tenant create` or `paddock cert issue` printed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

/// Client certificate and key files.
pub struct Cred {
    pub cert: PathBuf,
    pub key: PathBuf,
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 (kubeconfig data, Secret data).
pub fn b64(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (whitespace and padding ignored).
pub fn b64decode(s: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let (mut buf, mut bits) = (0u32, 0);
    for c in s.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=') {
        let v = ALPHABET
            .iter()
            .position(|t| *t == c)
            .context("invalid base64")? as u32;
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
        }
    }
    Ok(out)
}

/// Writes the first user's client certificate and key of `kubeconfig` to `dir/<name>.crt`
/// and `dir/<name>.key`.
pub fn extract_cred(kubeconfig: &Path, dir: &Path, name: &str) -> Result<Cred> {
    let v: Value = serde_norway::from_str(&std::fs::read_to_string(kubeconfig)?)?;
    let user = &v["users"][0]["user"];
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    let data = |k: &str| -> Result<Vec<u8>> { b64decode(user[k].as_str().context("no data")?) };
    std::fs::write(&cert, data("client-certificate-data")?)?;
    std::fs::write(&key, data("client-key-data")?)?;
    Ok(Cred { cert, key })
}
