//! WebSocket frames of `exec`/`attach` streams (`*.channel.k8s.io`), server to client: the error
//! channel (3) carries a `Status` (v4, v5) or a plain message (v1-v3) from the apiserver or the
//! kubelet, which may name upstream objects (`pod "foofoo-streams/web-1"`). [`ErrorChannelRewriter`]
//! passes every frame through unchanged except complete messages on channel 3, whose text it
//! rewrites with a caller's function (paddock: [`crate::text_down`] via [`error_payload_down`]).
//!
//! Framing per RFC 6455: `FIN RSV1-3 opcode(4) | MASK len(7) [len16 | len64] [mask key] payload`.
//! Server frames are not masked. Frames other than data frames starting a channel-3 message are
//! streamed through as their bytes arrive (no buffering of stdout); a channel-3 message (one
//! frame or fragments) is collected, rewritten and sent as one frame. The base64 protocols
//! (`base64.channel.k8s.io`, text frames with an ASCII channel digit) are not rewritten.

use crate::catalog::context::TenantContext;

/// The error channel of the channel.k8s.io protocols.
pub const ERROR_CHANNEL: u8 = 3;

/// A channel-3 message larger than this is passed through unchanged (a Status is small).
pub const MAX_ERROR_MESSAGE: usize = 1 << 20;

/// Whether a negotiated `Sec-WebSocket-Protocol` is a binary channel protocol whose channel 3 is
/// the error channel (exec, attach): `channel.k8s.io`, `v2.` .. `v5.channel.k8s.io`.
pub fn is_channel_protocol(protocol: &str) -> bool {
    let p = protocol.trim();
    p == "channel.k8s.io"
        || p.strip_suffix(".channel.k8s.io").is_some_and(|v| {
            v.len() >= 2 && v.starts_with('v') && v[1..].bytes().all(|b| b.is_ascii_digit())
        })
}

/// The rewritten form of an error-channel payload (without the channel byte): a JSON `Status`
/// gets every string value rewritten; any other UTF-8 text is rewritten as a whole; other bytes
/// stay as they are.
pub fn error_payload_down(ctx: &TenantContext, payload: &[u8]) -> Vec<u8> {
    fn walk(ctx: &TenantContext, v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => *s = crate::text_down(ctx, s),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|v| walk(ctx, v)),
            serde_json::Value::Object(m) => m.values_mut().for_each(|v| walk(ctx, v)),
            _ => {}
        }
    }
    if let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(payload)
        && v.is_object()
    {
        walk(ctx, &mut v);
        if let Ok(out) = serde_json::to_vec(&v) {
            return out;
        }
    }
    match std::str::from_utf8(payload) {
        Ok(s) => crate::text_down(ctx, s).into_bytes(),
        Err(_) => payload.to_vec(),
    }
}

#[derive(Debug)]
enum State {
    /// Collecting a frame header.
    Header,
    /// Streaming `left` payload bytes of the current frame through.
    Pass { left: u64 },
    /// Collecting `left` more payload bytes of a channel-3 message into `msg`.
    Collect { left: u64 },
    /// Something the rewriter does not understand (masked or extension frames, a message too
    /// large): everything from here on passes through unchanged.
    Raw,
}

/// Rewrites the error channel of a server-to-client channel.k8s.io WebSocket byte stream.
pub struct ErrorChannelRewriter<F: FnMut(&[u8]) -> Vec<u8>> {
    rewrite: F,
    state: State,
    head: Vec<u8>,
    /// The channel-3 message being collected: opcode of its first frame, payload so far
    /// (starting with the channel byte), and whether its last frame has been seen.
    msg: Vec<u8>,
    msg_opcode: u8,
    msg_fin: bool,
    /// Inside a fragmented message that is passed through (continuations pass too).
    passing_message: bool,
    /// Inside a fragmented message that is collected (continuations are collected too).
    collecting_message: bool,
}

impl<F: FnMut(&[u8]) -> Vec<u8>> ErrorChannelRewriter<F> {
    /// `rewrite` maps an error payload (without the channel byte) to its replacement.
    pub fn new(rewrite: F) -> Self {
        Self {
            rewrite,
            state: State::Header,
            head: Vec::with_capacity(16),
            msg: Vec::new(),
            msg_opcode: 0,
            msg_fin: false,
            passing_message: false,
            collecting_message: false,
        }
    }

    /// Feeds bytes read from the server; appends what to send to the client to `out`.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        while !input.is_empty() {
            match &mut self.state {
                State::Raw => {
                    out.extend_from_slice(input);
                    return;
                }
                State::Pass { left } => {
                    let n = usize::try_from(*left)
                        .unwrap_or(usize::MAX)
                        .min(input.len());
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *left -= n as u64;
                    if *left == 0 {
                        self.state = State::Header;
                    }
                }
                State::Collect { left } => {
                    let n = usize::try_from(*left)
                        .unwrap_or(usize::MAX)
                        .min(input.len());
                    self.msg.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *left -= n as u64;
                    if *left == 0 {
                        self.state = State::Header;
                        if self.msg_fin {
                            self.emit_message(out);
                        }
                    }
                }
                State::Header => {
                    // Take one byte at a time until the header (and, for a data frame, the
                    // first payload byte: the channel) is known.
                    self.head.push(input[0]);
                    input = &input[1..];
                    self.on_header_byte(out);
                }
            }
        }
    }

    /// What has been collected but not sent when the server's stream ends (an incomplete
    /// frame): sent as it came, so that nothing is lost.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.head);
        if !self.msg.is_empty() {
            // An unfinished channel-3 message: its frames were swallowed; rebuilding them
            // exactly is not possible, the client gets a truncated stream either way.
            self.msg.clear();
        }
    }

    fn on_header_byte(&mut self, out: &mut Vec<u8>) {
        let h = &self.head;
        if h.len() < 2 {
            return;
        }
        let masked = h[1] & 0x80 != 0;
        let len7 = h[1] & 0x7f;
        let ext = match len7 {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        let header_len = 2 + ext + if masked { 4 } else { 0 };
        if h.len() < header_len {
            return;
        }
        let len: u64 = match len7 {
            126 => u64::from(u16::from_be_bytes([h[2], h[3]])),
            127 => u64::from_be_bytes([h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9]]),
            n => u64::from(n),
        };
        let fin = h[0] & 0x80 != 0;
        let rsv = h[0] & 0x70;
        let opcode = h[0] & 0x0f;
        if masked || rsv != 0 {
            // Not a plain server frame: give up rewriting, pass everything on.
            out.append(&mut self.head);
            self.state = State::Raw;
            return;
        }
        let is_control = opcode & 0x08 != 0;
        let starts_message = opcode == 1 || opcode == 2;
        let is_continuation = opcode == 0;
        if is_continuation && self.collecting_message {
            self.head.clear();
            if (self.msg.len() as u64).saturating_add(len) > MAX_ERROR_MESSAGE as u64 {
                // Too large after all: send what was collected unchanged, then the rest.
                self.flush_collected_unchanged(out);
                out.extend_from_slice(&continuation_header(fin, len));
                self.state = State::Raw;
                return;
            }
            self.msg_fin = fin;
            self.collecting_message = !fin;
            self.state = State::Collect { left: len };
            if len == 0 && fin {
                self.state = State::Header;
                self.emit_message(out);
            }
            return;
        }
        if starts_message && !self.passing_message && !self.collecting_message && len > 0 {
            // Need the channel byte to decide.
            if h.len() < header_len + 1 {
                return;
            }
            let channel = h[header_len];
            if channel == ERROR_CHANNEL && len <= MAX_ERROR_MESSAGE as u64 {
                self.msg.clear();
                self.msg.push(channel);
                self.msg_opcode = opcode;
                self.msg_fin = fin;
                self.collecting_message = !fin;
                self.head.clear();
                self.state = State::Collect { left: len - 1 };
                if len == 1 && fin {
                    self.state = State::Header;
                    self.emit_message(out);
                }
                return;
            }
            // Another channel: the header and the channel byte pass, the rest streams.
            self.passing_message = !fin;
            out.append(&mut self.head);
            self.state = if len > 1 {
                State::Pass { left: len - 1 }
            } else {
                State::Header
            };
            return;
        }
        if !is_control && (is_continuation || starts_message) {
            self.passing_message = !fin;
        }
        out.append(&mut self.head);
        self.state = if len > 0 {
            State::Pass { left: len }
        } else {
            State::Header
        };
    }

    fn emit_message(&mut self, out: &mut Vec<u8>) {
        let mut payload = Vec::with_capacity(self.msg.len() + 16);
        payload.push(ERROR_CHANNEL);
        payload.extend_from_slice(&(self.rewrite)(&self.msg[1..]));
        out.extend_from_slice(&frame_header(true, self.msg_opcode, payload.len() as u64));
        out.extend_from_slice(&payload);
        self.msg.clear();
        self.collecting_message = false;
    }

    fn flush_collected_unchanged(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&frame_header(false, self.msg_opcode, self.msg.len() as u64));
        out.append(&mut self.msg);
        self.collecting_message = false;
    }
}

fn continuation_header(fin: bool, len: u64) -> Vec<u8> {
    frame_header(fin, 0, len)
}

/// An unmasked frame header.
pub fn frame_header(fin: bool, opcode: u8, len: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(10);
    h.push(if fin { 0x80 } else { 0 } | (opcode & 0x0f));
    if len < 126 {
        h.push(len as u8);
    } else if let Ok(l) = u16::try_from(len) {
        h.push(126);
        h.extend_from_slice(&l.to_be_bytes());
    } else {
        h.push(127);
        h.extend_from_slice(&len.to_be_bytes());
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = frame_header(fin, opcode, payload.len() as u64);
        f.extend_from_slice(payload);
        f
    }

    fn upper(p: &[u8]) -> Vec<u8> {
        p.to_ascii_uppercase()
    }

    /// Feeds `input` in pieces of `step` bytes.
    fn run(input: &[u8], step: usize) -> Vec<u8> {
        let mut rw = ErrorChannelRewriter::new(upper);
        let mut out = Vec::new();
        for c in input.chunks(step) {
            rw.feed(c, &mut out);
        }
        rw.finish(&mut out);
        out
    }

    #[test]
    fn protocols() {
        for p in [
            "v5.channel.k8s.io",
            "v4.channel.k8s.io",
            "channel.k8s.io",
            "v12.channel.k8s.io",
        ] {
            assert!(is_channel_protocol(p), "{p}");
        }
        for p in [
            "v4.base64.channel.k8s.io",
            "base64.channel.k8s.io",
            "SPDY/3.1+portforward.k8s.io",
            "portforward.k8s.io",
            "",
        ] {
            assert!(!is_channel_protocol(p), "{p}");
        }
    }

    #[test]
    fn only_channel_three_is_rewritten() {
        let mut input = Vec::new();
        input.extend(frame(true, 2, b"\x01stdout foofoo-x"));
        input.extend(frame(true, 2, b"\x02stderr"));
        input.extend(frame(true, 9, b"ping"));
        input.extend(frame(true, 2, b"\x03error foofoo-x"));
        input.extend(frame(true, 2, b"\x01"));
        input.extend(frame(true, 2, b"\x03"));
        input.extend(frame(true, 8, b"\x03\xe8"));
        let mut want = Vec::new();
        want.extend(frame(true, 2, b"\x01stdout foofoo-x"));
        want.extend(frame(true, 2, b"\x02stderr"));
        want.extend(frame(true, 9, b"ping"));
        want.extend(frame(true, 2, b"\x03ERROR FOOFOO-X"));
        want.extend(frame(true, 2, b"\x01"));
        want.extend(frame(true, 2, b"\x03"));
        want.extend(frame(true, 8, b"\x03\xe8"));
        for step in [1, 2, 3, 7, 64, 4096] {
            assert_eq!(run(&input, step), want, "step {step}");
        }
    }

    #[test]
    fn long_frames_and_lengths() {
        let big = vec![b'a'; 70_000];
        let mut stdout = vec![1u8];
        stdout.extend_from_slice(&big);
        let mut mid = vec![3u8];
        mid.extend_from_slice(&big[..300]);
        let mut input = frame(true, 2, &stdout);
        input.extend(frame(true, 2, &mid));
        let mut want = frame(true, 2, &stdout);
        let mut mid_up = vec![3u8];
        mid_up.extend_from_slice(&big[..300].to_ascii_uppercase());
        want.extend(frame(true, 2, &mid_up));
        for step in [1, 5, 1000, 100_000] {
            assert_eq!(run(&input, step), want, "step {step}");
        }
        // Header length forms: 7-bit, 16-bit, 64-bit.
        assert_eq!(frame_header(true, 2, 125), vec![0x82, 125]);
        assert_eq!(frame_header(true, 2, 300), vec![0x82, 126, 1, 44]);
        assert_eq!(
            frame_header(false, 0, 70_000),
            vec![0, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70]
        );
    }

    #[test]
    fn fragmented_error_message_is_joined() {
        let mut input = frame(false, 2, b"\x03err");
        input.extend(frame(true, 9, b"p"));
        input.extend(frame(false, 0, b"or foo"));
        input.extend(frame(true, 0, b"foo-x"));
        input.extend(frame(false, 2, b"\x01out"));
        input.extend(frame(true, 0, b"put"));
        let mut want = frame(true, 9, b"p");
        want.extend(frame(true, 2, b"\x03ERROR FOOFOO-X"));
        want.extend(frame(false, 2, b"\x01out"));
        want.extend(frame(true, 0, b"put"));
        for step in [1, 4, 1000] {
            assert_eq!(run(&input, step), want, "step {step}");
        }
    }

    /// A continuation announcing a 2^64-1 byte payload once overflowed the size check.
    #[test]
    fn huge_continuation_length_passes_through() {
        let mut input = frame(false, 2, &[ERROR_CHANNEL, b'x']);
        input.extend_from_slice(&continuation_header(true, u64::MAX));
        input.extend_from_slice(b"rest");
        let out = run(&input, 3);
        assert!(out.ends_with(b"rest"), "{out:?}");
    }

    #[test]
    fn masked_or_extension_frames_pass_unchanged() {
        let mut masked = vec![0x82, 0x80 | 3, 1, 2, 3, 4];
        masked.extend_from_slice(b"\x02xx");
        masked.extend(frame(true, 2, b"\x03later"));
        assert_eq!(run(&masked, 1), masked);
        let mut rsv = frame(true, 2, b"\x03compressed");
        rsv[0] |= 0x40;
        assert_eq!(run(&rsv, 3), rsv);
    }

    #[test]
    fn truncated_stream_keeps_a_partial_header() {
        let out = run(&[0x82], 1);
        assert_eq!(out, vec![0x82]);
    }

    #[test]
    fn status_payload_is_rewritten() {
        use std::sync::Arc;
        let ctx = TenantContext {
            tenant: crate::TenantId::parse("foofoo").unwrap(),
            catalog: Arc::new(crate::catalog::tests::catalog()),
        };
        let status = br#"{"metadata":{},"status":"Failure","message":"error executing command in container: no exec found for container \"other\" in pod \"foofoo-streams/other\"","reason":"InternalError","details":{"causes":[{"message":"foofoo-streams/other"}]},"code":500}"#;
        let out = error_payload_down(&ctx, status);
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("foofoo"), "{text}");
        assert!(text.contains(r#"in pod \"streams/other\""#), "{text}");
        assert!(text.contains(r#""reason":"InternalError""#), "{text}");
        // v1-v3: plain text.
        let out = error_payload_down(&ctx, b"pod foofoo-streams/other: failed");
        assert_eq!(out, b"pod streams/other: failed");
        // Not UTF-8: unchanged.
        assert_eq!(error_payload_down(&ctx, b"\xff\xfe"), b"\xff\xfe");
    }
}
