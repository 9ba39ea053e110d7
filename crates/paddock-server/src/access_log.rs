//! The access log: one line per request (tenant, user, verb, path, status, latency), in the
//! process's log format, on stderr.
//!
//! Lines are batched: each is formatted on the request's task into a shared buffer, which is
//! written out when it holds [`FLUSH_BYTES`] or every [`FLUSH_INTERVAL`] (see
//! [`AccessLog::flush`]). Going through `tracing` with a write per line, or through a logging
//! thread woken per line, was 10-15 % of paddock's CPU under a load of small requests
//! (docs/performance.md); this is about 1 %. A line can thus reach stderr up to
//! `FLUSH_INTERVAL` after the warnings `tracing` writes at once.

use std::io::Write as _;
use std::time::Duration;

use crate::config::LogFormat;

/// Buffered bytes that make the request that adds them write the batch out.
const FLUSH_BYTES: usize = 32 * 1024;
/// How often the server flushes what is buffered.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(200);

/// The access log of one server.
pub struct AccessLog {
    format: LogFormat,
    enabled: bool,
    buf: parking_lot::Mutex<Vec<u8>>,
}

/// One request, as the access log records it.
pub struct Entry<'a> {
    pub tenant: &'a str,
    pub user: &'a str,
    pub verb: &'a str,
    pub path: &'a str,
    pub status: u16,
    pub latency: Duration,
}

impl AccessLog {
    /// An access log in `format`; a disabled one records nothing.
    pub fn new(format: LogFormat, enabled: bool) -> Self {
        AccessLog {
            format,
            enabled,
            buf: parking_lot::Mutex::new(Vec::with_capacity(FLUSH_BYTES)),
        }
    }

    /// Records one request.
    pub fn record(&self, e: &Entry<'_>) {
        if !self.enabled {
            return;
        }
        let mut line = Vec::with_capacity(256);
        match self.format {
            LogFormat::Json => json_line(&mut line, e),
            LogFormat::Text => text_line(&mut line, e),
        }
        let batch = {
            let mut buf = self.buf.lock();
            buf.extend_from_slice(&line);
            (buf.len() >= FLUSH_BYTES).then(|| std::mem::take(&mut *buf))
        };
        if let Some(batch) = batch {
            write_out(&batch);
        }
    }

    /// Writes out what is buffered.
    pub fn flush(&self) {
        let batch = std::mem::take(&mut *self.buf.lock());
        if !batch.is_empty() {
            write_out(&batch);
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.flush();
    }
}

fn write_out(batch: &[u8]) {
    // Nothing sensible to do if stderr is gone; the request has been answered already.
    let _ = std::io::stderr().lock().write_all(batch);
}

fn json_line(out: &mut Vec<u8>, e: &Entry<'_>) {
    out.extend_from_slice(b"{\"timestamp\":\"");
    timestamp(out);
    out.extend_from_slice(
        b"\",\"level\":\"INFO\",\"message\":\"request\",\"target\":\"paddock::access\",\"tenant\":",
    );
    json_string(out, e.tenant);
    out.extend_from_slice(b",\"user\":");
    json_string(out, e.user);
    out.extend_from_slice(b",\"verb\":");
    json_string(out, e.verb);
    out.extend_from_slice(b",\"resource\":");
    json_string(out, e.path);
    let _ = writeln!(
        out,
        ",\"status\":{},\"latency_ms\":{:.3}}}",
        e.status,
        e.latency.as_secs_f64() * 1000.0
    );
}

fn text_line(out: &mut Vec<u8>, e: &Entry<'_>) {
    timestamp(out);
    let _ = writeln!(
        out,
        "  INFO paddock::access: request tenant={} user={:?} verb={} resource={:?} status={} latency_ms={:.3}",
        e.tenant,
        e.user,
        e.verb,
        e.path,
        e.status,
        e.latency.as_secs_f64() * 1000.0
    );
}

/// RFC 3339 in UTC with microseconds, e.g. `2026-11-21T08:41:07.123456Z`.
fn timestamp(out: &mut Vec<u8>) {
    let now = time::OffsetDateTime::now_utc();
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.microsecond()
    );
}

/// A JSON string literal (the path and user come from the client).
fn json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(user: &'a str, path: &'a str) -> Entry<'a> {
        Entry {
            tenant: "foofoo",
            user,
            verb: "get",
            path,
            status: 200,
            latency: Duration::from_micros(1500),
        }
    }

    #[test]
    fn json_lines_are_json_with_every_field() {
        let mut out = Vec::new();
        json_line(
            &mut out,
            &entry("al\"ice\n", "/api/v1/namespaces/x/configmaps/\\y"),
        );
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out).expect("a JSON line");
        assert_eq!(v["tenant"], "foofoo");
        assert_eq!(v["user"], "al\"ice\n");
        assert_eq!(v["resource"], "/api/v1/namespaces/x/configmaps/\\y");
        assert_eq!(v["status"], 200);
        assert_eq!(v["latency_ms"], 1.5);
        assert_eq!(v["message"], "request");
        assert!(
            v["timestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z') && t.len() == 27)
        );
    }

    #[test]
    fn a_disabled_log_buffers_nothing() {
        let log = AccessLog::new(LogFormat::Json, false);
        log.record(&entry("alice", "/api"));
        assert!(log.buf.lock().is_empty());
        let log = AccessLog::new(LogFormat::Text, true);
        log.record(&entry("alice", "/api"));
        let text = String::from_utf8(log.buf.lock().clone()).expect("utf-8");
        assert!(
            text.contains("tenant=foofoo user=\"alice\" verb=get resource=\"/api\" status=200")
        );
        log.buf.lock().clear();
    }
}
