//! OpenAPI v2 in protobuf: the tenant's (already filtered) swagger JSON encoded as gnostic's
//! `openapi.v2.Document` message, the answer kube-apiserver gives to
//! `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (kubectl 1.27/1.28
//! `apply`/`diff`/`explain`, `explain --output=plaintext-openapiv2`, client-go's
//! `OpenAPISchema()`).
//!
//! kube-openapi builds that answer as `proto.Marshal(openapi_v2.ParseDocument(json))`; this is
//! the same walk (gnostic-models `openapiv2/OpenAPIv2.go`), field numbers from
//! `openapiv2/OpenAPIv2.proto`, fields written in number order as Go's marshaller does, so the
//! bytes are the apiserver's for the same JSON (checked against the apiserver in
//! tests/e2e/tests/openapi_proto.rs). Two deliberate simplifications, both on input the
//! apiserver never produces: a oneof is chosen by its discriminating key (`in`, `type`, `flow`,
//! `$ref`) where gnostic tries each branch's full validation, and keys gnostic would reject are
//! skipped rather than failing the document. Values of `Any` fields (vendor extensions,
//! `default`, `example`, `enum`) are YAML text, written by [`yaml_text`].

use serde_json::{Map, Value};

use crate::error::TranslateError;
use crate::response::openapi_yaml::yaml_text;

/// What kube-apiserver answers with (the `@` of the request media type becomes a `.`).
pub const OPENAPI_V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const SUBTYPES_PB: [&str; 2] = [
    "com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

/// Whether `/openapi/v2` should answer in protobuf, negotiated as kube-openapi does: clauses
/// by descending q (stable), the first that matches JSON or protobuf decides; `*` matches
/// JSON first.
pub fn wants_openapi_v2_protobuf(accept: Option<&str>) -> bool {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return false;
    };
    let mut clauses: Vec<(String, String, f64)> = accept
        .split(',')
        .filter_map(|c| {
            let mut parts = c.split(';');
            let mt = parts.next()?.trim().to_ascii_lowercase();
            let (t, s) = mt.split_once('/')?;
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            Some((t.to_owned(), s.to_owned(), q))
        })
        .collect();
    clauses.sort_by(|a, b| b.2.total_cmp(&a.2));
    for (t, s, q) in clauses {
        if q <= 0.0 || !(t == "application" || t == "*") {
            continue;
        }
        if s == "json" || s == "*" {
            return false;
        }
        if SUBTYPES_PB.contains(&s.as_str()) {
            return true;
        }
    }
    false
}

/// The swagger document `json` as an `openapi.v2.Document` message.
pub fn openapi_v2_protobuf(json: &[u8]) -> Result<Vec<u8>, TranslateError> {
    let doc: Value = serde_json::from_slice(json)
        .map_err(|e| TranslateError::Upstream(format!("OpenAPI document: {e}")))?;
    if !doc.is_object() {
        return Err(TranslateError::Upstream(
            "OpenAPI document is not an object".into(),
        ));
    }
    Ok(document(&doc))
}

/// A message under construction; proto3 rules: scalars at their default are not written,
/// set messages always are.
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn key(&mut self, num: u32, wire: u8) {
        varint(&mut self.0, (u64::from(num) << 3) | u64::from(wire));
    }
    fn bytes(&mut self, num: u32, b: &[u8]) {
        self.key(num, 2);
        varint(&mut self.0, b.len() as u64);
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, num: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(num, s.as_bytes());
        }
    }
    fn bool_always(&mut self, num: u32, b: bool) {
        self.key(num, 0);
        self.0.push(u8::from(b));
    }
    fn int(&mut self, num: u32, i: i64) {
        if i != 0 {
            self.key(num, 0);
            varint(&mut self.0, i as u64);
        }
    }
    fn double(&mut self, num: u32, f: f64) {
        if f != 0.0 || f.is_sign_negative() {
            self.key(num, 1);
            self.0.extend_from_slice(&f.to_le_bytes());
        }
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

type Encoder = fn(&Value) -> Vec<u8>;

/// How one JSON key becomes one field.
#[derive(Clone, Copy)]
enum K {
    Str,
    Bool,
    Int,
    Float,
    /// repeated string
    Strs,
    Any,
    /// repeated Any (a JSON array)
    Anys,
    Msg(Encoder),
    /// repeated message (a JSON array)
    Msgs(Encoder),
    /// a wrapper message whose field 1 is `repeated Named<X> {name = 1; X value = 2}`
    Map(Encoder),
    /// the same with `string value = 2`
    MapStr,
}

/// (JSON key, field number, kind), in field-number order.
type Table = [(&'static str, u32, K)];

/// The fields of `table` present in `v`, then the `x-` vendor extensions at `vendor`.
fn message(v: &Value, table: &Table, vendor: Option<u32>) -> Vec<u8> {
    let mut e = Enc::default();
    let Some(m) = v.as_object() else {
        return e.0;
    };
    for (name, num, kind) in table {
        if let Some(x) = m.get(*name) {
            field(&mut e, *num, *kind, x);
        }
    }
    if let Some(num) = vendor {
        vendor_extensions(&mut e, num, m);
    }
    e.0
}

fn field(e: &mut Enc, num: u32, kind: K, x: &Value) {
    match kind {
        K::Str => e.str(num, &scalar_text(x)),
        K::Bool => {
            if x.as_bool() == Some(true) {
                e.bool_always(num, true);
            }
        }
        K::Int => e.int(num, x.as_i64().unwrap_or(0)),
        K::Float => e.double(num, x.as_f64().unwrap_or(0.0)),
        K::Strs => {
            for s in x.as_array().into_iter().flatten() {
                if is_string_scalar(s) {
                    e.bytes(num, scalar_text(s).as_bytes());
                }
            }
        }
        K::Any => e.bytes(num, &any(x)),
        K::Anys => {
            for a in x.as_array().into_iter().flatten() {
                e.bytes(num, &any(a));
            }
        }
        K::Msg(f) => e.bytes(num, &f(x)),
        K::Msgs(f) => {
            for a in x.as_array().into_iter().flatten() {
                e.bytes(num, &f(a));
            }
        }
        K::Map(f) => e.bytes(num, &named_map(x, f)),
        K::MapStr => {
            let mut m = Enc::default();
            for (k, v) in x.as_object().into_iter().flatten() {
                let mut pair = Enc::default();
                pair.str(1, k);
                pair.str(2, &scalar_text(v));
                m.bytes(1, &pair.0);
            }
            e.bytes(num, &m.0);
        }
    }
}

/// gnostic's `StringForScalarNode`: strings and integers have text, null is "", the rest none.
fn scalar_text(x: &Value) -> String {
    match x {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        _ => String::new(),
    }
}

fn is_string_scalar(x: &Value) -> bool {
    matches!(x, Value::String(_) | Value::Null) || x.as_i64().is_some() || x.as_u64().is_some()
}

/// `{k: v, ...}` as a wrapper message: field 1 repeated `{name = 1; value = 2}`.
fn named_map(x: &Value, value: Encoder) -> Vec<u8> {
    let mut e = Enc::default();
    for (k, v) in x.as_object().into_iter().flatten() {
        e.bytes(1, &named(k, &value(v)));
    }
    e.0
}

fn named(name: &str, value: &[u8]) -> Vec<u8> {
    let mut e = Enc::default();
    e.str(1, name);
    e.bytes(2, value);
    e.0
}

fn vendor_extensions(e: &mut Enc, num: u32, m: &Map<String, Value>) {
    for (k, v) in m {
        if k.starts_with("x-") {
            e.bytes(num, &named(k, &any(v)));
        }
    }
}

/// `Any { string yaml = 2; }`
fn any(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    e.str(2, &yaml_text(v));
    e.0
}

fn document(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("swagger", 1, K::Str),
            ("info", 2, K::Msg(info)),
            ("host", 3, K::Str),
            ("basePath", 4, K::Str),
            ("schemes", 5, K::Strs),
            ("consumes", 6, K::Strs),
            ("produces", 7, K::Strs),
            ("paths", 8, K::Msg(paths)),
            ("definitions", 9, K::Map(schema)),
            ("parameters", 10, K::Map(parameter)),
            ("responses", 11, K::Map(response)),
            ("security", 12, K::Msgs(security_requirement)),
            ("securityDefinitions", 13, K::Map(security_definitions_item)),
            ("tags", 14, K::Msgs(tag)),
            ("externalDocs", 15, K::Msg(external_docs)),
        ],
        Some(16),
    )
}

fn info(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("title", 1, K::Str),
            ("version", 2, K::Str),
            ("description", 3, K::Str),
            ("termsOfService", 4, K::Str),
            ("contact", 5, K::Msg(contact)),
            ("license", 6, K::Msg(license)),
        ],
        Some(7),
    )
}

fn contact(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("name", 1, K::Str),
            ("url", 2, K::Str),
            ("email", 3, K::Str),
        ],
        Some(4),
    )
}

fn license(v: &Value) -> Vec<u8> {
    message(v, &[("name", 1, K::Str), ("url", 2, K::Str)], Some(3))
}

fn external_docs(v: &Value) -> Vec<u8> {
    message(
        v,
        &[("description", 1, K::Str), ("url", 2, K::Str)],
        Some(3),
    )
}

fn tag(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("name", 1, K::Str),
            ("description", 2, K::Str),
            ("externalDocs", 3, K::Msg(external_docs)),
        ],
        Some(4),
    )
}

/// `Paths { repeated NamedAny vendor_extension = 1; repeated NamedPathItem path = 2; }`
fn paths(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    if let Some(m) = v.as_object() {
        vendor_extensions(&mut e, 1, m);
        for (k, item) in m {
            if k.starts_with('/') {
                e.bytes(2, &named(k, &path_item(item)));
            }
        }
    }
    e.0
}

fn path_item(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("$ref", 1, K::Str),
            ("get", 2, K::Msg(operation)),
            ("put", 3, K::Msg(operation)),
            ("post", 4, K::Msg(operation)),
            ("delete", 5, K::Msg(operation)),
            ("options", 6, K::Msg(operation)),
            ("head", 7, K::Msg(operation)),
            ("patch", 8, K::Msg(operation)),
            ("parameters", 9, K::Msgs(parameters_item)),
        ],
        Some(10),
    )
}

fn operation(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("tags", 1, K::Strs),
            ("summary", 2, K::Str),
            ("description", 3, K::Str),
            ("externalDocs", 4, K::Msg(external_docs)),
            ("operationId", 5, K::Str),
            ("produces", 6, K::Strs),
            ("consumes", 7, K::Strs),
            ("parameters", 8, K::Msgs(parameters_item)),
            ("responses", 9, K::Msg(responses)),
            ("schemes", 10, K::Strs),
            ("deprecated", 11, K::Bool),
            ("security", 12, K::Msgs(security_requirement)),
        ],
        Some(13),
    )
}

fn has(v: &Value, key: &str) -> bool {
    v.get(key).is_some()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn json_reference(v: &Value) -> Vec<u8> {
    message(v, &[("$ref", 1, K::Str), ("description", 2, K::Str)], None)
}

/// `ParametersItem { oneof { Parameter parameter = 1; JsonReference json_reference = 2; } }`
fn parameters_item(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    if has(v, "$ref") {
        e.bytes(2, &json_reference(v));
    } else {
        e.bytes(1, &parameter(v));
    }
    e.0
}

/// `Parameter { oneof { BodyParameter = 1; NonBodyParameter = 2; } }`, then
/// `NonBodyParameter { oneof { header = 1; formData = 2; query = 3; path = 4; } }`.
fn parameter(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    let which = match str_of(v, "in") {
        "body" => {
            e.bytes(1, &body_parameter(v));
            return e.0;
        }
        "header" => 1,
        "formData" => 2,
        "query" => 3,
        "path" => 4,
        _ => return e.0,
    };
    let mut nb = Enc::default();
    nb.bytes(which, &non_body_parameter(v, which));
    e.bytes(2, &nb.0);
    e.0
}

fn body_parameter(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("description", 1, K::Str),
            ("name", 2, K::Str),
            ("in", 3, K::Str),
            ("required", 4, K::Bool),
            ("schema", 5, K::Msg(schema)),
        ],
        Some(6),
    )
}

/// Header (1) and path (4) sub-schemas have no `allowEmptyValue`, so every later number is
/// one less than in the form-data (2) and query (3) ones.
fn non_body_parameter(v: &Value, which: u32) -> Vec<u8> {
    const HEAD: [(&str, u32, K); 4] = [
        ("required", 1, K::Bool),
        ("in", 2, K::Str),
        ("description", 3, K::Str),
        ("name", 4, K::Str),
    ];
    let with_empty = which == 2 || which == 3;
    let shift = u32::from(with_empty);
    let mut table: Vec<(&str, u32, K)> = HEAD.to_vec();
    if with_empty {
        table.push(("allowEmptyValue", 5, K::Bool));
    }
    for (k, n, kind) in PRIMITIVE_TAIL {
        table.push((k, n + 4 + shift, kind));
    }
    message(v, &table, Some(18 + 4 + shift))
}

/// The fields shared by `PrimitivesItems` (numbered from 1), `Header` and the non-body
/// parameter sub-schemas (offset after their own head).
const PRIMITIVE_TAIL: [(&str, u32, K); 17] = [
    ("type", 1, K::Str),
    ("format", 2, K::Str),
    ("items", 3, K::Msg(primitives_items)),
    ("collectionFormat", 4, K::Str),
    ("default", 5, K::Any),
    ("maximum", 6, K::Float),
    ("exclusiveMaximum", 7, K::Bool),
    ("minimum", 8, K::Float),
    ("exclusiveMinimum", 9, K::Bool),
    ("maxLength", 10, K::Int),
    ("minLength", 11, K::Int),
    ("pattern", 12, K::Str),
    ("maxItems", 13, K::Int),
    ("minItems", 14, K::Int),
    ("uniqueItems", 15, K::Bool),
    ("enum", 16, K::Anys),
    ("multipleOf", 17, K::Float),
];

fn primitives_items(v: &Value) -> Vec<u8> {
    message(v, &PRIMITIVE_TAIL, Some(18))
}

fn header(v: &Value) -> Vec<u8> {
    let mut table = PRIMITIVE_TAIL.to_vec();
    table.push(("description", 18, K::Str));
    message(v, &table, Some(19))
}

/// `Responses { repeated NamedResponseValue response_code = 1; vendor_extension = 2; }`
fn responses(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    if let Some(m) = v.as_object() {
        for (k, r) in m {
            let code = k.len() == 3 && k.bytes().all(|b| b.is_ascii_digit());
            if code || k == "default" {
                e.bytes(1, &named(k, &response_value(r)));
            }
        }
        vendor_extensions(&mut e, 2, m);
    }
    e.0
}

fn response_value(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    if has(v, "$ref") && !has(v, "description") {
        e.bytes(2, &json_reference(v));
    } else {
        e.bytes(1, &response(v));
    }
    e.0
}

fn response(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("description", 1, K::Str),
            ("schema", 2, K::Msg(schema_item)),
            ("headers", 3, K::Map(header)),
            ("examples", 4, K::Map(any)),
        ],
        Some(5),
    )
}

/// `SchemaItem { oneof { Schema schema = 1; FileSchema file_schema = 2; } }`
fn schema_item(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    if v.get("type").and_then(Value::as_str) == Some("file") {
        e.bytes(2, &file_schema(v));
    } else {
        e.bytes(1, &schema(v));
    }
    e.0
}

fn file_schema(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("format", 1, K::Str),
            ("title", 2, K::Str),
            ("description", 3, K::Str),
            ("default", 4, K::Any),
            ("required", 5, K::Strs),
            ("type", 6, K::Str),
            ("readOnly", 7, K::Bool),
            ("externalDocs", 8, K::Msg(external_docs)),
            ("example", 9, K::Any),
        ],
        Some(10),
    )
}

fn schema(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("$ref", 1, K::Str),
            ("format", 2, K::Str),
            ("title", 3, K::Str),
            ("description", 4, K::Str),
            ("default", 5, K::Any),
            ("multipleOf", 6, K::Float),
            ("maximum", 7, K::Float),
            ("exclusiveMaximum", 8, K::Bool),
            ("minimum", 9, K::Float),
            ("exclusiveMinimum", 10, K::Bool),
            ("maxLength", 11, K::Int),
            ("minLength", 12, K::Int),
            ("pattern", 13, K::Str),
            ("maxItems", 14, K::Int),
            ("minItems", 15, K::Int),
            ("uniqueItems", 16, K::Bool),
            ("maxProperties", 17, K::Int),
            ("minProperties", 18, K::Int),
            ("required", 19, K::Strs),
            ("enum", 20, K::Anys),
            ("additionalProperties", 21, K::Msg(additional_properties)),
            ("type", 22, K::Msg(type_item)),
            ("items", 23, K::Msg(items_item)),
            ("allOf", 24, K::Msgs(schema)),
            ("properties", 25, K::Map(schema)),
            ("discriminator", 26, K::Str),
            ("readOnly", 27, K::Bool),
            ("xml", 28, K::Msg(xml)),
            ("externalDocs", 29, K::Msg(external_docs)),
            ("example", 30, K::Any),
        ],
        Some(31),
    )
}

/// `AdditionalPropertiesItem { oneof { Schema schema = 1; bool boolean = 2; } }`: a oneof
/// bool is written even when false.
fn additional_properties(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    match v {
        Value::Bool(b) => e.bool_always(2, *b),
        Value::Object(_) => e.bytes(1, &schema(v)),
        _ => {}
    }
    e.0
}

/// `TypeItem { repeated string value = 1; }`: one type or a list of them.
fn type_item(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    match v {
        Value::Array(a) => a
            .iter()
            .filter(|x| !x.is_array() && !x.is_object())
            .for_each(|x| e.bytes(1, scalar_value(x).as_bytes())),
        _ => e.bytes(1, scalar_value(v).as_bytes()),
    }
    e.0
}

/// A scalar node's text whatever its type (`TypeItem` takes `node.Value` as is).
fn scalar_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// `ItemsItem { repeated Schema schema = 1; }`: gnostic accepts only one schema (a map).
fn items_item(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    if v.is_object() {
        e.bytes(1, &schema(v));
    }
    e.0
}

fn xml(v: &Value) -> Vec<u8> {
    message(
        v,
        &[
            ("name", 1, K::Str),
            ("namespace", 2, K::Str),
            ("prefix", 3, K::Str),
            ("attribute", 4, K::Bool),
            ("wrapped", 5, K::Bool),
        ],
        Some(6),
    )
}

/// `SecurityRequirement { repeated NamedStringArray additional_properties = 1; }`
fn security_requirement(v: &Value) -> Vec<u8> {
    named_map(v, |a| {
        let mut e = Enc::default();
        field(&mut e, 1, K::Strs, a);
        e.0
    })
}

/// `SecurityDefinitionsItem`, a oneof by `type` (and `flow` for OAuth 2).
fn security_definitions_item(v: &Value) -> Vec<u8> {
    let mut e = Enc::default();
    let desc = ("description", K::Str);
    let (num, table): (u32, Vec<(&str, u32, K)>) = match (str_of(v, "type"), str_of(v, "flow")) {
        ("basic", _) => (1, vec![("type", 1, K::Str), (desc.0, 2, desc.1)]),
        ("apiKey", _) => (
            2,
            vec![
                ("type", 1, K::Str),
                ("name", 2, K::Str),
                ("in", 3, K::Str),
                (desc.0, 4, desc.1),
            ],
        ),
        ("oauth2", "implicit") => (3, oauth2(Some("authorizationUrl"), None)),
        ("oauth2", "password") => (4, oauth2(None, Some("tokenUrl"))),
        ("oauth2", "application") => (5, oauth2(None, Some("tokenUrl"))),
        ("oauth2", "accessCode") => (6, oauth2(Some("authorizationUrl"), Some("tokenUrl"))),
        _ => return e.0,
    };
    let vendor = table.len() as u32 + 1;
    e.bytes(num, &message(v, &table, Some(vendor)));
    e.0
}

fn oauth2(auth: Option<&'static str>, token: Option<&'static str>) -> Vec<(&'static str, u32, K)> {
    let mut t = vec![
        ("type", 1, K::Str),
        ("flow", 2, K::Str),
        ("scopes", 3, K::MapStr),
    ];
    for k in [auth, token].into_iter().flatten() {
        t.push((k, t.len() as u32 + 1, K::Str));
    }
    t.push(("description", t.len() as u32 + 1, K::Str));
    t
}

#[cfg(test)]
#[path = "openapi_pb_tests.rs"]
mod tests;
