//! Streaming rewrite of watch streams.
//!
//! The apiserver writes one `{"type":…,"object":…}` event per line and flushes after each, but
//! a chunk may hold part of an event or several events, so events are framed with the object
//! framer (newlines are not relied upon). Every rewritten event is written to `out` followed by
//! `\n` as soon as it is complete; the server forwards each `feed` output at once.

use std::ops::Range;

use crate::error::TranslateError;
use crate::response::framer::{Shape, StreamFramer};
use crate::response::members::object_members;

/// Per-event policy of a watch rewrite.
pub trait Events: Send {
    /// ADDED / MODIFIED / DELETED: rewrite the object into `out`, or return false (having
    /// written nothing) to drop the event because the object is not the tenant's.
    fn object(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<bool, TranslateError>;
    /// BOOKMARK: the object carries only kind, apiVersion, resourceVersion and annotations.
    fn bookmark(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError>;
    /// ERROR: the object is a Status.
    fn error(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError>;
}

pub struct WatchRewriter<E> {
    framer: StreamFramer,
    inner: E,
}

impl<E: Events> WatchRewriter<E> {
    pub fn new(inner: E) -> Self {
        WatchRewriter {
            framer: StreamFramer::new(),
            inner,
        }
    }

    pub fn inner(&self) -> &E {
        &self.inner
    }

    pub fn retained(&self) -> usize {
        self.framer.retained()
    }

    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
        let WatchRewriter { framer, inner } = self;
        framer.feed(chunk, &mut |ev: &[u8], shape: Shape| {
            event(inner, ev, shape, out)
        })
    }

    pub fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), TranslateError> {
        Ok(self.framer.finish()?)
    }
}

/// Rewrites one complete event. Only `type` and `object` are known members of a
/// `metav1.WatchEvent`; anything else would be a format we do not understand, and is refused
/// rather than forwarded untranslated.
fn event<E: Events>(
    inner: &mut E,
    ev: &[u8],
    shape: Shape,
    out: &mut Vec<u8>,
) -> Result<(), TranslateError> {
    let (ty, obj) = match envelope_fast(ev, shape) {
        Some(x) => x,
        None => envelope_slow(ev)?,
    };
    write_event(inner, &ev[ty], &ev[obj], out)
}

/// The envelope exactly as the apiserver writes it, `{"type":"X","object":{…}}`, using the
/// object bounds the framing pass recorded: no second scan of the event. Anything else
/// (other key order, whitespace oddities, extra members) returns None and takes the general
/// path.
fn envelope_fast(ev: &[u8], shape: Shape) -> Option<(Range<usize>, Range<usize>)> {
    if shape.inner != 1 {
        return None;
    }
    let head = ev.get(..shape.first_open)?;
    let rest = head.strip_prefix(b"{\"type\":\"")?;
    let q = memchr::memchr(b'"', rest)?;
    let ty_end = 9 + q + 1;
    if ev.get(ty_end..shape.first_open)? != b",\"object\":" {
        return None;
    }
    if rest[..q].contains(&b'\\') {
        return None;
    }
    let tail = ev.get(shape.last_close..)?;
    let tail = trim_ws(tail);
    if tail != b"}" {
        return None;
    }
    Some((8..ty_end, shape.first_open..shape.last_close))
}

fn trim_ws(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if matches!(first, b' ' | b'\t' | b'\r' | b'\n') {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if matches!(last, b' ' | b'\t' | b'\r' | b'\n') {
            b = rest;
        } else {
            break;
        }
    }
    b
}

fn envelope_slow(ev: &[u8]) -> Result<(Range<usize>, Range<usize>), TranslateError> {
    let members = object_members(ev)?;
    let mut ty = None;
    let mut obj = None;
    for (k, r) in &members {
        match k.as_ref() {
            "type" => ty = Some(r.clone()),
            "object" => obj = Some(r.clone()),
            _ => {
                return Err(TranslateError::Upstream(format!(
                    "unknown member {k:?} in a watch event"
                )));
            }
        }
    }
    match (ty, obj) {
        (Some(ty), Some(obj)) => Ok((ty, obj)),
        _ => Err(TranslateError::Upstream(
            "watch event without type or object".into(),
        )),
    }
}

fn write_event<E: Events>(
    inner: &mut E,
    ty_raw: &[u8],
    obj_raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), TranslateError> {
    let mark = out.len();
    out.extend_from_slice(b"{\"type\":");
    out.extend_from_slice(ty_raw);
    out.extend_from_slice(b",\"object\":");
    match ty_raw {
        b"\"ADDED\"" | b"\"MODIFIED\"" | b"\"DELETED\"" => {
            if !inner.object(obj_raw, out)? {
                out.truncate(mark);
                return Ok(());
            }
        }
        b"\"BOOKMARK\"" => inner.bookmark(obj_raw, out)?,
        b"\"ERROR\"" => inner.error(obj_raw, out)?,
        _ => {
            return Err(TranslateError::Upstream(format!(
                "unknown watch event type {}",
                String::from_utf8_lossy(ty_raw)
            )));
        }
    }
    out.extend_from_slice(b"}\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    struct Fake;
    impl Events for Fake {
        fn object(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<bool, TranslateError> {
            let v: Value = serde_json::from_slice(raw).unwrap();
            if v["keep"] == true {
                out.extend_from_slice(raw);
                Ok(true)
            } else {
                Ok(false)
            }
        }
        fn bookmark(&mut self, _raw: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
            out.extend_from_slice(b"\"bm\"");
            Ok(())
        }
        fn error(&mut self, _raw: &[u8], out: &mut Vec<u8>) -> Result<(), TranslateError> {
            out.extend_from_slice(b"\"err\"");
            Ok(())
        }
    }

    #[test]
    fn events_in_any_chunking() {
        let s = concat!(
            "{\"type\":\"ADDED\",\"object\":{\"keep\":true,\"s\":\"}\\n{\"}}\n",
            "{\"type\":\"MODIFIED\",\"object\":{\"keep\":false}}\n",
            "{\"type\":\"BOOKMARK\",\"object\":{}}{\"type\":\"ERROR\",\"object\":{}}\n"
        );
        let want = concat!(
            "{\"type\":\"ADDED\",\"object\":{\"keep\":true,\"s\":\"}\\n{\"}}\n",
            "{\"type\":\"BOOKMARK\",\"object\":\"bm\"}\n",
            "{\"type\":\"ERROR\",\"object\":\"err\"}\n"
        );
        for n in 1..s.len() {
            let mut w = WatchRewriter::new(Fake);
            let mut out = Vec::new();
            for c in s.as_bytes().chunks(n) {
                w.feed(c, &mut out).unwrap();
            }
            w.finish(&mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want, "chunk {n}");
        }
    }

    #[test]
    fn each_event_is_emitted_when_complete() {
        let mut w = WatchRewriter::new(Fake);
        let mut out = Vec::new();
        w.feed(b"{\"type\":\"ADDED\",\"object\":{\"keep\":true}}", &mut out)
            .unwrap();
        assert!(out.ends_with(b"}\n"));
        out.clear();
        w.feed(b"\n{\"type\":\"ADDED\",\"obj", &mut out).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn unknown_shapes_are_refused() {
        for bad in [
            &b"{\"type\":\"WHAT\",\"object\":{}}"[..],
            b"{\"type\":\"ADDED\"}",
            b"{\"type\":\"ADDED\",\"object\":{},\"x\":1}",
        ] {
            let mut w = WatchRewriter::new(Fake);
            assert!(w.feed(bad, &mut Vec::new()).is_err());
        }
        let mut w = WatchRewriter::new(Fake);
        w.feed(b"{\"type\":", &mut Vec::new()).unwrap();
        assert!(w.finish(&mut Vec::new()).is_err());
    }
}
