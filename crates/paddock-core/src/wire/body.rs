//! Request body translation by content type. Bodies are at most 3 MiB (the apiserver's own
//! cap, enforced by the server too), so they are parsed whole and strictly.

use serde_json::Value;

use crate::catalog::ResourceInfo;
use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::request::{Plan, Verb};
use crate::rules::{UpMode, object_up_with};
use crate::wire::patch::translate_json_patch;
use crate::wire::protobuf::translate_protobuf_body;

/// The apiserver's request body cap (`MaxRequestBodyBytes`).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

pub const CT_JSON: &str = "application/json";
pub const CT_YAML: &str = "application/yaml";
pub const CT_APPLY_YAML: &str = "application/apply-patch+yaml";
pub const CT_MERGE_PATCH: &str = "application/merge-patch+json";
pub const CT_STRATEGIC_PATCH: &str = "application/strategic-merge-patch+json";
pub const CT_JSON_PATCH: &str = "application/json-patch+json";
pub const CT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The media type without parameters, lowercased.
pub fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn bad(m: impl Into<String>) -> TranslateError {
    TranslateError::BadRequest(m.into())
}

pub(crate) fn parse_json(body: &[u8]) -> Result<Value, TranslateError> {
    serde_json::from_slice(body).map_err(|e| bad(format!("malformed JSON request body: {e}")))
}

/// YAML (or JSON, which is YAML) -> JSON value.
pub(crate) fn parse_yaml(body: &[u8]) -> Result<Value, TranslateError> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    serde_norway::from_slice::<Value>(body)
        .map_err(|e| bad(format!("malformed YAML request body: {e}")))
}

fn to_vec(v: &Value) -> Result<Vec<u8>, TranslateError> {
    serde_json::to_vec(v).map_err(|e| TranslateError::Internal(e.to_string()))
}

/// The resource whose kind the body has: the URL's resource, or for subresources with their
/// own body kind (scale, eviction, token, binding) none (the body names its kind).
fn body_hint(plan: &Plan) -> Option<ResourceInfo> {
    let info = plan.resource.as_deref()?.clone();
    match plan.subresource() {
        None | Some("status" | "ephemeralcontainers" | "resize" | "finalize" | "approval") => {
            Some(info)
        }
        // Bodies of subresources with a kind of their own (scale, eviction, token): the
        // table's row (`kubectl scale` patches the scale subresource without a kind).
        Some(sub) => crate::rules::table::subresource_body(sub)
            .map(|row| crate::rules::object::body_kind_info(row, "v1")),
    }
}

/// Request body translation. `content_type` is the client's Content-Type (json, yaml apply
/// patch, json-patch, merge-patch, strategic-merge-patch, protobuf). Returns the upstream body
/// and the upstream Content-Type.
pub fn translate_request_body(
    ctx: &TenantContext,
    plan: &Plan,
    content_type: &str,
    body: &[u8],
) -> Result<(Vec<u8>, String), TranslateError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(TranslateError::TooLarge(format!(
            "request body of {} bytes exceeds the limit of {MAX_BODY_BYTES} bytes",
            body.len()
        )));
    }
    let verb = plan.request.verb;
    // exec/attach/portforward carry no body; a proxy body belongs to the backend.
    if verb == Verb::Connect || body.is_empty() {
        return Ok((body.to_vec(), content_type.to_owned()));
    }
    if plan.resource.is_none() {
        return Err(bad("this request takes no body"));
    }
    let mt = media_type(content_type);
    let hint = body_hint(plan);
    let ns = plan.namespace();
    let is_patch = verb == Verb::Patch;
    let deleting = matches!(verb, Verb::Delete | Verb::DeleteCollection);
    match mt.as_str() {
        CT_PROTOBUF if !is_patch => {
            let hint = if deleting { None } else { hint };
            if deleting && crate::wire::protobuf::envelope_type(body)?.1 != "DeleteOptions" {
                return Err(bad("a delete request body must be DeleteOptions"));
            }
            Ok((
                translate_protobuf_body(ctx, hint.as_ref(), ns, body)?,
                content_type.to_owned(),
            ))
        }
        CT_JSON | CT_YAML | "" if !is_patch => {
            let mut v = if mt == CT_YAML {
                parse_yaml(body)?
            } else {
                parse_json(body)?
            };
            if deleting {
                if v.get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k != "DeleteOptions")
                {
                    return Err(bad("a delete request body must be DeleteOptions"));
                }
                let mut v2 = v.clone();
                if let Value::Object(m) = &mut v2 {
                    m.entry("kind")
                        .or_insert_with(|| Value::String("DeleteOptions".into()));
                }
                object_up_with(ctx, &mut v2, None, ns, UpMode::Full)?;
                return Ok((body.to_vec(), content_type.to_owned()));
            }
            let parsed = (mt != CT_YAML && crate::wire::dupkeys::has_duplicate_keys(body))
                .then(|| v.clone());
            object_up_with(ctx, &mut v, hint.as_ref(), ns, UpMode::Full)?;
            // Duplicate keys are the apiserver's to report (fieldValidation): keep them.
            if let Some(before) = parsed
                && let Some(spliced) = crate::wire::dupkeys::splice_changes(body, &before, &v)
            {
                return Ok((spliced, CT_JSON.to_owned()));
            }
            Ok((to_vec(&v)?, CT_JSON.to_owned()))
        }
        CT_APPLY_YAML if is_patch => {
            let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok();
            let mut v = parse_yaml(body)?;
            let before = v.clone();
            object_up_with(ctx, &mut v, hint.as_ref(), ns, UpMode::Full)?;
            // The apiserver reports what is wrong with an apply body by line and key
            // (duplicates under fieldValidation): the original text keeps its lines.
            let spliced = if is_json {
                crate::wire::dupkeys::has_duplicate_keys(body)
                    .then(|| crate::wire::dupkeys::splice_changes(body, &before, &v))
                    .flatten()
            } else {
                super::yaml_splice::splice_yaml(body, &before, &v)
            };
            // JSON is YAML: the apiserver reads it under the same content type.
            Ok((
                spliced.map_or_else(|| to_vec(&v), Ok)?,
                CT_APPLY_YAML.to_owned(),
            ))
        }
        CT_MERGE_PATCH | CT_STRATEGIC_PATCH if is_patch => {
            let mut v = parse_json(body)?;
            let mode = if mt == CT_MERGE_PATCH {
                UpMode::MergePatch
            } else {
                UpMode::StrategicMerge
            };
            object_up_with(ctx, &mut v, hint.as_ref(), ns, mode)?;
            Ok((to_vec(&v)?, mt))
        }
        CT_JSON_PATCH if is_patch => Ok((
            translate_json_patch(ctx, hint.as_ref(), ns, body)?,
            CT_JSON_PATCH.to_owned(),
        )),
        _ => Err(TranslateError::UnsupportedMediaType(format!(
            "the body of a {} request cannot be {content_type:?} in this cluster",
            verb.as_str()
        ))),
    }
}

#[cfg(test)]
mod tests {

    use serde_json::json;

    use super::*;

    use crate::request::{parse_request, plan};

    use crate::catalog::context::tests::ctx;

    fn tb(
        method: &str,
        path: &str,
        ct: &str,
        body: &[u8],
    ) -> Result<(Value, String), TranslateError> {
        let c = ctx();
        let p = plan(&c, parse_request(method, path, None).unwrap()).unwrap();
        let (b, ct) = translate_request_body(&c, &p, ct, body)?;
        // YAML apply bodies stay YAML (wire::yaml_splice).
        let v = serde_json::from_slice(&b)
            .or_else(|_| serde_norway::from_slice(&b))
            .unwrap_or(Value::Null);
        Ok((v, ct))
    }

    #[test]
    fn json_create() {
        let (v, ct) = tb("POST", "/api/v1/namespaces/default/configmaps", "application/json", br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}"#).unwrap();
        assert_eq!(v["metadata"]["namespace"], "foofoo-default");
        assert_eq!(ct, "application/json");
        let e = tb(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "application/json",
            b"{not json",
        )
        .unwrap_err();
        assert_eq!(e.http_code(), 400);
        assert!(e.message().contains("malformed JSON"));
        let e = tb(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "application/cbor",
            b"\xa0",
        )
        .unwrap_err();
        assert_eq!(e.http_code(), 415);
    }

    #[test]
    fn yaml_create() {
        let (v, ct) = tb(
            "POST",
            "/api/v1/namespaces",
            "application/yaml",
            b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dev\n",
        )
        .unwrap();
        assert_eq!(v["metadata"]["name"], "foofoo-dev");
        assert_eq!(ct, "application/json");
    }

    #[test]
    fn apply_patch_yaml_and_json() {
        let (v, ct) = tb(
            "PATCH",
            "/api/v1/namespaces/dev",
            "application/apply-patch+yaml",
            b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dev\n  labels:\n    team: a\n",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"foofoo-dev","labels":{"team":"a","paddock.io/tenant":"foofoo"}}})
        );
        assert_eq!(ct, "application/apply-patch+yaml");
        // The YAML keeps its lines: `kind` is still on line 2.
        let c = ctx();
        let p = plan(
            &c,
            parse_request("PATCH", "/api/v1/namespaces/dev", None).unwrap(),
        )
        .unwrap();
        let (b, _) = translate_request_body(
            &c,
            &p,
            "application/apply-patch+yaml",
            b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: dev\n",
        )
        .unwrap();
        let text = String::from_utf8(b).unwrap();
        assert_eq!(text.lines().nth(1), Some("kind: Namespace"));
        assert_eq!(text.lines().count(), 4);
        let (v, _) = tb("PATCH", "/apis/apps/v1/namespaces/default/deployments/web", "application/apply-patch+yaml", br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"}}"#).unwrap();
        assert_eq!(v["metadata"]["namespace"], "foofoo-default");
        assert_eq!(
            tb(
                "PATCH",
                "/api/v1/namespaces/dev",
                "application/apply-patch+yaml",
                b"a: ["
            )
            .unwrap_err()
            .http_code(),
            400
        );
    }

    #[test]
    fn merge_and_strategic_patches() {
        let (v, ct) = tb(
            "PATCH",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/b",
            "application/merge-patch+json",
            br#"{"subjects":[{"kind":"Group","name":"dev"}]}"#,
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"subjects":[{"kind":"Group","name":"paddock:foofoo:dev"}]})
        );
        assert_eq!(ct, "application/merge-patch+json");
        let (v, ct) = tb(
            "PATCH",
            "/api/v1/namespaces/default/persistentvolumeclaims/data",
            "application/strategic-merge-patch+json; charset=utf-8",
            br#"{"spec":{"volumeName":"pv1"}}"#,
        )
        .unwrap();
        assert_eq!(v, json!({"spec":{"volumeName":"foofoo-pv1"}}));
        assert_eq!(ct, "application/strategic-merge-patch+json");
        // kubectl scale patches the scale subresource without a kind
        let (v, _) = tb(
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            "application/merge-patch+json",
            br#"{"spec":{"replicas":3}}"#,
        )
        .unwrap();
        assert_eq!(v, json!({"spec":{"replicas":3}}));
        // patch content types only on PATCH, and PATCH only with patch content types
        assert_eq!(
            tb(
                "PATCH",
                "/api/v1/namespaces/default/configmaps/c",
                "application/json",
                b"{}"
            )
            .unwrap_err()
            .http_code(),
            415
        );
        assert_eq!(
            tb(
                "PUT",
                "/api/v1/namespaces/default/configmaps/c",
                "application/merge-patch+json",
                b"{}"
            )
            .unwrap_err()
            .http_code(),
            415
        );
    }

    #[test]
    fn json_patch_body() {
        let (v, ct) = tb(
            "PATCH",
            "/api/v1/namespaces/dev",
            "application/json-patch+json",
            br#"[{"op":"test","path":"/metadata/name","value":"dev"}]"#,
        )
        .unwrap();
        assert_eq!(
            v,
            json!([{"op":"test","path":"/metadata/name","value":"foofoo-dev"}])
        );
        assert_eq!(ct, "application/json-patch+json");
    }

    #[test]
    fn subresource_bodies() {
        let (v, _) = tb("POST", "/api/v1/namespaces/default/pods/p/eviction", "application/json", br#"{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p","namespace":"default"}}"#).unwrap();
        assert_eq!(v["metadata"]["namespace"], "foofoo-default");
        let (v, _) = tb("PUT", "/api/v1/namespaces/dev/finalize", "application/json", br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dev"},"spec":{"finalizers":[]}}"#).unwrap();
        assert_eq!(v["metadata"]["name"], "foofoo-dev");
        let (v, _) = tb("PUT", "/apis/apps/v1/namespaces/default/deployments/web/status", "application/json", br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"}}"#).unwrap();
        assert_eq!(v["metadata"]["namespace"], "foofoo-default");
    }

    #[test]
    fn delete_options() {
        let body =
            br#"{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}"#;
        let c = ctx();
        let p = plan(
            &c,
            parse_request("DELETE", "/api/v1/namespaces/default/pods/p", None).unwrap(),
        )
        .unwrap();
        let (b, _) = translate_request_body(&c, &p, "application/json", body).unwrap();
        assert_eq!(b, body.to_vec());
        assert!(translate_request_body(&c, &p, "application/json", br#"{"kind":"Pod"}"#).is_err());
        let (b, _) = translate_request_body(&c, &p, "application/json", b"").unwrap();
        assert!(b.is_empty());
    }

    #[test]
    fn too_large() {
        let c = ctx();
        let p = plan(
            &c,
            parse_request("POST", "/api/v1/namespaces/default/configmaps", None).unwrap(),
        )
        .unwrap();
        let big = vec![b' '; MAX_BODY_BYTES + 1];
        assert_eq!(
            translate_request_body(&c, &p, "application/json", &big)
                .unwrap_err()
                .http_code(),
            413
        );
    }

    #[test]
    fn connect_bodies_pass() {
        let c = ctx();
        let p = plan(
            &c,
            parse_request(
                "POST",
                "/api/v1/namespaces/default/services/s/proxy/x",
                None,
            )
            .unwrap(),
        )
        .unwrap();
        let (b, ct) = translate_request_body(&c, &p, "text/plain", b"hello").unwrap();
        assert_eq!((b.as_slice(), ct.as_str()), (&b"hello"[..], "text/plain"));
    }
}
