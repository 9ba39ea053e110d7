//! The access log: one line per request (tenant, user, verb, path, status, latency), in the
//! process's log format, on stderr.
//!
//! Lines are batched: each is formatted on the request's task into a shared buffer, which is
//! written out when it holds [`FLUSH_BYTES`] or every [`FLUSH_INTERVAL`] (see
//! [`AccessLog::flush`]): going through `tracing` with a write per line, or through a logging
//! thread woken per line, costs a large share of paddock's CPU under a load of small
//! requests, and batching makes it a small one (docs/performance/sessions-01-06.md has the
//! figures). A line can thus reach stderr up to `FLUSH_INTERVAL` after the warnings
//! `tracing` writes at once.

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
    /// An error answer's `Status.message` (when its body is a JSON Status paddock holds whole):
    /// what the client was told, for whoever reads the log after a failure.
    pub answer: Option<&'a str>,
}

/// Longest answer message kept in a line.
const ANSWER_CHARS: usize = 400;

/// The `message` of a JSON `Status` body, cut to [`ANSWER_CHARS`].
pub fn status_message(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Status {
        kind: Option<String>,
        message: Option<String>,
    }
    let s: Status = serde_json::from_slice(body).ok()?;
    if s.kind.as_deref() != Some("Status") {
        return None;
    }
    let m = s.message?;
    Some(match m.char_indices().nth(ANSWER_CHARS) {
        Some((at, _)) => format!("{}…", &m[..at]),
        None => m,
    })
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
        let batch = {
            // Formatted straight into the shared buffer: a line is a few hundred bytes of
            // copying, shorter than a line of its own would take to allocate and copy again.
            let mut buf = self.buf.lock();
            match self.format {
                LogFormat::Json => json_line(&mut buf, e),
                LogFormat::Text => text_line(&mut buf, e),
            }
            // The buffer left behind has its full size again (taken empty, it would grow by
            // doubling towards the next flush).
            (buf.len() >= FLUSH_BYTES)
                .then(|| std::mem::replace(&mut *buf, Vec::with_capacity(FLUSH_BYTES)))
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
    let _ = write!(out, ",\"status\":{},\"latency_ms\":", e.status);
    push_millis(out, e.latency);
    if let Some(a) = e.answer {
        out.extend_from_slice(b",\"answer\":");
        json_string(out, a);
    }
    out.extend_from_slice(b"}\n");
}

fn text_line(out: &mut Vec<u8>, e: &Entry<'_>) {
    timestamp(out);
    let _ = writeln!(
        out,
        "  INFO paddock::access: request tenant={} user={:?} verb={} resource={:?} status={} latency_ms={:.3}{}",
        e.tenant,
        e.user,
        e.verb,
        e.path,
        e.status,
        e.latency.as_secs_f64() * 1000.0,
        e.answer
            .map(|a| format!(" answer={a:?}"))
            .unwrap_or_default()
    );
}

/// RFC 3339 in UTC with microseconds, e.g. `2026-11-21T08:41:07.123456Z`. The date and time
/// to the second are formatted once a second per thread; a line adds only the microseconds.
fn timestamp(out: &mut Vec<u8>) {
    thread_local! {
        static SECOND: std::cell::RefCell<(u64, Vec<u8>)> = const {
            std::cell::RefCell::new((u64::MAX, Vec::new()))
        };
    }
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since_epoch.as_secs();
    SECOND.with_borrow_mut(|(cached, text)| {
        if *cached != secs {
            text.clear();
            push_seconds(
                text,
                time::OffsetDateTime::UNIX_EPOCH + Duration::from_secs(secs),
            );
            *cached = secs;
        }
        out.extend_from_slice(text);
    });
    out.push(b'.');
    push_padded(out, since_epoch.subsec_micros(), 6);
    out.push(b'Z');
}

/// `t` in RFC 3339 to the second, without an offset: `2026-11-21T08:41:07`.
pub(crate) fn push_seconds(out: &mut Vec<u8>, t: time::OffsetDateTime) {
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
    );
}

/// `n` in decimal, zero-padded to `width` digits.
pub(crate) fn push_padded(out: &mut Vec<u8>, n: u32, width: usize) {
    let mut digits = [b'0'; 10];
    let mut rest = n;
    let mut i = digits.len();
    while rest > 0 {
        i -= 1;
        digits[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    let start = i.min(digits.len() - width);
    out.extend_from_slice(&digits[start..]);
}

/// A latency in milliseconds with three decimals (microseconds, rounded).
fn push_millis(out: &mut Vec<u8>, latency: Duration) {
    let micros = (latency.as_nanos() + 500) / 1000;
    let _ = write!(out, "{}.", micros / 1000);
    push_padded(out, (micros % 1000) as u32, 3);
}

/// A JSON string literal (the path and user come from the client): runs of bytes that need
/// no escape are copied whole.
fn json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0..0x20 => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[run..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.extend_from_slice(escape);
        }
        run = i + 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn entry<'a>(user: &'a str, path: &'a str) -> Entry<'a> {
        Entry {
            tenant: "foofoo",
            user,
            verb: "get",
            path,
            status: 200,
            latency: Duration::from_micros(1500),
            answer: None,
        }
    }

    #[test]
    fn an_error_answer_carries_its_message() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"admission webhook \"w\" denied the request: no","code":400}"#;
        let m = status_message(body).unwrap();
        assert_eq!(m, r#"admission webhook "w" denied the request: no"#);
        let mut e = entry("alice", "/api/v1/namespaces/a/pods");
        e.status = 400;
        e.answer = Some(&m);
        let mut out = Vec::new();
        json_line(&mut out, &e);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["answer"], m);
        let mut text = Vec::new();
        text_line(&mut text, &e);
        assert!(
            String::from_utf8(text)
                .unwrap()
                .contains(r#"answer="admission webhook"#)
        );
        // not a Status, or no message: nothing
        assert_eq!(status_message(br#"{"kind":"Pod"}"#), None);
        assert_eq!(status_message(b"<html>"), None);
        let long = format!(r#"{{"kind":"Status","message":"{}"}}"#, "é".repeat(1000));
        assert_eq!(
            status_message(long.as_bytes()).unwrap().chars().count(),
            ANSWER_CHARS + 1
        );
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
    fn strings_escape_quotes_backslashes_and_control_characters_only() {
        let mut out = Vec::new();
        json_string(&mut out, "a\"b\\c\u{1}d\u{7f}é/ü");
        assert_eq!(out, "\"a\\\"b\\\\c\\u0001d\u{7f}é/ü\"".as_bytes());
        let mut out = Vec::new();
        json_string(&mut out, "");
        assert_eq!(out, b"\"\"");
    }

    #[test]
    fn latencies_have_three_rounded_decimals() {
        let millis = |d: Duration| {
            let mut out = Vec::new();
            push_millis(&mut out, d);
            String::from_utf8(out).expect("utf-8")
        };
        assert_eq!(millis(Duration::from_micros(1500)), "1.500");
        assert_eq!(millis(Duration::ZERO), "0.000");
        assert_eq!(millis(Duration::from_nanos(1_234_567)), "1.235");
        assert_eq!(millis(Duration::from_nanos(999_999_600)), "1000.000");
        assert_eq!(millis(Duration::from_secs(12)), "12000.000");
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_microseconds() {
        for _ in 0..3 {
            let before = time::OffsetDateTime::now_utc();
            let mut out = Vec::new();
            timestamp(&mut out);
            let after = time::OffsetDateTime::now_utc();
            let text = String::from_utf8(out).expect("utf-8");
            assert_eq!(text.len(), 27, "{text}");
            let t =
                time::OffsetDateTime::parse(&text, &time::format_description::well_known::Rfc3339)
                    .expect("RFC 3339");
            assert!(
                before - Duration::from_micros(1) <= t && t <= after,
                "{text}"
            );
        }
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
