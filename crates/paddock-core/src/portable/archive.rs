//! The export archive: a POSIX ustar file whose first entry is `manifest.json` (format,
//! source tenant, object count, one sha256 per entry) followed by one YAML file per object in
//! apply order (docs/operations.md "Export, import and move").
//!
//! The writer and the reader are written here rather than taken from a crate: an archive of
//! small regular files needs only the ustar header, and the reader must refuse anything it
//! did not write (links, directories, long names, a bad header checksum, a short entry, a
//! missing end) with an error naming what is wrong, never panic, and never look at an entry's
//! bytes before the manifest has vouched for them.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::PortableError;

/// The archive format this paddock writes and reads.
pub const FORMAT: &str = "paddock.io/tenant-export/v1";
/// The first entry of every archive.
pub const MANIFEST: &str = "manifest.json";
/// Most entries an archive may hold (objects plus the manifest).
pub const MAX_ENTRIES: usize = 100_000;

const BLOCK: usize = 512;

/// What the archive says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    /// The tenant it was exported from (the tenant's id, not an upstream name).
    pub source_tenant: String,
    /// When it was written (RFC 3339; the server's clock).
    pub created: String,
    /// Whether Secrets were asked for (`--secrets`); each Secret's entry says `secret: true`.
    pub secrets: bool,
    /// Always "not included": volumes' data is out of scope.
    pub volume_data: String,
    /// Number of objects, equal to `entries.len()`.
    pub objects: usize,
    /// One per object file, in apply order.
    pub entries: Vec<Entry>,
}

/// One object file of the archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entry {
    /// Its path in the archive (`objects/00001-namespace.yaml`).
    pub file: String,
    /// The sha256 of its bytes, lower-case hex.
    pub sha256: String,
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    /// A Secret: present only when the export asked for Secrets.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
}

/// A read archive: the manifest and each entry's bytes, checked against it.
#[derive(Debug)]
pub struct Archive {
    pub manifest: Manifest,
    /// The object files' bytes, in the manifest's order.
    pub files: Vec<Vec<u8>>,
}

/// The file name of the `index`th object (from 1) of `kind`.
pub fn file_name(index: usize, kind: &str) -> String {
    format!("objects/{index:05}-{}.yaml", kind.to_ascii_lowercase())
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The archive of `manifest` and the object files (`files[i]` is `manifest.entries[i]`).
pub fn write(manifest: &Manifest, files: &[Vec<u8>]) -> Result<Vec<u8>, PortableError> {
    if files.len() != manifest.entries.len() {
        return Err(PortableError::Damaged(format!(
            "{} files for {} entries",
            files.len(),
            manifest.entries.len()
        )));
    }
    let json = serde_json::to_vec_pretty(manifest)
        .map_err(|e| PortableError::Damaged(format!("manifest: {e}")))?;
    let mut out = Vec::with_capacity(files.iter().map(|f| f.len() + 2 * BLOCK).sum::<usize>());
    append(&mut out, MANIFEST, &json)?;
    for (entry, bytes) in manifest.entries.iter().zip(files) {
        append(&mut out, &entry.file, bytes)?;
    }
    out.resize(out.len() + 2 * BLOCK, 0);
    Ok(out)
}

fn append(out: &mut Vec<u8>, name: &str, data: &[u8]) -> Result<(), PortableError> {
    if name.len() >= 100 || !name.is_ascii() {
        return Err(PortableError::Damaged(format!(
            "entry name {name:?} too long"
        )));
    }
    let mut h = [0u8; BLOCK];
    h[..name.len()].copy_from_slice(name.as_bytes());
    octal(&mut h[100..108], 0o644);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], data.len() as u64);
    octal(&mut h[136..148], 0);
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].fill(b' ');
    let sum: u64 = h.iter().map(|b| u64::from(*b)).sum();
    octal(&mut h[148..155], sum);
    h[155] = b' ';
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    let pad = (BLOCK - data.len() % BLOCK) % BLOCK;
    out.resize(out.len() + pad, 0);
    Ok(())
}

/// Writes `v` as zero-padded octal digits followed by a NUL into `field`.
fn octal(field: &mut [u8], v: u64) {
    let digits = field.len() - 1;
    let s = format!("{v:0digits$o}");
    let s = s.as_bytes();
    let start = s.len().saturating_sub(digits);
    field[..digits].copy_from_slice(&s[start..]);
    field[digits] = 0;
}

fn parse_octal(field: &[u8]) -> Option<u64> {
    let text: Vec<u8> = field
        .iter()
        .copied()
        .take_while(|b| *b != 0)
        .filter(|b| *b != b' ')
        .collect();
    if text.is_empty() || !text.iter().all(|b| (b'0'..=b'7').contains(b)) {
        return None;
    }
    text.iter().try_fold(0u64, |n, b| {
        n.checked_mul(8)?.checked_add(u64::from(b - b'0'))
    })
}

/// Reads and checks an archive: every header's checksum, every entry a regular file of the
/// size it claims, the end marker, the manifest first and of this [`FORMAT`], its count, and
/// each file's sha256 and place. Nothing is parsed beyond the manifest.
pub fn read(bytes: &[u8]) -> Result<Archive, PortableError> {
    let mut raw: Vec<(String, &[u8])> = Vec::new();
    let mut at = 0usize;
    loop {
        let header = bytes.get(at..at + BLOCK).ok_or_else(|| {
            PortableError::Truncated(format!("no end-of-archive marker after {at} bytes"))
        })?;
        if header.iter().all(|b| *b == 0) {
            // The end marker is two zero blocks; a cut inside it is a cut too.
            let second = bytes.get(at + BLOCK..at + 2 * BLOCK);
            if !second.is_some_and(|b| b.iter().all(|x| *x == 0)) {
                return Err(PortableError::Truncated(
                    "the end-of-archive marker is cut short".into(),
                ));
            }
            break;
        }
        let (name, size) = header_of(header, at)?;
        let start = at + BLOCK;
        let data = bytes.get(start..start + size).ok_or_else(|| {
            PortableError::Truncated(format!(
                "entry {name:?} claims {size} bytes, the archive ends first"
            ))
        })?;
        raw.push((name, data));
        if raw.len() > MAX_ENTRIES {
            return Err(PortableError::Damaged(format!(
                "more than {MAX_ENTRIES} entries"
            )));
        }
        at = start + size.div_ceil(BLOCK) * BLOCK;
    }
    let Some(((first, manifest_bytes), rest)) = raw.split_first() else {
        return Err(PortableError::Foreign("an empty archive".into()));
    };
    if first != MANIFEST {
        return Err(PortableError::Foreign(format!(
            "the first entry is {first:?}, not {MANIFEST}: not a paddock tenant export"
        )));
    }
    let manifest = manifest_of(manifest_bytes)?;
    if rest.len() != manifest.entries.len() {
        return Err(PortableError::Damaged(format!(
            "the manifest lists {} objects, the archive holds {}",
            manifest.entries.len(),
            rest.len()
        )));
    }
    let mut files = Vec::with_capacity(rest.len());
    for (entry, (name, data)) in manifest.entries.iter().zip(rest) {
        if *name != entry.file {
            return Err(PortableError::Damaged(format!(
                "entry {name:?} where the manifest has {:?}",
                entry.file
            )));
        }
        if sha256_hex(data) != entry.sha256 {
            return Err(PortableError::Damaged(format!(
                "{name}: its sha256 is not the manifest's"
            )));
        }
        files.push(data.to_vec());
    }
    Ok(Archive { manifest, files })
}

/// A header's entry name and size; only regular files with a valid checksum.
fn header_of(h: &[u8], at: usize) -> Result<(String, usize), PortableError> {
    let stored = parse_octal(&h[148..156]);
    let mut copy = h.to_vec();
    copy[148..156].fill(b' ');
    let sum: u64 = copy.iter().map(|b| u64::from(*b)).sum();
    if stored != Some(sum) {
        return Err(if at == 0 && &h[257..262] != b"ustar" {
            PortableError::Foreign("not a tar archive".into())
        } else {
            PortableError::Damaged(format!("a bad header checksum at byte {at}"))
        });
    }
    let name_len = h[..100].iter().position(|b| *b == 0).unwrap_or(100);
    let name = std::str::from_utf8(&h[..name_len])
        .map_err(|_| PortableError::Damaged(format!("a name that is not UTF-8 at byte {at}")))?
        .to_owned();
    if h[345] != 0 || !matches!(h[156], b'0' | 0) {
        return Err(PortableError::Foreign(format!(
            "entry {name:?} is not a plain file this paddock writes"
        )));
    }
    let size = parse_octal(&h[124..136])
        .and_then(|s| usize::try_from(s).ok())
        .ok_or_else(|| PortableError::Damaged(format!("entry {name:?}: a bad size field")))?;
    Ok((name, size))
}

fn manifest_of(bytes: &[u8]) -> Result<Manifest, PortableError> {
    let v: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| PortableError::Damaged(format!("{MANIFEST}: {e}")))?;
    let format = v.get("format").and_then(|f| f.as_str()).unwrap_or("");
    if format != FORMAT {
        return Err(PortableError::Foreign(format!(
            "format {format:?}: this paddock reads {FORMAT}"
        )));
    }
    let m: Manifest = serde_json::from_value(v)
        .map_err(|e| PortableError::Damaged(format!("{MANIFEST}: {e}")))?;
    if m.objects != m.entries.len() {
        return Err(PortableError::Damaged(format!(
            "the manifest counts {} objects and lists {}",
            m.objects,
            m.entries.len()
        )));
    }
    Ok(m)
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
