//! Protobuf bodies (`application/vnd.kubernetes.protobuf`), which client-go sends for typed
//! writes of every built-in kind and has no fallback for.
//!
//! Choice: a schema-less, wire-level rewrite rather than transcoding to JSON. The envelope and
//! every message are walked as tag/length/value; only the fields the rule table
//! ([`crate::rules::table`]) names are decoded, by the protobuf field numbers the table
//! carries, lifted into a partial JSON object, run through the same object rules as JSON
//! bodies, and written back. Every other field (and every unknown field) is re-emitted byte
//! for byte, so nothing is lost. Since the table holds field numbers for every rule, every
//! built-in kind is handled; a kind the table has no row for has only `metadata` rules, as in
//! JSON.

use serde_json::{Map, Value};

use super::pb::MAGIC;
use super::pb::{Field, Wire, as_bytes, as_str, decode, encode, len_field, malformed};
use crate::catalog::context::TenantContext;
use crate::catalog::{ResourceInfo, split_api_version};
use crate::error::TranslateError;
use crate::rules::modes::{Disposition, UpMode};
use crate::rules::object::{object_down_as, object_up_with};
use crate::rules::schema::Check;
use crate::rules::schema::FieldRule;
use crate::rules::schema::Holds;
use crate::rules::schema::Step;
use crate::rules::table::{self};

fn unsupported(what: impl Into<String>) -> TranslateError {
    TranslateError::UnsupportedMediaType(what.into())
}

// ---------------------------------------------------------------------------------------------
// Message shapes

/// How a field is decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    Str,
    /// `bytes`: base64 in JSON.
    Bytes,
    /// A varint integer (int32/int64; negative int32 values are sign-extended, as Go writes them).
    Int,
    /// map<string,string>: repeated entries {1: key, 2: value}
    StrMap,
    /// map<string, ExtraValue{1: repeated string}>
    ExtraMap,
    Msg(Vec<Node>),
}

/// One decoded field. `name` None: a Go struct embedded inline, whose fields appear in the
/// parent's JSON object (PersistentVolumeSpec's `persistentVolumeSource`, a webhook
/// RuleWithOperations' `rule`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    num: u32,
    name: Option<&'static str>,
    rep: bool,
    shape: Shape,
}

/// Leaf message layouts (field numbers from k8s.io/api and apimachinery `generated.proto`).
#[derive(Clone, Copy)]
enum Ty {
    Str,
    /// `bytes`, lifted as base64 (as JSON carries them).
    Bytes,
    Int,
    RepStr,
    StrMap,
    ExtraMap,
    Msg(&'static [F]),
    RepMsg(&'static [F]),
    Inline(&'static [F]),
}

#[derive(Clone, Copy)]
struct F(u32, &'static str, Ty);

// meta/v1
const OWNER_REF: &[F] = &[
    F(1, "kind", Ty::Str),
    F(3, "name", Ty::Str),
    F(5, "apiVersion", Ty::Str),
];
const MANAGED_FIELDS: &[F] = &[F(3, "apiVersion", Ty::Str)];
const OBJECT_META: &[F] = &[
    F(1, "name", Ty::Str),
    F(2, "generateName", Ty::Str),
    F(3, "namespace", Ty::Str),
    F(11, "labels", Ty::StrMap),
    F(13, "ownerReferences", Ty::RepMsg(OWNER_REF)),
    F(17, "managedFields", Ty::RepMsg(MANAGED_FIELDS)),
];
const SELECTOR_REQ: &[F] = &[
    F(1, "key", Ty::Str),
    F(2, "operator", Ty::Str),
    F(3, "values", Ty::RepStr),
];
const LABEL_SELECTOR: &[F] = &[
    F(1, "matchLabels", Ty::StrMap),
    F(2, "matchExpressions", Ty::RepMsg(SELECTOR_REQ)),
];
// core/v1 ObjectReference
const OBJECT_REF: &[F] = &[
    F(1, "kind", Ty::Str),
    F(2, "namespace", Ty::Str),
    F(3, "name", Ty::Str),
    F(5, "apiVersion", Ty::Str),
];
// rbac/v1 (authorization/v1 ResourceRule has the same numbers for these)
const POLICY_RULE: &[F] = &[
    F(1, "verbs", Ty::RepStr),
    F(2, "apiGroups", Ty::RepStr),
    F(3, "resources", Ty::RepStr),
    F(4, "resourceNames", Ty::RepStr),
];
const SUBJECT: &[F] = &[
    F(1, "kind", Ty::Str),
    F(2, "apiGroup", Ty::Str),
    F(3, "name", Ty::Str),
    F(4, "namespace", Ty::Str),
];
const ROLE_REF: &[F] = &[
    F(1, "apiGroup", Ty::Str),
    F(2, "kind", Ty::Str),
    F(3, "name", Ty::Str),
];
// admissionregistration/v1 RuleWithOperations{operations=1, rule=2 (inline Rule)}
const RULE: &[F] = &[
    F(1, "apiGroups", Ty::RepStr),
    F(3, "resources", Ty::RepStr),
    F(4, "scope", Ty::Str),
];
const RULE_WITH_OPERATIONS: &[F] = &[F(2, "rule", Ty::Inline(RULE))];
// NamedRuleWithOperations{resourceNames=1, ruleWithOperations=2 (inline)}
const NAMED_RULE_WITH_OPERATIONS: &[F] =
    &[F(2, "ruleWithOperations", Ty::Inline(RULE_WITH_OPERATIONS))];
// admissionregistration/v1 ParamKind
const PARAM_KIND: &[F] = &[F(1, "apiVersion", Ty::Str), F(2, "kind", Ty::Str)];
// admissionregistration/v1 and apiextensions/v1 WebhookClientConfig
const SERVICE_REF: &[F] = &[F(1, "namespace", Ty::Str), F(2, "name", Ty::Str)];
const CLIENT_CONFIG: &[F] = &[F(3, "url", Ty::Str), F(1, "service", Ty::Msg(SERVICE_REF))];
// ServiceReference{namespace=1, name=2, path=3, port=4}; WebhookClientConfig{caBundle=2}: the
// whole config, which the relay rewrites (rules/relay.rs)
const WEBHOOK_SERVICE_REF: &[F] = &[
    F(1, "namespace", Ty::Str),
    F(2, "name", Ty::Str),
    F(3, "path", Ty::Str),
    F(4, "port", Ty::Int),
];
const WEBHOOK_CLIENT_CONFIG: &[F] = &[
    F(3, "url", Ty::Str),
    F(1, "service", Ty::Msg(WEBHOOK_SERVICE_REF)),
    F(2, "caBundle", Ty::Bytes),
];
// authorization/v1
const RESOURCE_ATTRIBUTES: &[F] = &[
    F(1, "namespace", Ty::Str),
    F(3, "group", Ty::Str),
    F(5, "resource", Ty::Str),
    F(7, "name", Ty::Str),
];
const REVIEW_IDENTITY: &[F] = &[
    F(3, "user", Ty::Str),
    F(4, "groups", Ty::RepStr),
    F(5, "extra", Ty::ExtraMap),
];
// flowcontrol/v1 Subject{kind=1, user=2 {name=1}, group=3 {name=1}, serviceAccount=4
// {namespace=1, name=2}}
const NAME_ONLY: &[F] = &[F(1, "name", Ty::Str)];
const FLOW_SUBJECT: &[F] = &[
    F(1, "kind", Ty::Str),
    F(2, "user", Ty::Msg(NAME_ONLY)),
    F(3, "group", Ty::Msg(NAME_ONLY)),
    F(4, "serviceAccount", Ty::Msg(SERVICE_REF)),
];
// A whole flowcontrol/v1 PriorityLevelConfiguration: metadata.annotations (ObjectMeta 12),
// spec{type=1, limited=2 {nominalConcurrencyShares=1}, exempt=3 (presence)}.
const LIMITED: &[F] = &[F(1, "nominalConcurrencyShares", Ty::Int)];
const PRIORITY_LEVEL_SPEC: &[F] = &[
    F(1, "type", Ty::Str),
    F(2, "limited", Ty::Msg(LIMITED)),
    F(3, "exempt", Ty::Msg(&[])),
];
const ANNOTATIONS_ONLY: &[F] = &[F(12, "annotations", Ty::StrMap)];
const PRIORITY_LEVEL: &[F] = &[
    F(1, "metadata", Ty::Msg(ANNOTATIONS_ONLY)),
    F(2, "spec", Ty::Msg(PRIORITY_LEVEL_SPEC)),
];
// authentication/v1 UserInfo
const USER_INFO: &[F] = &[
    F(1, "username", Ty::Str),
    F(3, "groups", Ty::RepStr),
    F(4, "extra", Ty::ExtraMap),
];
// authentication/v1 TokenReviewStatus (`authenticated` is a bool: a varint, lifted as 0 or 1).
const TOKEN_REVIEW_STATUS: &[F] = &[
    F(1, "authenticated", Ty::Int),
    F(2, "user", Ty::Msg(USER_INFO)),
    F(3, "error", Ty::Str),
    F(4, "audiences", Ty::RepStr),
];

fn nodes(fs: &[F]) -> Vec<Node> {
    fs.iter()
        .map(|F(num, name, ty)| {
            let (rep, shape, name) = match ty {
                Ty::Str => (false, Shape::Str, Some(*name)),
                Ty::Bytes => (false, Shape::Bytes, Some(*name)),
                Ty::Int => (false, Shape::Int, Some(*name)),
                Ty::RepStr => (true, Shape::Str, Some(*name)),
                Ty::StrMap => (false, Shape::StrMap, Some(*name)),
                Ty::ExtraMap => (false, Shape::ExtraMap, Some(*name)),
                Ty::Msg(sub) => (false, Shape::Msg(nodes(sub)), Some(*name)),
                Ty::RepMsg(sub) => (true, Shape::Msg(nodes(sub)), Some(*name)),
                Ty::Inline(sub) => (false, Shape::Msg(nodes(sub)), None),
            };
            Node {
                num: *num,
                name,
                rep,
                shape,
            }
        })
        .collect()
}

/// The decoded shape of the value a rule applies to.
fn leaf(h: Holds) -> Shape {
    let msg = |fs: &[F]| Shape::Msg(nodes(fs));
    match h {
        Holds::Namespace
        | Holds::VolumeName
        | Holds::CrdGroup
        | Holds::ServedGroup
        | Holds::ServedGroupName
        | Holds::FreeText
        | Holds::PolicyName
        | Holds::PriorityLevelRef
        | Holds::FlowNamespaces
        | Holds::CelExpression => Shape::Str,
        Holds::FlowSubjects => msg(FLOW_SUBJECT),
        Holds::PriorityLevel => msg(PRIORITY_LEVEL),
        Holds::ObjectRef => msg(OBJECT_REF),
        Holds::NamespaceSelector { .. } | Holds::RoleSelector => msg(LABEL_SELECTOR),
        Holds::Subjects { .. } => msg(SUBJECT),
        Holds::RoleRef { .. } => msg(ROLE_REF),
        Holds::PolicyRules { .. } | Holds::RulesReviewStatus => msg(POLICY_RULE),
        Holds::WebhookRules => msg(RULE_WITH_OPERATIONS),
        Holds::PolicyRulesNamed => msg(NAMED_RULE_WITH_OPERATIONS),
        Holds::ParamKind => msg(PARAM_KIND),
        Holds::ClientConfig => msg(WEBHOOK_CLIENT_CONFIG),
        Holds::ConversionClientConfig => msg(CLIENT_CONFIG),
        Holds::ResourceAttributes => msg(RESOURCE_ATTRIBUTES),
        Holds::ReviewIdentity { .. } => msg(REVIEW_IDENTITY),
        Holds::UserInfo => msg(USER_INFO),
        Holds::TokenReviewStatus => msg(TOKEN_REVIEW_STATUS),
        Holds::Embed(s) => Shape::Msg(tree(s.fields, &[])),
    }
}

/// Adds the nodes of `path` (ending in `shape`) to `into`, merging shared prefixes.
fn add_path(into: &mut Vec<Node>, path: &[Step], shape: Shape) {
    let Some((step, rest)) = path.split_first() else {
        return;
    };
    let Some((last, inline)) = step.pb.split_last() else {
        return;
    };
    // Inline numbers first (no JSON key), then the named field.
    let mut level = into;
    for num in inline {
        let i = find_or_push(level, *num, None, false);
        let Shape::Msg(children) = &mut level[i].shape else {
            return;
        };
        level = children;
    }
    let i = find_or_push(level, *last, Some(step.json), step.repeated);
    if rest.is_empty() {
        merge_shape(&mut level[i].shape, shape);
    } else if let Shape::Msg(children) = &mut level[i].shape {
        add_path(children, rest, shape);
    }
}

fn find_or_push(level: &mut Vec<Node>, num: u32, name: Option<&'static str>, rep: bool) -> usize {
    if let Some(i) = level.iter().position(|n| n.num == num) {
        return i;
    }
    level.push(Node {
        num,
        name,
        rep,
        shape: Shape::Msg(Vec::new()),
    });
    level.len() - 1
}

fn merge_shape(into: &mut Shape, shape: Shape) {
    match (into, shape) {
        (Shape::Msg(a), Shape::Msg(b)) => {
            for n in b {
                match a.iter_mut().find(|x| x.num == n.num) {
                    Some(x) => merge_shape(&mut x.shape, n.shape),
                    None => a.push(n),
                }
            }
        }
        (into, shape) => *into = shape,
    }
}

/// The decoding tree of a kind: `metadata` plus every field rule and check of its row.
fn tree(fields: &[FieldRule], checks: &[Check]) -> Vec<Node> {
    let mut out = Vec::new();
    for r in fields {
        if r.path.is_empty() {
            // A rule on the whole object: its fields are the object's.
            let mut root = Shape::Msg(std::mem::take(&mut out));
            merge_shape(&mut root, leaf(r.holds));
            if let Shape::Msg(nodes) = root {
                out = nodes;
            }
            continue;
        }
        add_path(&mut out, r.path, leaf(r.holds));
    }
    for c in checks {
        let Check::Absent { path, .. } = c;
        // Presence is all a check needs.
        add_path(&mut out, path, Shape::Msg(Vec::new()));
    }
    out
}

fn kind_tree(group: &str, kind: &str) -> Vec<Node> {
    let mut out = nodes(&[F(1, "metadata", Ty::Msg(OBJECT_META))]);
    if let Some(row) = table::rules_for(group, kind) {
        for n in tree(row.fields, row.checks) {
            match out.iter_mut().find(|x| x.num == n.num) {
                Some(x) => merge_shape(&mut x.shape, n.shape),
                None => out.push(n),
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Lift into JSON / write back

fn entry_kv(e: &Field) -> Result<(String, Vec<Field>), TranslateError> {
    let ef = decode(as_bytes(e)?)?;
    let k = ef
        .iter()
        .rev()
        .find(|x| x.num == 1)
        .map(as_str)
        .transpose()?
        .unwrap_or_default();
    Ok((k, ef))
}

fn lift_one(f: &Field, shape: &Shape) -> Result<Value, TranslateError> {
    Ok(match shape {
        Shape::Str => Value::String(as_str(f)?),
        Shape::Bytes => Value::String(crate::catalog::webhook_relay::b64_encode(as_bytes(f)?)),
        Shape::Int => match f.val {
            // proto int32/int64: the varint's bits are the two's complement value.
            Wire::Varint(x) => Value::from(x as i64),
            _ => return Err(super::pb::malformed("expected an integer")),
        },
        Shape::Msg(sub) => Value::Object(lift(&decode(as_bytes(f)?)?, sub)?),
        Shape::StrMap | Shape::ExtraMap => {
            return Err(TranslateError::Internal("map in a list".into()));
        }
    })
}

fn lift_map(occ: &[&Field], extra: bool) -> Result<Value, TranslateError> {
    let mut mm = Map::new();
    for e in occ {
        let (k, ef) = entry_kv(e)?;
        let v = ef.iter().rev().find(|x| x.num == 2);
        let v = if extra {
            let mut items = Vec::new();
            if let Some(ev) = v {
                for it in decode(as_bytes(ev)?)?.iter().filter(|x| x.num == 1) {
                    items.push(Value::String(as_str(it)?));
                }
            }
            Value::Array(items)
        } else {
            Value::String(v.map(as_str).transpose()?.unwrap_or_default())
        };
        mm.insert(k, v);
    }
    Ok(Value::Object(mm))
}

/// The fields of `schema` in `fields`, as JSON.
fn lift(fields: &[Field], schema: &[Node]) -> Result<Map<String, Value>, TranslateError> {
    let mut m = Map::new();
    for n in schema {
        let occ: Vec<&Field> = fields.iter().filter(|x| x.num == n.num).collect();
        let Some(last) = occ.last() else { continue };
        let Some(name) = n.name else {
            // Inline: its fields belong to this object. proto3: the last occurrence wins.
            if let Shape::Msg(sub) = &n.shape {
                m.append(&mut lift(&decode(as_bytes(last)?)?, sub)?);
            }
            continue;
        };
        let v = match &n.shape {
            Shape::StrMap => lift_map(&occ, false)?,
            Shape::ExtraMap => lift_map(&occ, true)?,
            s if n.rep => Value::Array(
                occ.iter()
                    .map(|x| lift_one(x, s))
                    .collect::<Result<_, _>>()?,
            ),
            s => lift_one(last, s)?,
        };
        m.insert(name.to_owned(), v);
    }
    Ok(m)
}

fn encode_map(num: u32, v: &Value, extra: bool) -> Result<Vec<Field>, TranslateError> {
    let mut out = Vec::new();
    for (k, val) in v.as_object().into_iter().flatten() {
        let value = if extra {
            let items: Vec<Field> = val
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| Ok(len_field(1, str_bytes(x)?)))
                .collect::<Result<_, TranslateError>>()?;
            encode(&items)
        } else {
            str_bytes(val)?
        };
        let e = encode(&[len_field(1, k.as_bytes().to_vec()), len_field(2, value)]);
        out.push(len_field(num, e));
    }
    Ok(out)
}

fn str_bytes(v: &Value) -> Result<Vec<u8>, TranslateError> {
    v.as_str()
        .map(|x| x.as_bytes().to_vec())
        .ok_or_else(|| TranslateError::Internal("expected a string".into()))
}

/// Merges `v` into the old message `old` (or a new one), keeping its other fields.
fn write_msg(
    num: u32,
    old: Option<&Field>,
    sub: &[Node],
    v: &Value,
) -> Result<Field, TranslateError> {
    let mut inner = match old {
        Some(o) => decode(as_bytes(o)?)?,
        None => Vec::new(),
    };
    writeback(&mut inner, sub, v.as_object().unwrap_or(&Map::new()))?;
    Ok(len_field(num, encode(&inner)))
}

/// Replaces the schema fields of `fields` by their values in `m`, keeping every other field
/// where it was. Sub-messages are rewritten in place, so their unknown fields survive too.
fn writeback(
    fields: &mut Vec<Field>,
    schema: &[Node],
    m: &Map<String, Value>,
) -> Result<(), TranslateError> {
    for n in schema {
        let first = fields.iter().position(|x| x.num == n.num);
        let olds: Vec<&Field> = fields.iter().filter(|x| x.num == n.num).collect();
        let new: Vec<Field> = match (n.name, &n.shape) {
            (None, Shape::Msg(sub)) => {
                // Inline: written from this object's fields; created only when it has some.
                let f = write_msg(n.num, olds.last().copied(), sub, &Value::Object(m.clone()))?;
                if olds.is_empty() && matches!(&f.val, Wire::Len(d) if d.is_empty()) {
                    Vec::new()
                } else {
                    vec![f]
                }
            }
            (None, _) => continue,
            (Some(name), shape) => match (m.get(name), shape) {
                (None | Some(Value::Null), _) => Vec::new(),
                (Some(v), Shape::StrMap) => encode_map(n.num, v, false)?,
                (Some(v), Shape::ExtraMap) => encode_map(n.num, v, true)?,
                (Some(Value::Array(items)), Shape::Msg(sub)) if n.rep => items
                    .iter()
                    .enumerate()
                    .map(|(i, it)| write_msg(n.num, olds.get(i).copied(), sub, it))
                    .collect::<Result<_, _>>()?,
                (Some(v), Shape::Msg(sub)) => vec![write_msg(n.num, olds.last().copied(), sub, v)?],
                (Some(Value::Array(items)), Shape::Str) if n.rep => items
                    .iter()
                    .map(|x| Ok(len_field(n.num, str_bytes(x)?)))
                    .collect::<Result<_, TranslateError>>()?,
                (Some(v), Shape::Str) => vec![len_field(n.num, str_bytes(v)?)],
                (Some(v), Shape::Bytes) => {
                    let b = v
                        .as_str()
                        .and_then(crate::catalog::webhook_relay::b64_decode)
                        .ok_or_else(|| TranslateError::bad("expected base64 bytes"))?;
                    vec![len_field(n.num, b)]
                }
                (Some(v), Shape::Int) => {
                    let x = v
                        .as_i64()
                        .ok_or_else(|| TranslateError::Internal("expected an integer".into()))?;
                    vec![Field {
                        num: n.num,
                        val: Wire::Varint(x as u64),
                    }]
                }
            },
        };
        let at = first.unwrap_or(fields.len());
        fields.retain(|x| x.num != n.num);
        let at = at.min(fields.len());
        fields.splice(at..at, new);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Envelope

/// Is this body a Kubernetes protobuf envelope?
pub fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// The `apiVersion` and `kind` in a protobuf envelope.
pub fn envelope_type(body: &[u8]) -> Result<(String, String), TranslateError> {
    let unknown = unknown_of(body)?;
    let tm = unknown
        .iter()
        .rev()
        .find(|x| x.num == 1)
        .ok_or_else(|| malformed("no typeMeta"))?;
    let tm = decode(as_bytes(tm)?)?;
    let get = |n: u32| -> Result<String, TranslateError> {
        Ok(tm
            .iter()
            .rev()
            .find(|x| x.num == n)
            .map(as_str)
            .transpose()?
            .unwrap_or_default())
    };
    Ok((get(1)?, get(2)?))
}

/// `k8s\0` + runtime.Unknown{typeMeta=1, raw=2, contentEncoding=3, contentType=4}.
fn unknown_of(body: &[u8]) -> Result<Vec<Field>, TranslateError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("missing k8s\\0 prefix"))?;
    decode(rest)
}

/// A decoded envelope: the runtime.Unknown, the raw object's index in it, the object.
struct Envelope {
    unknown: Vec<Field>,
    raw_idx: usize,
    obj: Vec<Field>,
    api_version: String,
    kind: String,
}

fn open(body: &[u8]) -> Result<Envelope, TranslateError> {
    let unknown = unknown_of(body)?;
    let (api_version, kind) = envelope_type(body)?;
    if unknown
        .iter()
        .any(|x| x.num == 3 && !matches!(&x.val, Wire::Len(d) if d.is_empty()))
    {
        return Err(unsupported(
            "protobuf bodies with a contentEncoding are not supported",
        ));
    }
    let raw_idx = unknown
        .iter()
        .rposition(|x| x.num == 2)
        .ok_or_else(|| malformed("no raw object"))?;
    let obj = decode(as_bytes(&unknown[raw_idx])?)?;
    Ok(Envelope {
        unknown,
        raw_idx,
        obj,
        api_version,
        kind,
    })
}

/// Lifts the object, runs `rules` on its JSON view, writes it back.
fn rewrite<T>(
    env: &mut Envelope,
    rules: impl FnOnce(&mut Value) -> Result<T, TranslateError>,
) -> Result<(T, Vec<u8>), TranslateError> {
    let (group, _) = split_api_version(&env.api_version);
    let schema = kind_tree(group, &env.kind);
    let mut full = Map::new();
    full.insert("apiVersion".into(), Value::String(env.api_version.clone()));
    full.insert("kind".into(), Value::String(env.kind.clone()));
    full.append(&mut lift(&env.obj, &schema)?);
    let mut v = Value::Object(full);
    let r = rules(&mut v)?;
    let Value::Object(m) = v else {
        return Err(TranslateError::Internal(
            "the rules changed the body's shape".into(),
        ));
    };
    writeback(&mut env.obj, &schema, &m)?;
    env.unknown[env.raw_idx] = len_field(2, encode(&env.obj));
    let mut out = MAGIC.to_vec();
    out.extend(encode(&env.unknown));
    Ok((r, out))
}

/// Translates a protobuf request body; returns the upstream body (still protobuf).
pub fn translate_protobuf_body(
    ctx: &TenantContext,
    hint: Option<&ResourceInfo>,
    path_namespace: Option<&str>,
    body: &[u8],
) -> Result<Vec<u8>, TranslateError> {
    let mut env = open(body)?;
    if env.kind == "DeleteOptions" {
        // Preconditions and policies only; nothing to translate.
        return Ok(body.to_vec());
    }
    let ((), out) = rewrite(&mut env, |v| {
        object_up_with(ctx, v, hint, path_namespace, UpMode::Full)
    })?;
    Ok(out)
}

/// Translates a protobuf object from upstream into the tenant's view; None when the object is
/// not the tenant's. (paddock asks upstream for JSON today; this is the same walk down, so
/// protobuf responses can follow without new rules.) Not lifted: `managedFields[].fieldsV1`,
/// whose tenant-label entry the JSON side removes.
pub fn protobuf_down(
    ctx: &TenantContext,
    hint: Option<&ResourceInfo>,
    body: &[u8],
) -> Result<Option<Vec<u8>>, TranslateError> {
    let mut env = open(body)?;
    let (d, out) = rewrite(&mut env, |v| object_down_as(ctx, v, hint))?;
    Ok((d == Disposition::Keep).then_some(out))
}

#[cfg(test)]
#[path = "protobuf_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "protobuf_kinds_tests.rs"]
mod kinds_tests;

#[cfg(test)]
#[path = "protobuf_flowcontrol_tests.rs"]
mod flowcontrol_tests;
