//! JSON patch (RFC 6902) translation. Patches are forwarded as patches, never applied
//! locally: each operation's value is translated by the same object rules, applied to a
//! skeleton document that holds just that value at that path, and read back.

use serde_json::{Map, Value};

use crate::catalog::ResourceInfo;
use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::rules::{UpMode, object_up_with};
use crate::tenant::TENANT_LABEL;

fn bad(m: impl Into<String>) -> TranslateError {
    TranslateError::BadRequest(m.into())
}

/// RFC 6901 pointer -> unescaped segments.
pub fn parse_pointer(p: &str) -> Result<Vec<String>, TranslateError> {
    if p.is_empty() {
        return Ok(Vec::new());
    }
    let rest = p
        .strip_prefix('/')
        .ok_or_else(|| bad(format!("json-patch path {p:?} must start with /")))?;
    Ok(rest
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn is_index(s: &str) -> bool {
    s == "-" || (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

/// Paths that may not be touched at all, or only replaced as a whole.
fn check_path(
    segs: &[String],
    info: Option<&ResourceInfo>,
    op: &str,
) -> Result<(), TranslateError> {
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    if s.len() >= 3 && s[0] == "metadata" && s[1] == "labels" && s[2] == TENANT_LABEL {
        return Err(TranslateError::forbidden(format!(
            "label {TENANT_LABEL} is reserved"
        )));
    }
    // Inside a selector paddock confines (namespaceSelector, aggregation selectors), an
    // operation addressed by index could replace or remove the tenant term; replace the
    // whole selector instead (its value gets the term).
    let confined = crate::rules::table::confined_selector_fields();
    for (i, seg) in s.iter().enumerate() {
        let deeper = confined
            .iter()
            .any(|(name, depth)| name == seg && s.len() > i + depth);
        if deeper && op != "test" {
            return Err(TranslateError::invalid(format!(
                "json-patch inside {seg} is not supported in this cluster; replace the whole selector"
            )));
        }
    }
    if op != "test"
        && let Some(i) = info
        && crate::rules::flowcontrol::json_patch_reaches_shares(&i.upstream_group, &i.resource, &s)
    {
        return Err(TranslateError::invalid(
            "json-patch of spec.limited.nominalConcurrencyShares is not supported in this cluster; use a merge patch or an update",
        ));
    }
    if op == "remove" || op == "move" {
        let stamped = info.is_some_and(ResourceInfo::stamps_label);
        if s.is_empty() {
            return Err(TranslateError::invalid(
                "json-patch cannot remove the whole object",
            ));
        }
        if stamped && (s == ["metadata"] || s == ["metadata", "labels"]) {
            return Err(TranslateError::invalid(format!(
                "metadata.labels cannot be removed as a whole on this kind (it carries {TENANT_LABEL})"
            )));
        }
        if crate::rules::table::is_forced_field(&s) {
            return Err(TranslateError::forbidden(format!(
                "{} cannot be removed in this cluster",
                s.join("/")
            )));
        }
    }
    Ok(())
}

/// Where json-patch `move` and `copy` may operate: fields no rule translates. Moving a value
/// into a translated field would skip translation.
fn free_text_path(segs: &[String]) -> bool {
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    matches!(
        s.as_slice(),
        ["metadata", "annotations", _, ..] | ["data" | "binaryData" | "stringData", _, ..]
    )
}

/// Builds `{seg0: {seg1: ... value}}`; numeric segments become one-element arrays.
fn skeleton(segs: &[String], value: Value) -> Value {
    segs.iter().rev().fold(value, |v, seg| {
        if is_index(seg) {
            Value::Array(vec![v])
        } else {
            let mut m = Map::new();
            m.insert(seg.clone(), v);
            Value::Object(m)
        }
    })
}

fn extract(doc: Value, segs: &[String]) -> Result<Value, TranslateError> {
    let mut cur = doc;
    for seg in segs {
        cur = match cur {
            Value::Array(mut a) if is_index(seg) && !a.is_empty() => a.swap_remove(0),
            Value::Object(mut m) => m.remove(seg.as_str()).unwrap_or(Value::Null),
            _ => {
                return Err(TranslateError::Internal(format!(
                    "json-patch skeleton lost {seg}"
                )));
            }
        };
    }
    Ok(cur)
}

/// Translates one value that will be placed at `segs` in an object of kind `info`.
pub fn translate_value_at(
    ctx: &TenantContext,
    info: Option<&ResourceInfo>,
    path_namespace: Option<&str>,
    segs: &[String],
    value: Value,
) -> Result<Value, TranslateError> {
    let mut doc = skeleton(segs, value);
    if !doc.is_object() {
        return Err(bad(
            "json-patch value for the whole document must be an object",
        ));
    }
    // Full mode: the skeleton holds exactly the fields the operation writes; anything the
    // rules add elsewhere in the skeleton is discarded by `extract`, and anything they add
    // inside the written value (the tenant label in a replaced label map, the tenant term in
    // a replaced selector) is what keeps the confinement.
    object_up_with(ctx, &mut doc, info, path_namespace, UpMode::Full)?;
    extract(doc, segs)
}

/// Translates an `application/json-patch+json` body.
pub fn translate_json_patch(
    ctx: &TenantContext,
    info: Option<&ResourceInfo>,
    path_namespace: Option<&str>,
    body: &[u8],
) -> Result<Vec<u8>, TranslateError> {
    let mut ops: Value =
        serde_json::from_slice(body).map_err(|e| bad(format!("malformed json-patch: {e}")))?;
    let Value::Array(list) = &mut ops else {
        return Err(bad("json-patch must be an array of operations"));
    };
    for op in list.iter_mut() {
        let Value::Object(o) = op else {
            return Err(bad("json-patch operations must be objects"));
        };
        let kind = o
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("json-patch operation without op"))?
            .to_owned();
        let path = o
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("json-patch operation without path"))?;
        let segs = parse_pointer(path)?;
        check_path(&segs, info, &kind)?;
        match kind.as_str() {
            "add" | "replace" | "test" => {
                let v = o
                    .remove("value")
                    .ok_or_else(|| bad(format!("json-patch {kind} without value")))?;
                let t = translate_value_at(ctx, info, path_namespace, &segs, v)?;
                o.insert("value".into(), t);
            }
            "remove" => {}
            "move" | "copy" => {
                let from = o
                    .get("from")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad(format!("json-patch {kind} without from")))?;
                let from = parse_pointer(from)?;
                check_path(&from, info, if kind == "move" { "remove" } else { "test" })?;
                if !(free_text_path(&segs) && free_text_path(&from)) {
                    return Err(TranslateError::invalid(format!(
                        "json-patch {kind} is only supported between annotations and data keys in this cluster"
                    )));
                }
            }
            other => return Err(bad(format!("unknown json-patch op {other:?}"))),
        }
    }
    serde_json::to_vec(&ops).map_err(|e| TranslateError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {

    use serde_json::json;

    use super::*;

    use crate::catalog::context::tests::ctx;

    fn info(g: &str, r: &str) -> ResourceInfo {
        let c = ctx();
        c.catalog.resolve(&c.tenant, g, "v1", r).unwrap()
    }

    fn tp(g: &str, r: &str, ops: Value) -> Result<Value, TranslateError> {
        let i = info(g, r);
        let out = translate_json_patch(
            &ctx(),
            Some(&i),
            Some("default"),
            &serde_json::to_vec(&ops).unwrap(),
        )?;
        Ok(serde_json::from_slice(&out).unwrap())
    }

    #[test]
    fn json_patch_paths_and_values() {
        assert_eq!(
            tp("", "pods", json!([{"op":"test","path":"/metadata/namespace","value":"default"},{"op":"replace","path":"/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/0/namespaces","value":["a"]}])).unwrap(),
            json!([{"op":"test","path":"/metadata/namespace","value":"foofoo-default"},{"op":"replace","path":"/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/0/namespaces","value":["foofoo-a"]}])
        );
        assert_eq!(
            tp(
                "",
                "namespaces",
                json!([{"op":"test","path":"/metadata/name","value":"dev"}])
            )
            .unwrap(),
            json!([{"op":"test","path":"/metadata/name","value":"foofoo-dev"}])
        );
        assert_eq!(
            tp("rbac.authorization.k8s.io", "rolebindings", json!([{"op":"add","path":"/subjects/-","value":{"kind":"User","name":"bob"}},{"op":"replace","path":"/subjects/0/namespace","value":"ci"}])).unwrap(),
            json!([{"op":"add","path":"/subjects/-","value":{"kind":"User","name":"paddock:foofoo:bob"}},{"op":"replace","path":"/subjects/0/namespace","value":"foofoo-ci"}])
        );
        assert_eq!(
            tp("rbac.authorization.k8s.io", "clusterrolebindings", json!([{"op":"test","path":"/roleRef","value":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}}])).unwrap(),
            json!([{"op":"test","path":"/roleRef","value":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"foofoo-view"}}])
        );
        // /roleRef/name alone does not say which kind of role it names (and roleRef is immutable)
        assert!(
            tp(
                "rbac.authorization.k8s.io",
                "rolebindings",
                json!([{"op":"test","path":"/roleRef/name","value":"x"}])
            )
            .is_err()
        );
        // labels: the reserved key, and a replaced label map keeps the stamp
        assert_eq!(
            tp(
                "",
                "namespaces",
                json!([{"op":"add","path":"/metadata/labels/paddock.io~1tenant","value":"x"}])
            )
            .unwrap_err()
            .http_code(),
            403
        );
        assert_eq!(
            tp(
                "",
                "configmaps",
                json!([{"op":"remove","path":"/metadata/labels/paddock.io~1tenant"}])
            )
            .unwrap_err()
            .http_code(),
            403
        );
        assert_eq!(
            tp(
                "",
                "namespaces",
                json!([{"op":"replace","path":"/metadata/labels","value":{"a":"b"}}])
            )
            .unwrap(),
            json!([{"op":"replace","path":"/metadata/labels","value":{"a":"b","paddock.io/tenant":"foofoo"}}])
        );
        assert_eq!(
            tp("", "namespaces", json!([{"op":"add","path":"/metadata/labels/kubernetes.io~1metadata.name","value":"dev"}])).unwrap(),
            json!([{"op":"add","path":"/metadata/labels/kubernetes.io~1metadata.name","value":"foofoo-dev"}])
        );
        assert!(
            tp(
                "",
                "namespaces",
                json!([{"op":"remove","path":"/metadata/labels"}])
            )
            .is_err()
        );
        // labels on namespaced kinds can be removed
        assert!(
            tp(
                "",
                "configmaps",
                json!([{"op":"remove","path":"/metadata/labels"}])
            )
            .is_ok()
        );
        // plain fields pass
        assert_eq!(
            tp(
                "apps",
                "deployments",
                json!([{"op":"replace","path":"/spec/replicas","value":3}])
            )
            .unwrap(),
            json!([{"op":"replace","path":"/spec/replicas","value":3}])
        );
        // ownerReferences must be whole
        assert!(
            tp(
                "",
                "configmaps",
                json!([{"op":"replace","path":"/metadata/ownerReferences/0/name","value":"x"}])
            )
            .is_err()
        );
        let v = tp("", "configmaps", json!([{"op":"add","path":"/metadata/ownerReferences/-","value":{"apiVersion":"v1","kind":"Namespace","name":"dev","uid":"u"}}])).unwrap();
        assert_eq!(v[0]["value"]["name"], "foofoo-dev");
    }

    #[test]
    fn json_patch_selectors_and_webhooks() {
        let v = tp(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            json!([{"op":"replace","path":"/webhooks/0/namespaceSelector","value":{}}]),
        )
        .unwrap();
        assert_eq!(
            v[0]["value"],
            json!({"matchExpressions":[{"key":"paddock.io/tenant","operator":"In","values":["foofoo"]}]})
        );
        assert!(
            tp(
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
                json!([{"op":"remove","path":"/webhooks/0/namespaceSelector/matchExpressions/0"}])
            )
            .is_err()
        );
        assert!(
            tp(
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
                json!([{"op":"remove","path":"/webhooks/0/namespaceSelector"}])
            )
            .is_err()
        );
        assert!(
            tp(
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
                json!([{"op":"replace","path":"/webhooks/0/clientConfig/url","value":"https://x"}])
            )
            .is_err()
        );
        let v = tp("admissionregistration.k8s.io", "validatingwebhookconfigurations", json!([{"op":"add","path":"/webhooks/-","value":{"name":"a","clientConfig":{"service":{"namespace":"h","name":"s"}}}}])).unwrap();
        assert_eq!(
            v[0]["value"]["clientConfig"]["service"]["namespace"],
            "foofoo-h"
        );
        assert!(v[0]["value"]["namespaceSelector"].is_object());
        // a timeout change leaves the selector alone
        let v = tp(
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            json!([{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":5}]),
        )
        .unwrap();
        assert_eq!(
            v,
            json!([{"op":"replace","path":"/webhooks/0/timeoutSeconds","value":5}])
        );
        assert!(tp("networking.k8s.io", "networkpolicies", json!([{"op":"replace","path":"/spec/ingress/0/from/0/namespaceSelector/matchLabels","value":{}}])).is_err());
        let v = tp(
            "networking.k8s.io",
            "networkpolicies",
            json!([{"op":"replace","path":"/spec/ingress/0/from/0/namespaceSelector","value":{}}]),
        )
        .unwrap();
        assert_eq!(
            v[0]["value"]["matchExpressions"][0]["key"],
            "paddock.io/tenant"
        );
    }

    #[test]
    fn json_patch_move_copy_and_malformed() {
        assert!(
            tp(
                "",
                "configmaps",
                json!([{"op":"copy","from":"/data/a","path":"/data/b"}])
            )
            .is_ok()
        );
        assert!(tp("", "configmaps", json!([{"op":"move","from":"/metadata/annotations/a","path":"/metadata/annotations/b"}])).is_ok());
        assert_eq!(
            tp(
                "",
                "configmaps",
                json!([{"op":"copy","from":"/metadata/annotations/a","path":"/metadata/namespace"}])
            )
            .unwrap_err()
            .http_code(),
            422
        );
        assert_eq!(
            tp("", "configmaps", json!([{"op":"frobnicate","path":"/x"}]))
                .unwrap_err()
                .http_code(),
            400
        );
        assert_eq!(
            tp("", "configmaps", json!({"op":"add"}))
                .unwrap_err()
                .http_code(),
            400
        );
        assert_eq!(
            tp("", "configmaps", json!([{"op":"add","path":"x","value":1}]))
                .unwrap_err()
                .http_code(),
            400
        );
        assert_eq!(
            tp("", "configmaps", json!([{"op":"add","path":"/x"}]))
                .unwrap_err()
                .http_code(),
            400
        );
        assert!(tp("", "configmaps", json!([{"op":"remove","path":""}])).is_err());
        let i = info("", "configmaps");
        assert_eq!(
            translate_json_patch(&ctx(), Some(&i), None, b"[{")
                .unwrap_err()
                .http_code(),
            400
        );
    }

    #[test]
    fn json_patch_whole_document() {
        let v = tp("", "configmaps", json!([{"op":"replace","path":"","value":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}}])).unwrap();
        assert_eq!(v[0]["value"]["metadata"]["namespace"], "foofoo-default");
    }

    #[test]
    fn pointer_unescaping() {
        assert_eq!(parse_pointer("/a~1b/c~0d").unwrap(), vec!["a/b", "c~d"]);
        assert_eq!(parse_pointer("").unwrap(), Vec::<String>::new());
    }
}
