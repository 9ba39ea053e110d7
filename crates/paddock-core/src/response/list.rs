//! Streaming rewrite of collection bodies: Lists (`items`) and Tables (`rows`).
//!
//! The [`ObjectFramer`] hands out top-level members and, for `items`/`rows`, one element at a
//! time; [`CollectionRewriter`] writes the output as it goes, with commas re-threaded around the
//! elements that were dropped. What to do with each member and element is delegated to a
//! [`Collection`] implementation (the DOM per-item path in `response.rs`, or a splice fast path),
//! so framing and output bookkeeping are written once.

use serde_json::{Map, Value};

use crate::error::TranslateError;
use crate::response::framer::{Event, FrameError, ObjectFramer};
use crate::rules::api_version_down;
use crate::tenant::TenantId;

impl From<FrameError> for TranslateError {
    fn from(e: FrameError) -> Self {
        TranslateError::Upstream(e.to_string())
    }
}

/// Members streamed element by element.
pub const STREAMED: &[&str] = &["items", "rows"];

/// Per-member and per-element policy of a collection rewrite.
pub trait Collection: Send {
    /// Rewrites one complete element of a streamed member (`items` or `rows`) into `out`.
    /// Returns false, having written nothing, when the element is not the tenant's.
    fn element(&mut self, key: &str, raw: &[u8], out: &mut Vec<u8>)
    -> Result<bool, TranslateError>;
    /// Rewrites one complete non-streamed top-level member value into `out`. Returns false,
    /// having written nothing, to omit the member.
    fn member(&mut self, key: &str, raw: &[u8], out: &mut Vec<u8>) -> Result<bool, TranslateError>;
}

/// Streaming rewriter of one collection body.
pub struct CollectionRewriter<C> {
    framer: ObjectFramer,
    inner: C,
    first_member: bool,
    first_element: bool,
}

impl<C: Collection> CollectionRewriter<C> {
    pub fn new(inner: C) -> Self {
        CollectionRewriter {
            framer: ObjectFramer::new(STREAMED),
            inner,
            first_member: true,
            first_element: true,
        }
    }

    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// Bytes held between chunks (memory accounting).
    pub fn retained(&self) -> usize {
        self.framer.retained()
    }

    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
        let CollectionRewriter {
            framer,
            inner,
            first_member,
            first_element,
        } = self;
        framer.feed(chunk, &mut |ev: Event<'_>| -> Result<(), TranslateError> {
            match ev {
                Event::Begin => out.push(b'{'),
                Event::Member { key, value } => {
                    let mark = out.len();
                    if !*first_member {
                        out.push(b',');
                    }
                    write_key(out, key);
                    if inner.member(key, value, out)? {
                        *first_member = false;
                    } else {
                        out.truncate(mark);
                    }
                }
                Event::ArrayStart { key } => {
                    if !*first_member {
                        out.push(b',');
                    }
                    *first_member = false;
                    write_key(out, key);
                    out.push(b'[');
                    *first_element = true;
                }
                Event::Element { key, value } => {
                    let mark = out.len();
                    if !*first_element {
                        out.push(b',');
                    }
                    if inner.element(key, value, out)? {
                        *first_element = false;
                    } else {
                        out.truncate(mark);
                    }
                }
                Event::ArrayEnd { .. } => out.push(b']'),
                Event::End => out.push(b'}'),
            }
            Ok(())
        })?;
        Ok(())
    }

    pub fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), TranslateError> {
        Ok(self.framer.finish()?)
    }
}

fn write_key(out: &mut Vec<u8>, key: &str) {
    push_json_str(out, key);
    out.push(b':');
}

/// Writes `s` as a JSON string. Keys and names from upstream never need escaping; the general
/// path goes through serde_json so that anything odd is still valid JSON.
pub fn push_json_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes()
        .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x7f)
    {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing a &str into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Rewrites the list's own `metadata` (ListMeta). `remainingItemCount` counts upstream items
/// past this page: across namespaces or cluster-scoped objects that is every tenant's count
/// (a leak, and wrong after filtering), so it is dropped there; inside one of the tenant's
/// namespaces every item is the tenant's and it is kept (`keep_remaining`), as clients that
/// page (and the API chunking conformance test) rely on it. `continue` and `resourceVersion`
/// stay: they are opaque to the client.
pub fn list_meta_down(
    raw: &[u8],
    out: &mut Vec<u8>,
    keep_remaining: bool,
) -> Result<(), TranslateError> {
    let mut m: Map<String, Value> = serde_json::from_slice(raw)
        .map_err(|e| TranslateError::Upstream(format!("list metadata: {e}")))?;
    if !keep_remaining {
        m.remove("remainingItemCount");
    }
    m.remove("selfLink");
    serde_json::to_writer(&mut *out, &m)
        .map_err(|e| TranslateError::Internal(format!("list metadata: {e}")))
}

/// Rewrites a raw JSON string value holding an `apiVersion`.
pub fn api_version_raw_down(
    tenant: &TenantId,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), TranslateError> {
    let av: String = serde_json::from_slice(raw)
        .map_err(|e| TranslateError::Upstream(format!("apiVersion: {e}")))?;
    push_json_str(out, &api_version_down(tenant, &av)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keeps items whose `"ns"` is "keep", uppercases nothing else.
    struct Fake;
    impl Collection for Fake {
        fn element(
            &mut self,
            _key: &str,
            raw: &[u8],
            out: &mut Vec<u8>,
        ) -> Result<bool, TranslateError> {
            let v: Value = serde_json::from_slice(raw).unwrap();
            if v["ns"] == "keep" {
                out.extend_from_slice(raw);
                Ok(true)
            } else {
                Ok(false)
            }
        }
        fn member(
            &mut self,
            key: &str,
            raw: &[u8],
            out: &mut Vec<u8>,
        ) -> Result<bool, TranslateError> {
            match key {
                "metadata" => list_meta_down(raw, out, false).map(|_| true),
                "drop" => Ok(false),
                _ => {
                    out.extend_from_slice(raw);
                    Ok(true)
                }
            }
        }
    }

    fn run(body: &str, chunk: usize) -> String {
        let mut r = CollectionRewriter::new(Fake);
        let mut out = Vec::new();
        for c in body.as_bytes().chunks(chunk) {
            r.feed(c, &mut out).unwrap();
        }
        r.finish(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn filters_and_rethreads_commas() {
        let body = r#"{"drop":1,"kind":"L","metadata":{"resourceVersion":"5","continue":"c","remainingItemCount":7},"items":[{"ns":"x"},{"ns":"keep","a":"]"},{"ns":"y"},{"ns":"keep"}],"drop":2}"#;
        let want = r#"{"kind":"L","metadata":{"resourceVersion":"5","continue":"c"},"items":[{"ns":"keep","a":"]"},{"ns":"keep"}]}"#;
        for n in [1, 2, 3, 7, 4096] {
            assert_eq!(run(body, n), want);
        }
        // items first (CR lists), everything dropped
        let body = r#"{"apiVersion":"a/v1","items":[{"ns":"x"}],"kind":"L","metadata":{}}"#;
        assert_eq!(
            run(body, 5),
            r#"{"apiVersion":"a/v1","items":[],"kind":"L","metadata":{}}"#
        );
    }

    #[test]
    fn api_versions() {
        let t = TenantId::parse("foofoo").unwrap();
        assert_eq!(
            api_version_down(&t, "foofoo-example.com/v1").unwrap(),
            "example.com/v1"
        );
        assert_eq!(api_version_down(&t, "apps/v1").unwrap(), "apps/v1");
        assert_eq!(api_version_down(&t, "v1").unwrap(), "v1");
        assert!(api_version_down(&t, "barbar-example.com/v1").is_err());
        let mut out = Vec::new();
        api_version_raw_down(&t, br#""foofoo-x.io/v2""#, &mut out).unwrap();
        assert_eq!(out, br#""x.io/v2""#);
    }
}
