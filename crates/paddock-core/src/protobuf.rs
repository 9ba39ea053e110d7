//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), which client-go 1.32+ sends
//! for typed writes (`kubectl create namespace|deployment|rolebinding|...`, `auth can-i`).
//!
//! Choice: a schema-less, wire-level rewrite rather than transcoding to JSON. The envelope and
//! every message are walked as tag/length/value; only the fields paddock translates are
//! decoded (a small table of field numbers per kind, from kubernetes/api `generated.proto`),
//! lifted into a partial JSON object, run through the same [`object_up_with`] rules as JSON
//! bodies, and written back. Every other field (and every unknown field) is re-emitted byte for
//! byte, so nothing is lost. Kinds outside the table, and table kinds carrying reference fields
//! the table does not cover (pod affinity terms), are refused with 415: client-go has no
//! protobuf fallback, but the error names the kind, and kubectl's JSON paths keep working.

use serde_json::{Map, Value};

use crate::catalog::ResourceInfo;
use crate::error::TranslateError;
use crate::object::{UpMode, object_up_with};
use crate::request::TenantContext;

/// The 4-byte prefix of every Kubernetes protobuf body.
pub const MAGIC: &[u8; 4] = b"k8s\x00";

fn malformed(what: &str) -> TranslateError {
    TranslateError::BadRequest(format!("malformed protobuf body: {what}"))
}

fn unsupported(what: impl Into<String>) -> TranslateError {
    TranslateError::UnsupportedMediaType(what.into())
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Wire {
    Varint(u64),
    I64([u8; 8]),
    Len(Vec<u8>),
    I32([u8; 4]),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    num: u32,
    val: Wire,
}

fn read_varint(b: &[u8], pos: &mut usize) -> Result<u64, TranslateError> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos).ok_or_else(|| malformed("truncated varint"))?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(malformed("varint too long"))
}

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn decode(b: &[u8]) -> Result<Vec<Field>, TranslateError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let key = read_varint(b, &mut pos)?;
        let num = u32::try_from(key >> 3).map_err(|_| malformed("field number"))?;
        if num == 0 {
            return Err(malformed("field number 0"));
        }
        let take = |pos: &mut usize, n: usize| -> Result<&[u8], TranslateError> {
            let end = pos
                .checked_add(n)
                .filter(|e| *e <= b.len())
                .ok_or_else(|| malformed("truncated field"))?;
            let s = &b[*pos..end];
            *pos = end;
            Ok(s)
        };
        let val = match key & 7 {
            0 => Wire::Varint(read_varint(b, &mut pos)?),
            1 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(take(&mut pos, 8)?);
                Wire::I64(a)
            }
            2 => {
                let n =
                    usize::try_from(read_varint(b, &mut pos)?).map_err(|_| malformed("length"))?;
                Wire::Len(take(&mut pos, n)?.to_vec())
            }
            5 => {
                let mut a = [0u8; 4];
                a.copy_from_slice(take(&mut pos, 4)?);
                Wire::I32(a)
            }
            _ => return Err(malformed("unsupported wire type")),
        };
        out.push(Field { num, val });
    }
    Ok(out)
}

fn encode(fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in fields {
        let wt = match f.val {
            Wire::Varint(_) => 0,
            Wire::I64(_) => 1,
            Wire::Len(_) => 2,
            Wire::I32(_) => 5,
        };
        write_varint(&mut out, (u64::from(f.num) << 3) | wt);
        match &f.val {
            Wire::Varint(v) => write_varint(&mut out, *v),
            Wire::I64(a) => out.extend_from_slice(a),
            Wire::I32(a) => out.extend_from_slice(a),
            Wire::Len(d) => {
                write_varint(&mut out, d.len() as u64);
                out.extend_from_slice(d);
            }
        }
    }
    out
}

fn len_field(num: u32, data: Vec<u8>) -> Field {
    Field {
        num,
        val: Wire::Len(data),
    }
}

fn as_str(f: &Field) -> Result<String, TranslateError> {
    match &f.val {
        Wire::Len(d) => String::from_utf8(d.clone()).map_err(|_| malformed("string is not UTF-8")),
        _ => Err(malformed("expected a string")),
    }
}

fn as_bytes(f: &Field) -> Result<&[u8], TranslateError> {
    match &f.val {
        Wire::Len(d) => Ok(d),
        _ => Err(malformed("expected a message")),
    }
}

// ---------------------------------------------------------------------------------------------
// The field table

#[derive(Clone, Copy)]
enum Ty {
    Str,
    RepStr,
    /// map<string,string>: repeated entries {1: key, 2: value}
    StrMap,
    /// map<string, ExtraValue{1: repeated string}>
    ExtraMap,
    Msg(&'static [F]),
    RepMsg(&'static [F]),
}

#[derive(Clone, Copy)]
struct F {
    num: u32,
    name: &'static str,
    ty: Ty,
}

const fn f(num: u32, name: &'static str, ty: Ty) -> F {
    F { num, name, ty }
}

// k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto
const OWNER_REF: &[F] = &[
    f(1, "kind", Ty::Str),
    f(3, "name", Ty::Str),
    f(5, "apiVersion", Ty::Str),
];
const MANAGED_FIELDS: &[F] = &[f(3, "apiVersion", Ty::Str)];
const OBJECT_META: &[F] = &[
    f(1, "name", Ty::Str),
    f(2, "generateName", Ty::Str),
    f(3, "namespace", Ty::Str),
    f(11, "labels", Ty::StrMap),
    f(13, "ownerReferences", Ty::RepMsg(OWNER_REF)),
    f(17, "managedFields", Ty::RepMsg(MANAGED_FIELDS)),
];
const SELECTOR_REQ: &[F] = &[
    f(1, "key", Ty::Str),
    f(2, "operator", Ty::Str),
    f(3, "values", Ty::RepStr),
];
const LABEL_SELECTOR: &[F] = &[
    f(1, "matchLabels", Ty::StrMap),
    f(2, "matchExpressions", Ty::RepMsg(SELECTOR_REQ)),
];
// k8s.io/api/rbac/v1/generated.proto
const POLICY_RULE: &[F] = &[
    f(1, "verbs", Ty::RepStr),
    f(2, "apiGroups", Ty::RepStr),
    f(3, "resources", Ty::RepStr),
    f(4, "resourceNames", Ty::RepStr),
    f(5, "nonResourceURLs", Ty::RepStr),
];
const AGGREGATION_RULE: &[F] = &[f(1, "clusterRoleSelectors", Ty::RepMsg(LABEL_SELECTOR))];
const SUBJECT: &[F] = &[
    f(1, "kind", Ty::Str),
    f(2, "apiGroup", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "namespace", Ty::Str),
];
const ROLE_REF: &[F] = &[
    f(1, "apiGroup", Ty::Str),
    f(2, "kind", Ty::Str),
    f(3, "name", Ty::Str),
];
// k8s.io/api/authorization/v1/generated.proto
const RESOURCE_ATTRIBUTES: &[F] = &[
    f(1, "namespace", Ty::Str),
    f(2, "verb", Ty::Str),
    f(3, "group", Ty::Str),
    f(4, "version", Ty::Str),
    f(5, "resource", Ty::Str),
    f(6, "subresource", Ty::Str),
    f(7, "name", Ty::Str),
];
const SSAR_SPEC: &[F] = &[f(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES))];
const SAR_SPEC: &[F] = &[
    f(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
    f(3, "user", Ty::Str),
    f(4, "groups", Ty::RepStr),
    f(5, "extra", Ty::ExtraMap),
];
const SSRR_SPEC: &[F] = &[f(1, "namespace", Ty::Str)];

// k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/generated.proto
const SERVICE_REF: &[F] = &[f(1, "namespace", Ty::Str), f(2, "name", Ty::Str)];
const WEBHOOK_CLIENT_CONFIG: &[F] = &[f(3, "url", Ty::Str), f(1, "service", Ty::Msg(SERVICE_REF))];
const WEBHOOK_CONVERSION: &[F] = &[f(2, "clientConfig", Ty::Msg(WEBHOOK_CLIENT_CONFIG))];
const CRD_CONVERSION: &[F] = &[
    f(1, "strategy", Ty::Str),
    f(2, "webhook", Ty::Msg(WEBHOOK_CONVERSION)),
];
const CRD_NAMES: &[F] = &[
    f(1, "plural", Ty::Str),
    f(2, "singular", Ty::Str),
    f(4, "kind", Ty::Str),
    f(5, "listKind", Ty::Str),
];
const CRD_SPEC: &[F] = &[
    f(1, "group", Ty::Str),
    f(3, "names", Ty::Msg(CRD_NAMES)),
    f(4, "scope", Ty::Str),
    f(9, "conversion", Ty::Msg(CRD_CONVERSION)),
];
const CRD: &[F] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(CRD_SPEC)),
];

const META_ONLY: &[F] = &[f(1, "metadata", Ty::Msg(OBJECT_META))];
const ROLE: &[F] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "rules", Ty::RepMsg(POLICY_RULE)),
];
const CLUSTER_ROLE: &[F] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "rules", Ty::RepMsg(POLICY_RULE)),
    f(3, "aggregationRule", Ty::Msg(AGGREGATION_RULE)),
];
const BINDING: &[F] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "subjects", Ty::RepMsg(SUBJECT)),
    f(3, "roleRef", Ty::Msg(ROLE_REF)),
];
const SSAR: &[F] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(SSAR_SPEC)),
];
const SAR: &[F] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(SAR_SPEC)),
];
const SSRR: &[F] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(SSRR_SPEC)),
];

/// Field-number path from the object to its PodSpec, for kinds that embed one
/// (k8s.io/api/{core,apps,batch}/v1/generated.proto).
fn pod_spec_path(group: &str, kind: &str) -> Option<&'static [u32]> {
    Some(match (group, kind) {
        ("", "Pod") => &[2],
        ("", "PodTemplate") => &[2, 2],
        ("", "ReplicationController") | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet") => {
            &[2, 3, 2]
        }
        ("apps", "DaemonSet") => &[2, 2, 2],
        ("batch", "Job") => &[2, 6, 2],
        ("batch", "CronJob") => &[2, 5, 2, 6, 2],
        _ => return None,
    })
}

/// The table: kinds whose protobuf bodies paddock can translate.
fn schema_for(group: &str, kind: &str) -> Option<&'static [F]> {
    if pod_spec_path(group, kind).is_some() {
        return Some(META_ONLY);
    }
    Some(match (group, kind) {
        // Kinds whose only names are in ObjectMeta (their other references are
        // same-namespace names or shared classes, which pass unchanged).
        (
            "",
            "Namespace" | "ConfigMap" | "Secret" | "ServiceAccount" | "Service" | "ResourceQuota"
            | "LimitRange" | "Binding",
        )
        | ("policy", "PodDisruptionBudget" | "Eviction")
        | ("coordination.k8s.io", "Lease")
        | ("networking.k8s.io", "Ingress")
        | ("autoscaling", "Scale" | "HorizontalPodAutoscaler")
        | ("authentication.k8s.io", "TokenRequest" | "SelfSubjectReview")
        | ("scheduling.k8s.io", "PriorityClass") => META_ONLY,
        ("rbac.authorization.k8s.io", "Role") => ROLE,
        ("rbac.authorization.k8s.io", "ClusterRole") => CLUSTER_ROLE,
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => BINDING,
        ("authorization.k8s.io", "SelfSubjectAccessReview") => SSAR,
        ("authorization.k8s.io", "SubjectAccessReview" | "LocalSubjectAccessReview") => SAR,
        ("authorization.k8s.io", "SelfSubjectRulesReview") => SSRR,
        ("apiextensions.k8s.io", "CustomResourceDefinition") => CRD,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Extract / write back

fn extract(fields: &[Field], schema: &[F]) -> Result<Map<String, Value>, TranslateError> {
    let mut m = Map::new();
    for sf in schema {
        let occ: Vec<&Field> = fields.iter().filter(|x| x.num == sf.num).collect();
        if occ.is_empty() {
            continue;
        }
        let v = match sf.ty {
            // proto3: the last occurrence of a singular field wins.
            Ty::Str => Value::String(as_str(occ[occ.len() - 1])?),
            Ty::RepStr => Value::Array(
                occ.iter()
                    .map(|x| as_str(x).map(Value::String))
                    .collect::<Result<_, _>>()?,
            ),
            Ty::StrMap => {
                let mut mm = Map::new();
                for e in occ {
                    let ef = decode(as_bytes(e)?)?;
                    let k = ef
                        .iter()
                        .rev()
                        .find(|x| x.num == 1)
                        .map(as_str)
                        .transpose()?
                        .unwrap_or_default();
                    let v = ef
                        .iter()
                        .rev()
                        .find(|x| x.num == 2)
                        .map(as_str)
                        .transpose()?
                        .unwrap_or_default();
                    mm.insert(k, Value::String(v));
                }
                Value::Object(mm)
            }
            Ty::ExtraMap => {
                let mut mm = Map::new();
                for e in occ {
                    let ef = decode(as_bytes(e)?)?;
                    let k = ef
                        .iter()
                        .rev()
                        .find(|x| x.num == 1)
                        .map(as_str)
                        .transpose()?
                        .unwrap_or_default();
                    let mut items = Vec::new();
                    if let Some(ev) = ef.iter().rev().find(|x| x.num == 2) {
                        for it in decode(as_bytes(ev)?)?.iter().filter(|x| x.num == 1) {
                            items.push(Value::String(as_str(it)?));
                        }
                    }
                    mm.insert(k, Value::Array(items));
                }
                Value::Object(mm)
            }
            Ty::Msg(sub) => Value::Object(extract(&decode(as_bytes(occ[occ.len() - 1])?)?, sub)?),
            Ty::RepMsg(sub) => Value::Array(
                occ.iter()
                    .map(|x| Ok(Value::Object(extract(&decode(as_bytes(x)?)?, sub)?)))
                    .collect::<Result<_, TranslateError>>()?,
            ),
        };
        m.insert(sf.name.to_owned(), v);
    }
    Ok(m)
}

fn encode_value(sf: &F, v: &Value) -> Result<Vec<Field>, TranslateError> {
    let s = |v: &Value| -> Result<Vec<u8>, TranslateError> {
        v.as_str()
            .map(|x| x.as_bytes().to_vec())
            .ok_or_else(|| TranslateError::Internal("expected a string".into()))
    };
    Ok(match sf.ty {
        Ty::Str => vec![len_field(sf.num, s(v)?)],
        Ty::RepStr => v
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|x| Ok(len_field(sf.num, s(x)?)))
                    .collect::<Result<Vec<_>, TranslateError>>()
            })
            .transpose()?
            .unwrap_or_default(),
        Ty::StrMap => {
            let mut out = Vec::new();
            for (k, val) in v.as_object().into_iter().flatten() {
                let e = encode(&[len_field(1, k.as_bytes().to_vec()), len_field(2, s(val)?)]);
                out.push(len_field(sf.num, e));
            }
            out
        }
        Ty::ExtraMap => {
            let mut out = Vec::new();
            for (k, val) in v.as_object().into_iter().flatten() {
                let items: Vec<Field> = val
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|x| Ok(len_field(1, s(x)?)))
                    .collect::<Result<_, TranslateError>>()?;
                let e = encode(&[
                    len_field(1, k.as_bytes().to_vec()),
                    len_field(2, encode(&items)),
                ]);
                out.push(len_field(sf.num, e));
            }
            out
        }
        Ty::Msg(sub) => {
            let mut fields = Vec::new();
            writeback(&mut fields, sub, v.as_object().unwrap_or(&Map::new()))?;
            vec![len_field(sf.num, encode(&fields))]
        }
        Ty::RepMsg(sub) => {
            let mut out = Vec::new();
            for e in v.as_array().into_iter().flatten() {
                let mut fields = Vec::new();
                writeback(&mut fields, sub, e.as_object().unwrap_or(&Map::new()))?;
                out.push(len_field(sf.num, encode(&fields)));
            }
            out
        }
    })
}

/// Replaces the schema fields of `fields` by their values in `m`, keeping every other field
/// where it was. Sub-messages are rewritten in place, so their unknown fields survive too.
fn writeback(
    fields: &mut Vec<Field>,
    schema: &[F],
    m: &Map<String, Value>,
) -> Result<(), TranslateError> {
    for sf in schema {
        let first = fields.iter().position(|x| x.num == sf.num);
        let new: Vec<Field> = match (m.get(sf.name), sf.ty) {
            (None | Some(Value::Null), _) => Vec::new(),
            (Some(v), Ty::Msg(sub)) => {
                // Merge into the existing message (last occurrence) to keep its other fields.
                let mut inner = match fields.iter().rev().find(|x| x.num == sf.num) {
                    Some(old) => decode(as_bytes(old)?)?,
                    None => Vec::new(),
                };
                writeback(&mut inner, sub, v.as_object().unwrap_or(&Map::new()))?;
                vec![len_field(sf.num, encode(&inner))]
            }
            (Some(Value::Array(items)), Ty::RepMsg(sub)) => {
                let olds: Vec<&Field> = fields.iter().filter(|x| x.num == sf.num).collect();
                let mut out = Vec::new();
                for (i, it) in items.iter().enumerate() {
                    let mut inner = match olds.get(i) {
                        Some(old) => decode(as_bytes(old)?)?,
                        None => Vec::new(),
                    };
                    writeback(&mut inner, sub, it.as_object().unwrap_or(&Map::new()))?;
                    out.push(len_field(sf.num, encode(&inner)));
                }
                out
            }
            (Some(v), _) => encode_value(sf, v)?,
        };
        let at = first.unwrap_or(fields.len());
        fields.retain(|x| x.num != sf.num);
        let at = at.min(fields.len());
        fields.splice(at..at, new);
    }
    Ok(())
}

fn field_path_present(fields: &[Field], path: &[u32]) -> Result<bool, TranslateError> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(true);
    };
    for x in fields.iter().filter(|x| x.num == *first) {
        if rest.is_empty() {
            return Ok(true);
        }
        if field_path_present(&decode(as_bytes(x)?)?, rest)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Is this body a Kubernetes protobuf envelope?
pub fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// The `apiVersion` and `kind` in a protobuf envelope.
pub fn envelope_type(body: &[u8]) -> Result<(String, String), TranslateError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("missing k8s\\0 prefix"))?;
    let unknown = decode(rest)?;
    let tm = unknown
        .iter()
        .rev()
        .find(|x| x.num == 1)
        .ok_or_else(|| malformed("no typeMeta"))?;
    let tm = decode(as_bytes(tm)?)?;
    let av = tm
        .iter()
        .rev()
        .find(|x| x.num == 1)
        .map(as_str)
        .transpose()?
        .unwrap_or_default();
    let kind = tm
        .iter()
        .rev()
        .find(|x| x.num == 2)
        .map(as_str)
        .transpose()?
        .unwrap_or_default();
    Ok((av, kind))
}

/// Translates a protobuf request body; returns the upstream body (still protobuf).
pub fn translate_protobuf_body(
    ctx: &TenantContext,
    hint: Option<&ResourceInfo>,
    path_namespace: Option<&str>,
    body: &[u8],
) -> Result<Vec<u8>, TranslateError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("missing k8s\\0 prefix"))?;
    let mut unknown = decode(rest)?;
    let (av, kind) = envelope_type(body)?;
    if unknown
        .iter()
        .any(|x| x.num == 3 && !matches!(&x.val, Wire::Len(d) if d.is_empty()))
    {
        return Err(unsupported(
            "protobuf bodies with a contentEncoding are not supported",
        ));
    }
    if kind == "DeleteOptions" {
        // Preconditions and policies only; nothing to translate.
        return Ok(body.to_vec());
    }
    let (group, _) = crate::catalog::split_api_version(&av);
    let schema = schema_for(group, &kind).ok_or_else(|| {
        unsupported(format!(
            "protobuf bodies of kind {kind} ({av}) are not supported by this cluster; send JSON"
        ))
    })?;
    let raw_idx = unknown
        .iter()
        .rposition(|x| x.num == 2)
        .ok_or_else(|| malformed("no raw object"))?;
    let mut obj = decode(as_bytes(&unknown[raw_idx])?)?;
    if let Some(p) = pod_spec_path(group, &kind) {
        for aff in [2u32, 3] {
            let full: Vec<u32> = p.iter().copied().chain([18, aff]).collect();
            if field_path_present(&obj, &full)? {
                return Err(unsupported(format!(
                    "protobuf {kind} bodies with pod (anti-)affinity terms are not supported by this cluster; send JSON"
                )));
            }
        }
        if kind == "StatefulSet" && field_path_present(&obj, &[2, 4])? {
            return Err(unsupported(
                "protobuf StatefulSet bodies with volumeClaimTemplates are not supported by this cluster; send JSON",
            ));
        }
    }
    let mut json = extract(&obj, schema)?;
    let mut full = Map::new();
    full.insert("apiVersion".into(), Value::String(av.clone()));
    full.insert("kind".into(), Value::String(kind.clone()));
    full.append(&mut json);
    let mut v = Value::Object(full);
    object_up_with(ctx, &mut v, hint, path_namespace, UpMode::Full)?;
    let Value::Object(m) = v else {
        return Err(TranslateError::Internal(
            "object_up changed the body's shape".into(),
        ));
    };
    writeback(&mut obj, schema, &m)?;
    unknown[raw_idx] = len_field(2, encode(&obj));
    let mut out = MAGIC.to_vec();
    out.extend(encode(&unknown));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::catalog::tests::catalog;
    use crate::tenant::TenantId;

    fn ctx() -> TenantContext {
        TenantContext {
            tenant: TenantId::parse("foofoo").unwrap(),
            catalog: Arc::new(catalog()),
        }
    }

    fn s(num: u32, v: &str) -> Field {
        len_field(num, v.as_bytes().to_vec())
    }
    fn m(num: u32, fields: Vec<Field>) -> Field {
        len_field(num, encode(&fields))
    }
    fn label(k: &str, v: &str) -> Field {
        m(11, vec![s(1, k), s(2, v)])
    }

    /// Builds `k8s\0` + runtime.Unknown{typeMeta, raw, contentEncoding "", contentType ""}.
    fn envelope(av: &str, kind: &str, raw: Vec<Field>) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend(encode(&[
            m(1, vec![s(1, av), s(2, kind)]),
            m(2, raw),
            s(3, ""),
            s(4, ""),
        ]));
        out
    }

    fn raw_of(body: &[u8]) -> Vec<Field> {
        let u = decode(&body[4..]).unwrap();
        decode(as_bytes(u.iter().find(|x| x.num == 2).unwrap()).unwrap()).unwrap()
    }

    fn sub(fields: &[Field], num: u32) -> Vec<Field> {
        decode(as_bytes(fields.iter().find(|x| x.num == num).unwrap()).unwrap()).unwrap()
    }

    fn strs(fields: &[Field], num: u32) -> Vec<String> {
        fields
            .iter()
            .filter(|x| x.num == num)
            .map(|x| as_str(x).unwrap())
            .collect()
    }

    #[test]
    fn varints_round_trip() {
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut b = Vec::new();
            write_varint(&mut b, v);
            let mut pos = 0;
            assert_eq!(read_varint(&b, &mut pos).unwrap(), v);
            assert_eq!(pos, b.len());
        }
        assert!(decode(&[0x0a, 0x05, b'a']).is_err());
        assert!(decode(&[0x0b]).is_err());
    }

    #[test]
    fn protobuf_namespace_create() {
        // kubectl create namespace dev
        let body = envelope(
            "v1",
            "Namespace",
            vec![
                m(1, vec![s(1, "dev"), label("team", "a")]),
                m(2, vec![]),
                m(3, vec![]),
            ],
        );
        let out = translate_protobuf_body(&ctx(), None, None, &body).unwrap();
        let raw = raw_of(&out);
        let meta = sub(&raw, 1);
        assert_eq!(strs(&meta, 1), vec!["foofoo-dev"]);
        let labels: Vec<(String, String)> = meta
            .iter()
            .filter(|x| x.num == 11)
            .map(|x| {
                let e = decode(as_bytes(x).unwrap()).unwrap();
                (as_str(&e[0]).unwrap(), as_str(&e[1]).unwrap())
            })
            .collect();
        assert_eq!(
            labels,
            vec![
                ("team".into(), "a".into()),
                ("paddock.io/tenant".into(), "foofoo".into())
            ]
        );
        // spec and status survive byte for byte
        assert_eq!(raw.iter().filter(|x| x.num != 1).count(), 2);
        assert_eq!(
            envelope_type(&out).unwrap(),
            ("v1".into(), "Namespace".into())
        );
    }

    #[test]
    fn protobuf_crd_group_and_name() {
        // apiextensions clientset: CRD widgets.example.com with a version list we do not decode
        let body = envelope(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            vec![
                m(1, vec![s(1, "widgets.example.com")]),
                m(
                    2,
                    vec![
                        s(1, "example.com"),
                        m(3, vec![s(1, "widgets"), s(2, "widget"), s(4, "Widget")]),
                        s(4, "Namespaced"),
                        m(7, vec![s(1, "v1")]),
                    ],
                ),
            ],
        );
        let out = translate_protobuf_body(&ctx(), None, None, &body).unwrap();
        let raw = raw_of(&out);
        assert_eq!(strs(&sub(&raw, 1), 1), vec!["widgets.foofoo-example.com"]);
        let spec = sub(&raw, 2);
        assert_eq!(strs(&spec, 1), vec!["foofoo-example.com"]);
        // the versions (field 7) survive untouched
        assert_eq!(spec.iter().filter(|x| x.num == 7).count(), 1);
    }

    #[test]
    fn protobuf_deployment_keeps_unknown_fields() {
        // metadata with uid-like unknown field 5 and a deployment spec we do not decode
        let spec = vec![
            Field {
                num: 1,
                val: Wire::Varint(3),
            },
            m(3, vec![m(2, vec![m(2, vec![s(1, "c"), s(2, "nginx")])])]),
        ];
        let body = envelope(
            "apps/v1",
            "Deployment",
            vec![
                m(1, vec![s(1, "web"), s(3, "default"), s(5, "uid-1")]),
                m(2, spec.clone()),
            ],
        );
        let out = translate_protobuf_body(&ctx(), None, Some("default"), &body).unwrap();
        let raw = raw_of(&out);
        let meta = sub(&raw, 1);
        assert_eq!(strs(&meta, 1), vec!["web"]);
        assert_eq!(strs(&meta, 3), vec!["foofoo-default"]);
        assert_eq!(strs(&meta, 5), vec!["uid-1"]);
        assert_eq!(sub(&raw, 2), spec);
    }

    #[test]
    fn protobuf_pod_affinity_is_refused() {
        let podspec = vec![m(
            18,
            vec![m(2, vec![m(1, vec![s(3, "kubernetes.io/hostname")])])],
        )];
        let body = envelope(
            "apps/v1",
            "Deployment",
            vec![
                m(1, vec![s(1, "web")]),
                m(2, vec![m(3, vec![m(2, podspec)])]),
            ],
        );
        let e = translate_protobuf_body(&ctx(), None, Some("default"), &body).unwrap_err();
        assert_eq!(e.http_code(), 415);
        // node affinity alone is fine
        let podspec = vec![m(18, vec![m(1, vec![])])];
        let body = envelope(
            "apps/v1",
            "Deployment",
            vec![
                m(1, vec![s(1, "web")]),
                m(2, vec![m(3, vec![m(2, podspec)])]),
            ],
        );
        assert!(translate_protobuf_body(&ctx(), None, Some("default"), &body).is_ok());
    }

    #[test]
    fn protobuf_rolebinding_subjects_and_role_ref() {
        // kubectl create rolebinding b --clusterrole=reader --user=alice --serviceaccount=ci:builder
        let body = envelope(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            vec![
                m(1, vec![s(1, "b"), s(3, "default")]),
                m(
                    2,
                    vec![
                        s(1, "User"),
                        s(2, "rbac.authorization.k8s.io"),
                        s(3, "alice"),
                    ],
                ),
                m(2, vec![s(1, "ServiceAccount"), s(3, "builder"), s(4, "ci")]),
                m(
                    3,
                    vec![
                        s(1, "rbac.authorization.k8s.io"),
                        s(2, "ClusterRole"),
                        s(3, "reader"),
                    ],
                ),
            ],
        );
        let out = translate_protobuf_body(&ctx(), None, Some("default"), &body).unwrap();
        let raw = raw_of(&out);
        let subjects: Vec<Vec<Field>> = raw
            .iter()
            .filter(|x| x.num == 2)
            .map(|x| decode(as_bytes(x).unwrap()).unwrap())
            .collect();
        assert_eq!(strs(&subjects[0], 3), vec!["paddock:foofoo:alice"]);
        assert_eq!(strs(&subjects[1], 4), vec!["foofoo-ci"]);
        assert_eq!(strs(&sub(&raw, 3), 3), vec!["foofoo-reader"]);
        let bad = envelope(
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            vec![
                m(1, vec![s(1, "b")]),
                m(2, vec![s(1, "Group"), s(3, "system:masters")]),
                m(3, vec![s(2, "ClusterRole"), s(3, "x")]),
            ],
        );
        assert_eq!(
            translate_protobuf_body(&ctx(), None, None, &bad)
                .unwrap_err()
                .http_code(),
            403
        );
    }

    #[test]
    fn protobuf_cluster_role_rules() {
        let body = envelope(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            vec![
                m(1, vec![s(1, "r")]),
                m(2, vec![s(1, "get"), s(2, "example.com"), s(3, "widgets")]),
            ],
        );
        let out = translate_protobuf_body(&ctx(), None, None, &body).unwrap();
        let raw = raw_of(&out);
        assert_eq!(strs(&sub(&raw, 1), 1), vec!["foofoo-r"]);
        assert_eq!(strs(&sub(&raw, 2), 2), vec!["foofoo-example.com"]);
        assert_eq!(strs(&sub(&raw, 2), 1), vec!["get"]);
    }

    #[test]
    fn protobuf_access_reviews() {
        // kubectl auth can-i get pods -n default
        let body = envelope(
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            vec![
                m(1, vec![]),
                m(
                    2,
                    vec![m(1, vec![s(1, "default"), s(2, "get"), s(5, "pods")])],
                ),
                m(3, vec![]),
            ],
        );
        let out = translate_protobuf_body(&ctx(), None, None, &body).unwrap();
        let ra = sub(&sub(&raw_of(&out), 2), 1);
        assert_eq!(strs(&ra, 1), vec!["foofoo-default"]);
        assert_eq!(strs(&ra, 2), vec!["get"]);
        // SubjectAccessReview: user, groups, extra
        let body = envelope(
            "authorization.k8s.io/v1",
            "SubjectAccessReview",
            vec![
                m(1, vec![]),
                m(
                    2,
                    vec![
                        m(1, vec![s(1, "default"), s(2, "get"), s(5, "pods")]),
                        s(3, "alice"),
                        s(4, "dev"),
                        s(6, "uid"),
                    ],
                ),
            ],
        );
        let out = translate_protobuf_body(&ctx(), None, None, &body).unwrap();
        let spec = sub(&raw_of(&out), 2);
        assert_eq!(strs(&spec, 3), vec!["paddock:foofoo:alice"]);
        assert_eq!(
            strs(&spec, 4),
            vec![
                "paddock:foofoo:dev",
                "paddock:tenant:foofoo",
                "system:authenticated"
            ]
        );
        assert_eq!(strs(&spec, 6), vec!["uid"]);
        let extra = decode(as_bytes(spec.iter().find(|x| x.num == 5).unwrap()).unwrap()).unwrap();
        assert_eq!(as_str(&extra[0]).unwrap(), "paddock.io/tenant");
        let body = envelope(
            "authorization.k8s.io/v1",
            "SelfSubjectRulesReview",
            vec![m(1, vec![]), m(2, vec![s(1, "default")])],
        );
        let out = translate_protobuf_body(&ctx(), None, None, &body).unwrap();
        assert_eq!(strs(&sub(&raw_of(&out), 2), 1), vec!["foofoo-default"]);
    }

    #[test]
    fn protobuf_unknown_kinds_are_415() {
        let body = envelope("v1", "Endpoints", vec![m(1, vec![s(1, "x")])]);
        assert_eq!(
            translate_protobuf_body(&ctx(), None, Some("default"), &body)
                .unwrap_err()
                .http_code(),
            415
        );
        let body = envelope("v1", "PersistentVolumeClaim", vec![m(1, vec![s(1, "x")])]);
        assert_eq!(
            translate_protobuf_body(&ctx(), None, Some("default"), &body)
                .unwrap_err()
                .http_code(),
            415
        );
        assert_eq!(
            translate_protobuf_body(&ctx(), None, None, b"{\"kind\":1}")
                .unwrap_err()
                .http_code(),
            400
        );
        assert_eq!(
            translate_protobuf_body(&ctx(), None, None, b"k8s\x00\x0a\xff")
                .unwrap_err()
                .http_code(),
            400
        );
        let mut gz = MAGIC.to_vec();
        gz.extend(encode(&[
            m(1, vec![s(1, "v1"), s(2, "Namespace")]),
            m(2, vec![]),
            s(3, "gzip"),
        ]));
        assert_eq!(
            translate_protobuf_body(&ctx(), None, None, &gz)
                .unwrap_err()
                .http_code(),
            415
        );
    }

    #[test]
    fn protobuf_delete_options_pass() {
        let body = envelope("v1", "DeleteOptions", vec![s(4, "Foreground")]);
        assert_eq!(
            translate_protobuf_body(&ctx(), None, None, &body).unwrap(),
            body
        );
    }

    #[test]
    fn protobuf_tenant_label_refused() {
        let body = envelope(
            "v1",
            "ConfigMap",
            vec![m(1, vec![s(1, "c"), label("paddock.io/tenant", "barbar")])],
        );
        assert_eq!(
            translate_protobuf_body(&ctx(), None, Some("default"), &body)
                .unwrap_err()
                .http_code(),
            403
        );
    }
}

/// Reads the value of one label of a protobuf object body (ObjectMeta = field 1 of the object,
/// labels = field 11, map entries {1: key, 2: value}).
pub fn protobuf_label(body: &[u8], key: &str) -> Result<Option<String>, TranslateError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("missing k8s\\0 prefix"))?;
    let unknown = decode(rest)?;
    let Some(raw) = unknown.iter().rev().find(|x| x.num == 2) else {
        return Ok(None);
    };
    let obj = decode(as_bytes(raw)?)?;
    let Some(meta) = obj.iter().rev().find(|x| x.num == 1) else {
        return Ok(None);
    };
    for entry in decode(as_bytes(meta)?)?.iter().filter(|x| x.num == 11) {
        let kv = decode(as_bytes(entry)?)?;
        let k = kv
            .iter()
            .find(|x| x.num == 1)
            .map(as_str)
            .transpose()?
            .unwrap_or_default();
        if k == key {
            return Ok(Some(
                kv.iter()
                    .find(|x| x.num == 2)
                    .map(as_str)
                    .transpose()?
                    .unwrap_or_default(),
            ));
        }
    }
    Ok(None)
}

/// Sets one label of a protobuf object body, replacing an existing value; every other byte of
/// the object is kept. Used by the server to hold policy labels (pod security) at the
/// platform's level on bodies it cannot turn into JSON.
pub fn set_protobuf_label(body: &[u8], key: &str, value: &str) -> Result<Vec<u8>, TranslateError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("missing k8s\\0 prefix"))?;
    let mut unknown = decode(rest)?;
    let raw_idx = unknown
        .iter()
        .rposition(|x| x.num == 2)
        .ok_or_else(|| malformed("no raw object"))?;
    let mut obj = decode(as_bytes(&unknown[raw_idx])?)?;
    let meta_idx = match obj.iter().rposition(|x| x.num == 1) {
        Some(i) => i,
        None => {
            obj.insert(0, len_field(1, Vec::new()));
            0
        }
    };
    let mut meta = decode(as_bytes(&obj[meta_idx])?)?;
    let mut kept = Vec::with_capacity(meta.len() + 1);
    for f in meta.drain(..) {
        if f.num == 11 {
            let kv = decode(as_bytes(&f)?)?;
            let k = kv
                .iter()
                .find(|x| x.num == 1)
                .map(as_str)
                .transpose()?
                .unwrap_or_default();
            if k == key {
                continue;
            }
        }
        kept.push(f);
    }
    let entry = vec![
        len_field(1, key.as_bytes().to_vec()),
        len_field(2, value.as_bytes().to_vec()),
    ];
    kept.push(len_field(11, encode(&entry)));
    obj[meta_idx] = len_field(1, encode(&kept));
    unknown[raw_idx] = len_field(2, encode(&obj));
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&encode(&unknown));
    Ok(out)
}

#[cfg(test)]
mod label_tests {
    use super::*;

    #[test]
    fn set_protobuf_label_replaces_and_keeps_the_rest() {
        let meta = encode(&[
            len_field(1, b"ns1".to_vec()),
            len_field(
                11,
                encode(&[len_field(1, b"a".to_vec()), len_field(2, b"1".to_vec())]),
            ),
            len_field(
                11,
                encode(&[
                    len_field(1, b"psa".to_vec()),
                    len_field(2, b"privileged".to_vec()),
                ]),
            ),
        ]);
        let obj = encode(&[len_field(1, meta), len_field(2, Vec::new())]);
        let unknown = encode(&[
            len_field(
                1,
                encode(&[
                    len_field(1, b"v1".to_vec()),
                    len_field(2, b"Namespace".to_vec()),
                ]),
            ),
            len_field(2, obj),
        ]);
        let mut body = MAGIC.to_vec();
        body.extend_from_slice(&unknown);
        assert_eq!(
            protobuf_label(&body, "psa").unwrap().as_deref(),
            Some("privileged")
        );
        let out = set_protobuf_label(&body, "psa", "baseline").unwrap();
        assert_eq!(
            protobuf_label(&out, "psa").unwrap().as_deref(),
            Some("baseline")
        );
        assert_eq!(protobuf_label(&out, "a").unwrap().as_deref(), Some("1"));
        assert_eq!(
            envelope_type(&out).unwrap(),
            ("v1".to_string(), "Namespace".to_string())
        );
        let added = set_protobuf_label(&out, "new", "x").unwrap();
        assert_eq!(protobuf_label(&added, "new").unwrap().as_deref(), Some("x"));
    }
}
