//! The HPACK encoder of request and answer heads: cheap rather than small.
//!
//! - Strings are never Huffman-coded (the apiserver's decoder takes raw literals as they are;
//!   coding them costs more CPU here than the bytes saved cost on loopback TLS).
//! - `:method` GET/POST, `:scheme` and `:path` `/` are static-table indexes; other methods and
//!   paths are literals with the static name and are never added to the table (a path
//!   differs per object).
//! - Every other field is looked up in a small dynamic table (the peer's size, at most
//!   4 KiB): paddock's upstream requests repeat the same few fields (the credential, the
//!   `Impersonate-*` of the tenants on the connection, `Accept`, `User-Agent`, `:authority`),
//!   which then cost one byte each. A miss is sent "with incremental indexing" and added, so
//!   the next request of the same tenant hits. `content-length`, sensitive values and values
//!   over a third of the table are sent "without indexing" (or "never indexed").
//! - Lookups are a linear scan of the (few dozen) entries, newest first.

use http::{HeaderMap, HeaderName, Method, Request, StatusCode, header};

use super::{DynamicTable, TableEntry, put_int, put_str};

/// The largest table used, whatever the peer allows.
const MAX_TABLE: usize = 4096;

/// A dynamic-table entry: name and value.
type Entry = (Box<[u8]>, Box<[u8]>);

impl TableEntry for Entry {
    fn lens(&self) -> (usize, usize) {
        (self.0.len(), self.1.len())
    }
}

/// The encoding side of one connection.
pub struct Encoder {
    table: DynamicTable<Entry>,
    /// Smallest and last table size set since the last block, to announce at the next.
    update: Option<(usize, usize)>,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder {
            table: DynamicTable::new(MAX_TABLE),
            update: None,
        }
    }
}

/// A field of a request: where its name is in the static table, and whether it may be
/// added to the dynamic one.
struct Field<'a> {
    name: &'a [u8],
    value: &'a [u8],
    static_name: usize,
    index: bool,
    sensitive: bool,
}

impl Encoder {
    /// The peer's SETTINGS_HEADER_TABLE_SIZE changed to `limit`.
    pub fn set_peer_limit(&mut self, limit: usize) {
        let max = limit.min(MAX_TABLE);
        if max == self.table.max() {
            return;
        }
        self.table.set_max(max);
        let least = self.update.map_or(max, |(least, _)| least.min(max));
        self.update = Some((least, max));
    }

    /// Appends the header block of `head` to `out`.
    pub fn encode(&mut self, head: &Request<()>, out: &mut Vec<u8>) {
        self.size_update(out);
        match *head.method() {
            Method::GET => out.push(0x82),
            Method::POST => out.push(0x83),
            ref m => literal(out, 2, m.as_str().as_bytes()),
        }
        match head.uri().scheme_str() {
            Some("http") => out.push(0x86),
            _ => out.push(0x87),
        }
        if let Some(a) = head.uri().authority() {
            self.field(out, &plain(b":authority", a.as_str().as_bytes(), 1));
        }
        match head.uri().path_and_query().map(|p| p.as_str()) {
            None | Some("/") | Some("") => out.push(0x84),
            Some(p) => literal(out, 4, p.as_bytes()),
        }
        self.headers(head.headers(), out);
    }

    /// Appends the header block of an answer with `status` and `headers` to `out`.
    pub fn encode_response(&mut self, status: StatusCode, headers: &HeaderMap, out: &mut Vec<u8>) {
        self.size_update(out);
        match status.as_u16() {
            200 => out.push(0x88),
            204 => out.push(0x89),
            206 => out.push(0x8a),
            304 => out.push(0x8b),
            400 => out.push(0x8c),
            404 => out.push(0x8d),
            500 => out.push(0x8e),
            _ => literal(out, 8, status.as_str().as_bytes()),
        }
        self.headers(headers, out);
    }

    fn size_update(&mut self, out: &mut Vec<u8>) {
        if let Some((least, last)) = self.update.take() {
            put_int(out, 0x20, 5, least);
            if last != least {
                put_int(out, 0x20, 5, last);
            }
        }
    }

    /// The regular fields: connection-specific ones left out (RFC 9113 §8.2.2).
    fn headers(&mut self, headers: &HeaderMap, out: &mut Vec<u8>) {
        for (name, value) in headers {
            if connection_specific(name) && !(name == header::TE && value == "trailers") {
                continue;
            }
            let bytes = value.as_bytes();
            let f = Field {
                name: name.as_str().as_bytes(),
                value: bytes,
                static_name: static_name(name),
                index: indexable(name) && bytes.len() <= self.table.max() / 3,
                sensitive: value.is_sensitive(),
            };
            self.field(out, &f);
        }
    }

    fn field(&mut self, out: &mut Vec<u8>, f: &Field<'_>) {
        if f.sensitive {
            let name = self.name_index(f);
            return self.put_literal(out, 0x10, 4, name, f);
        }
        if !f.index {
            let name = self.name_index(f);
            return self.put_literal(out, 0x00, 4, name, f);
        }
        if let Some(i) = self
            .table
            .position(|(n, v)| **v == *f.value && **n == *f.name)
        {
            return put_int(out, 0x80, 7, 62 + i);
        }
        let name = self.name_index(f);
        self.put_literal(out, 0x40, 6, name, f);
        self.table.insert((f.name.into(), f.value.into()));
    }

    fn name_index(&self, f: &Field<'_>) -> usize {
        if f.static_name != 0 {
            return f.static_name;
        }
        self.table
            .position(|(n, _)| **n == *f.name)
            .map_or(0, |i| 62 + i)
    }

    fn put_literal(&self, out: &mut Vec<u8>, first: u8, prefix: u32, name: usize, f: &Field<'_>) {
        put_int(out, first, prefix, name);
        if name == 0 {
            put_str(out, f.name);
        }
        put_str(out, f.value);
    }
}

fn plain<'a>(name: &'a [u8], value: &'a [u8], static_name: usize) -> Field<'a> {
    Field {
        name,
        value,
        static_name,
        index: true,
        sensitive: false,
    }
}

/// A literal without indexing with a static name.
fn literal(out: &mut Vec<u8>, name: usize, value: &[u8]) {
    put_int(out, 0x00, 4, name);
    put_str(out, value);
}

/// Whether a field may go into the dynamic table: not `content-length` and not the
/// apiserver's `audit-id` (a new value in every answer: indexing it would only push the
/// repeated fields out of the table).
fn indexable(name: &HeaderName) -> bool {
    name != header::CONTENT_LENGTH && name != "audit-id"
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2).
fn connection_specific(name: &HeaderName) -> bool {
    name == header::CONNECTION
        || name == header::TRANSFER_ENCODING
        || name == header::UPGRADE
        || name == header::TE
        || name == "keep-alive"
        || name == "proxy-connection"
}

/// The static table's index of a (common) header name; 0 for the others.
fn static_name(name: &HeaderName) -> usize {
    match name.as_str() {
        "accept-charset" => 15,
        "accept-encoding" => 16,
        "accept-language" => 17,
        "accept" => 19,
        "authorization" => 23,
        "cache-control" => 24,
        "content-encoding" => 26,
        "content-length" => 28,
        "content-type" => 31,
        "cookie" => 32,
        "date" => 33,
        "etag" => 34,
        "expect" => 35,
        "from" => 37,
        "host" => 38,
        "if-match" => 39,
        "if-modified-since" => 40,
        "if-none-match" => 41,
        "if-range" => 42,
        "if-unmodified-since" => 43,
        "last-modified" => 44,
        "location" => 46,
        "range" => 50,
        "referer" => 51,
        "retry-after" => 53,
        "user-agent" => 58,
        "vary" => 59,
        "via" => 60,
        "www-authenticate" => 61,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::decoder::{Decoder, Name};
    use super::*;

    fn round_trip(
        e: &mut Encoder,
        d: &mut Decoder,
        head: &Request<()>,
    ) -> (usize, Vec<(String, String)>) {
        let mut out = Vec::new();
        e.encode(head, &mut out);
        let mut got = Vec::new();
        d.decode(&bytes::Bytes::from(out.clone()), 1 << 20, |n, v| {
            let n = match n {
                Name::Pseudo(b) => String::from_utf8(b.to_vec()).unwrap(),
                Name::Header(h) => h.as_str().to_owned(),
            };
            got.push((n, String::from_utf8(v.to_vec()).unwrap()));
        })
        .unwrap();
        (out.len(), got)
    }

    fn head(method: &str, path: &str, user: &str) -> Request<()> {
        Request::builder()
            .method(method)
            .uri(format!("https://10.0.0.1:6443{path}"))
            .header(
                "authorization",
                "Bearer abcdefghijklmnopqrstuvwxyz0123456789",
            )
            .header("impersonate-user", user)
            .header("impersonate-group", "paddock:tenant:acme01")
            .header("impersonate-group", "system:authenticated")
            .header("accept", "application/json")
            .header("content-length", "12")
            .header("connection", "close")
            .header("x-custom", "v")
            .body(())
            .unwrap()
    }

    #[test]
    fn requests_decode_as_sent_and_repeats_are_indexed() {
        let (mut e, mut d) = (Encoder::default(), Decoder::new(4096));
        let a = head("GET", "/api/v1/namespaces/a/pods/p", "alice");
        let (first, got) = round_trip(&mut e, &mut d, &a);
        let want: Vec<(String, String)> = [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "10.0.0.1:6443"),
            (":path", "/api/v1/namespaces/a/pods/p"),
            (
                "authorization",
                "Bearer abcdefghijklmnopqrstuvwxyz0123456789",
            ),
            ("impersonate-user", "alice"),
            ("impersonate-group", "paddock:tenant:acme01"),
            ("impersonate-group", "system:authenticated"),
            ("accept", "application/json"),
            ("content-length", "12"),
            ("x-custom", "v"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        assert_eq!(
            got, want,
            "connection-specific headers dropped, the rest in order"
        );
        let (second, got2) = round_trip(&mut e, &mut d, &a);
        assert_eq!(got2, want);
        assert!(second < first / 3, "{second} bytes again vs {first}");
        let b = head("DELETE", "/", "bob");
        let (_, got3) = round_trip(&mut e, &mut d, &b);
        assert_eq!(got3[0], (":method".to_owned(), "DELETE".to_owned()));
        assert_eq!(got3[3], (":path".to_owned(), "/".to_owned()));
        assert_eq!(got3[5], ("impersonate-user".to_owned(), "bob".to_owned()));
    }

    #[test]
    fn a_smaller_peer_table_is_announced_and_kept_in_step() {
        let (mut e, mut d) = (Encoder::default(), Decoder::new(4096));
        let mut n = 0;
        for limit in [4096, 0, 100, 4096, 200] {
            e.set_peer_limit(limit);
            for user in ["alice", "bob", "carol-with-a-long-name"] {
                n += 1;
                let (_, got) =
                    round_trip(&mut e, &mut d, &head("POST", "/x", &format!("{user}{n}")));
                assert_eq!(got[5].1, format!("{user}{n}"));
            }
        }
    }
}
