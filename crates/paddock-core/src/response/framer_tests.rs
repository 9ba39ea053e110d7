//! Unit tests of the framer.
use super::*;
use crate::response::members::{MemberAt, Members, array_elements, object_members};

#[derive(Debug, PartialEq)]
enum Ev {
    Member(String, String),
    Start(String),
    Elem(String, String),
    End(String),
    Done,
}

fn frame(body: &[u8], chunk: usize, streamed: &'static [&'static str]) -> Vec<Ev> {
    let mut f = ObjectFramer::new(streamed);
    let mut evs = Vec::new();
    for c in body.chunks(chunk.max(1)) {
        f.feed::<FrameError, _>(c, &mut |e| {
            if e == Event::Begin {
                return Ok(());
            }
            evs.push(match e {
                Event::Begin => unreachable!(),
                Event::Member { key, value } => {
                    Ev::Member(key.to_string(), String::from_utf8_lossy(value).into_owned())
                }
                Event::ArrayStart { key } => Ev::Start(key.to_string()),
                Event::Element { key, value } => {
                    Ev::Elem(key.to_string(), String::from_utf8_lossy(value).into_owned())
                }
                Event::ArrayEnd { key } => Ev::End(key.to_string()),
                Event::End => Ev::Done,
            });
            Ok(())
        })
        .unwrap();
    }
    f.finish().unwrap();
    evs
}

const LIST: &str = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"12"},"items":[{"metadata":{"name":"a","managedFields":[{"fieldsV1":{"f:spec":{"k:{\"name\":\"c]}\"}":{}}}}]}} , {"metadata":{"name":"b\\"}},{"x":[1,2,{"y":"}"}]}]}"#;

#[test]
fn frames_list_in_any_chunking() {
    let whole = frame(LIST.as_bytes(), LIST.len(), &["items"]);
    assert_eq!(whole.len(), 9);
    assert_eq!(whole[0], Ev::Member("kind".into(), "\"PodList\"".into()));
    assert_eq!(whole[3], Ev::Start("items".into()));
    assert!(matches!(&whole[4], Ev::Elem(_, v) if v.ends_with("{}}}}]}}")));
    assert_eq!(
        whole[5],
        Ev::Elem("items".into(), r#"{"metadata":{"name":"b\\"}}"#.into())
    );
    assert_eq!(whole[8], Ev::Done);
    for n in 1..20 {
        assert_eq!(frame(LIST.as_bytes(), n, &["items"]), whole, "chunk {n}");
    }
}

#[test]
fn items_before_metadata_and_scalars() {
    let body = br#" { "apiVersion" : "v1", "items" : [ ] , "n": -1.5e3, "t":true, "z":null, "metadata":{"continue":"x"} } "#;
    for n in 1..body.len() {
        let evs = frame(body, n, &["items"]);
        assert_eq!(
            evs,
            vec![
                Ev::Member("apiVersion".into(), "\"v1\"".into()),
                Ev::Start("items".into()),
                Ev::End("items".into()),
                Ev::Member("n".into(), "-1.5e3".into()),
                Ev::Member("t".into(), "true".into()),
                Ev::Member("z".into(), "null".into()),
                Ev::Member("metadata".into(), r#"{"continue":"x"}"#.into()),
                Ev::Done,
            ]
        );
    }
}

#[test]
fn null_items_is_a_member() {
    let evs = frame(br#"{"items":null}"#, 3, &["items"]);
    assert_eq!(evs[0], Ev::Member("items".into(), "null".into()));
}

#[test]
fn escaped_key() {
    let evs = frame(br#"{"it\u0065ms":[1]}"#, 2, &["items"]);
    assert_eq!(evs[0], Ev::Start("items".into()));
    assert_eq!(evs[1], Ev::Elem("items".into(), "1".into()));
}

#[test]
fn errors() {
    for bad in [
        &br#"[1]"#[..],
        br#"{"a":1}}"#,
        br#"{"a" 1}"#,
        br#"{"items":[1,]}"#,
        br#"{1:2}"#,
    ] {
        let mut f = ObjectFramer::new(&["items"]);
        let r = f.feed::<FrameError, _>(bad, &mut |_| Ok(()));
        assert!(r.is_err(), "{}", String::from_utf8_lossy(bad));
    }
    let mut f = ObjectFramer::new(&["items"]);
    f.feed::<FrameError, _>(br#"{"items":[{"a":"#, &mut |_| Ok(()))
        .unwrap();
    assert_eq!(f.finish(), Err(FrameError::Truncated));
}

#[test]
fn too_large() {
    let mut f = ObjectFramer::with_limit(&["items"], 10);
    let r = f.feed::<FrameError, _>(br#"{"items":[{"a":"0123456789abcdef"#, &mut |_| Ok(()));
    assert_eq!(r, Err(FrameError::TooLarge(10)));
}

#[test]
fn memory_is_bounded_by_item() {
    let item =
        r#"{"metadata":{"name":"x"},"spec":{"a":"0123456789012345678901234567890123456789"}}"#;
    let mut body = String::from(r#"{"kind":"L","items":["#);
    for i in 0..2000 {
        if i > 0 {
            body.push(',');
        }
        body.push_str(item);
    }
    body.push_str("]}");
    let mut f = ObjectFramer::new(&["items"]);
    let mut n = 0;
    let mut max = 0;
    for c in body.as_bytes().chunks(64) {
        f.feed::<FrameError, _>(c, &mut |e| {
            if matches!(e, Event::Element { .. }) {
                n += 1;
            }
            Ok(())
        })
        .unwrap();
        max = max.max(f.retained());
    }
    assert_eq!(n, 2000);
    assert!(max < 1024, "retained {max}");
}

#[test]
fn stream_framer() {
    let s = b"{\"type\":\"ADDED\",\"object\":{\"a\":\"}\\\"\"}}\n{\"type\":\"X\"}{\"b\":1}\n\n";
    let mut want = Vec::new();
    StreamFramer::new()
        .feed::<FrameError, _>(s, &mut |v, _| {
            want.push(v.to_vec());
            Ok(())
        })
        .unwrap();
    assert_eq!(want.len(), 3);
    for n in 1..s.len() {
        let mut got = Vec::new();
        let mut f = StreamFramer::new();
        for c in s.chunks(n) {
            f.feed::<FrameError, _>(c, &mut |v, _| {
                got.push(v.to_vec());
                Ok(())
            })
            .unwrap();
        }
        f.finish().unwrap();
        assert_eq!(got, want, "chunk {n}");
    }
    let mut f = StreamFramer::new();
    f.feed::<FrameError, _>(b"{\"a\":", &mut |_, _| Ok(()))
        .unwrap();
    assert_eq!(f.finish(), Err(FrameError::Truncated));
    assert!(
        StreamFramer::new()
            .feed::<FrameError, _>(b"]", &mut |_, _| Ok(()))
            .is_err()
    );
}

#[test]
fn lazy_members_and_shape() {
    let raw = br#"{"type":"ADDED", "obj\u0065ct" : {"a":[1,{"b":"}"}]} ,"n":1}"#;
    let m: Vec<MemberAt> = Members::new(raw).map(|m| m.unwrap()).collect();
    assert_eq!(m.len(), 3);
    assert_eq!(&raw[m[0].key.clone()], b"type");
    assert_eq!(&raw[m[0].value.clone()], br#""ADDED""#);
    assert!(m[1].key_escaped && !m[0].key_escaped);
    assert_eq!(&raw[m[2].value.clone()], b"1");
    assert!(Members::new(b"{}").next().is_none());
    assert!(Members::new(b"{\"a\" 1}").next().unwrap().is_err());

    let s = b"  {\"type\":\"MODIFIED\",\"object\":{\"x\":[{}],\"s\":\"{\"}}\n{\"a\":1}";
    for n in 1..s.len() {
        let mut shapes = Vec::new();
        let mut f = StreamFramer::new();
        for c in s.chunks(n) {
            f.feed::<FrameError, _>(c, &mut |v, sh| {
                shapes.push((v.to_vec(), sh));
                Ok(())
            })
            .unwrap();
        }
        let (v, sh) = &shapes[0];
        assert_eq!(sh.inner, 1, "chunk {n}");
        assert_eq!(&v[sh.first_open..sh.last_close], br#"{"x":[{}],"s":"{"}"#);
        assert_eq!(shapes[1].1.inner, 0);
    }
}

#[test]
fn members_and_elements() {
    let raw = br#" {"type" : "ADDED", "object":{"a":[1,"]"]}, "n": 12 } "#;
    let m = object_members(raw).unwrap();
    let got: Vec<(String, String)> = m
        .iter()
        .map(|(k, r)| {
            (
                k.to_string(),
                String::from_utf8_lossy(&raw[r.clone()]).into_owned(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("type".into(), "\"ADDED\"".into()),
            ("object".into(), r#"{"a":[1,"]"]}"#.into()),
            ("n".into(), "12".into())
        ]
    );
    assert!(object_members(b"{}").unwrap().is_empty());
    let raw = br#"[ 1 , {"a":"b"}, "c" ]"#;
    let e = array_elements(raw).unwrap();
    assert_eq!(e.len(), 3);
    assert_eq!(&raw[e[1].clone()], br#"{"a":"b"}"#);
    assert!(array_elements(b"[]").unwrap().is_empty());
    assert!(object_members(br#"{"a":1"#).is_err());
}
