#![allow(clippy::unwrap_used)]

use super::*;

fn round_trip(f: Frame) {
    let mut out = Vec::new();
    f.encode(&mut out);
    let mut buf = BytesMut::from(&out[..]);
    // Byte by byte: no frame until the last byte is there.
    let mut partial = BytesMut::from(&out[..out.len() - 1]);
    assert_eq!(next(&mut partial, DEFAULT_MAX_FRAME).unwrap(), None);
    let got = next(&mut buf, DEFAULT_MAX_FRAME).unwrap().unwrap();
    assert!(buf.is_empty());
    match (&f, got) {
        (
            Frame::Data {
                stream, end, data, ..
            },
            Frame::Data {
                stream: s,
                end: e,
                data: d,
                flow,
            },
        ) => {
            assert_eq!((*stream, *end, data.clone()), (s, e, d));
            assert_eq!(flow, data.len());
        }
        (_, got) => assert_eq!(got, f),
    }
}

#[test]
fn frames_round_trip() {
    let block = Bytes::from_static(b"\x82\x84");
    for f in [
        Frame::Data {
            stream: 1,
            end: true,
            data: Bytes::from_static(b"hello"),
            flow: 5,
        },
        Frame::Data {
            stream: 3,
            end: false,
            data: Bytes::new(),
            flow: 0,
        },
        Frame::Headers {
            stream: 5,
            end_stream: true,
            end_headers: false,
            block: block.clone(),
        },
        Frame::Continuation {
            stream: 5,
            end_headers: true,
            block,
        },
        Frame::Priority { stream: 7 },
        Frame::RstStream {
            stream: 9,
            code: reason::CANCEL,
        },
        Frame::Settings {
            ack: false,
            params: vec![(MAX_CONCURRENT_STREAMS, 10), (99, 1)],
        },
        Frame::Settings {
            ack: true,
            params: vec![],
        },
        Frame::Ping {
            ack: true,
            payload: *b"12345678",
        },
        Frame::GoAway {
            last: 7,
            code: 0,
            debug: Bytes::from_static(b"bye"),
        },
        Frame::WindowUpdate {
            stream: 0,
            increment: 1 << 20,
        },
        Frame::Unknown {
            kind: 0xfa,
            stream: 1,
        },
    ] {
        round_trip(f);
    }
}

fn raw(len: u32, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> BytesMut {
    let mut out = Vec::new();
    put_head(&mut out, len as usize, kind, flags, stream);
    out.extend_from_slice(payload);
    BytesMut::from(&out[..])
}

#[test]
fn padding_and_priority_are_removed() {
    let mut b = raw(
        7,
        DATA,
        PADDED | END_STREAM,
        1,
        &[3, b'a', b'b', b'c', 0, 0, 0],
    );
    let f = next(&mut b, DEFAULT_MAX_FRAME).unwrap().unwrap();
    assert_eq!(
        f,
        Frame::Data {
            stream: 1,
            end: true,
            data: Bytes::from_static(b"abc"),
            flow: 7
        }
    );
    let payload = [2, 0, 0, 0, 1, 16, 0x82, 0, 0];
    let mut b = raw(
        9,
        HEADERS,
        PADDED | PRIORITY_FLAG | END_HEADERS,
        3,
        &payload,
    );
    let f = next(&mut b, DEFAULT_MAX_FRAME).unwrap().unwrap();
    let block = Bytes::from_static(&[0x82]);
    assert_eq!(
        f,
        Frame::Headers {
            stream: 3,
            end_stream: false,
            end_headers: true,
            block
        }
    );
}

#[test]
fn malformed_frames_are_errors() {
    let cases: Vec<(BytesMut, FrameError)> = vec![
        (
            raw(3, PING, 0, 0, b"abc"),
            FrameError::BadLength { kind: PING, len: 3 },
        ),
        (raw(8, PING, 0, 1, b"12345678"), FrameError::BadStream(PING)),
        (
            raw(4, DATA, PADDED, 1, &[4, 1, 2, 3]),
            FrameError::BadPadding,
        ),
        (raw(0, DATA, PADDED, 1, &[]), FrameError::BadPadding),
        (
            raw(2, HEADERS, PRIORITY_FLAG, 1, &[0, 0]),
            FrameError::BadLength {
                kind: HEADERS,
                len: 2,
            },
        ),
        (raw(1, DATA, 0, 0, b"x"), FrameError::BadStream(DATA)),
        (
            raw(4, WINDOW_UPDATE, 0, 0, &[0, 0, 0, 0]),
            FrameError::ZeroIncrement,
        ),
        (
            raw(5, SETTINGS, 0, 0, &[0; 5]),
            FrameError::BadLength {
                kind: SETTINGS,
                len: 5,
            },
        ),
        (
            raw(6, SETTINGS, ACK, 0, &[0; 6]),
            FrameError::BadLength {
                kind: SETTINGS,
                len: 6,
            },
        ),
        (
            raw(6, SETTINGS, 0, 0, &[0, 5, 0, 0, 0, 1]),
            FrameError::BadSetting { id: 5, value: 1 },
        ),
        (
            raw(6, SETTINGS, 0, 0, &[0, 4, 0x80, 0, 0, 0]),
            FrameError::BadSetting {
                id: 4,
                value: 1 << 31,
            },
        ),
        (
            raw(3, RST_STREAM, 0, 1, &[0; 3]),
            FrameError::BadLength {
                kind: RST_STREAM,
                len: 3,
            },
        ),
        (
            raw(4, GOAWAY, 0, 0, &[0; 4]),
            FrameError::BadLength {
                kind: GOAWAY,
                len: 4,
            },
        ),
        (
            raw(1, CONTINUATION, 0, 0, &[0]),
            FrameError::BadStream(CONTINUATION),
        ),
    ];
    for (mut b, want) in cases {
        assert_eq!(next(&mut b, DEFAULT_MAX_FRAME), Err(want.clone()), "{want}");
    }
    let mut big = raw(DEFAULT_MAX_FRAME as u32 + 1, DATA, 0, 1, &[]);
    assert_eq!(
        next(&mut big, DEFAULT_MAX_FRAME),
        Err(FrameError::TooLarge {
            len: DEFAULT_MAX_FRAME + 1,
            max: DEFAULT_MAX_FRAME
        })
    );
    assert_eq!(
        FrameError::BadSetting { id: 4, value: 0 }.reason(),
        reason::FLOW_CONTROL_ERROR
    );
}

#[test]
fn unknown_types_are_skipped_whole() {
    let mut b = raw(3, 0xee, 0xff, 5, b"xyz");
    b.extend_from_slice(&raw(8, PING, 0, 0, b"abcdefgh"));
    assert_eq!(
        next(&mut b, DEFAULT_MAX_FRAME).unwrap(),
        Some(Frame::Unknown {
            kind: 0xee,
            stream: 5
        })
    );
    assert_eq!(
        next(&mut b, DEFAULT_MAX_FRAME).unwrap(),
        Some(Frame::Ping {
            ack: false,
            payload: *b"abcdefgh"
        })
    );
}
