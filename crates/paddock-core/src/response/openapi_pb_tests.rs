//! The encoding decoded with gnostic's own schema (testdata/OpenAPIv2.proto) by `protoc
//! --decode`, so a wrong field number, wire type or nesting shows up as a different text
//! rendering. Byte equality with kube-apiserver on a real document is checked end to end
//! (tests/e2e/tests/openapi_proto.rs).

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::json;

use super::*;

fn protoc_decode(bytes: &[u8]) -> Option<String> {
    let testdata = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let mut child = match Command::new("protoc")
        .args([
            "--decode=openapi.v2.Document",
            &format!("-I{testdata}"),
            "-I/usr/include",
            "OpenAPIv2.proto",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        // scripts/test.sh installs protoc (etcd-client's build needs it too); a bare
        // `cargo test` on a machine without it cannot decode, and says so.
        Err(e) => {
            eprintln!("protoc not available ({e}): decoding check skipped");
            return None;
        }
    };
    child.stdin.take()?.write_all(bytes).ok()?;
    let out = child.wait_with_output().ok()?;
    assert!(
        out.status.success(),
        "protoc could not decode: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn sample() -> serde_json::Value {
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.33.1"},
        "paths": {
            "/api/v1/namespaces/{namespace}/configmaps": {
                "get": {
                    "description": "list or watch objects of kind ConfigMap",
                    "consumes": ["*/*"],
                    "produces": ["application/json", "application/yaml"],
                    "schemes": ["https"],
                    "tags": ["core_v1"],
                    "operationId": "listCoreV1NamespacedConfigMap",
                    "responses": {
                        "200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMapList"}},
                        "401": {"description": "Unauthorized"}
                    },
                    "x-kubernetes-action": "list",
                    "x-kubernetes-group-version-kind": {"group": "", "kind": "ConfigMap", "version": "v1"}
                },
                "parameters": [
                    {"$ref": "#/parameters/namespace-vgWSWtn3"},
                    {"uniqueItems": true, "type": "string", "description": "If 'true', then", "name": "pretty", "in": "query"},
                    {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"}}
                ]
            },
            "/api/v1/namespaces/{namespace}/pods/{name}/log": {
                "get": {"produces": ["text/plain"], "responses": {"200": {"description": "OK", "schema": {"type": "string"}}}}
            }
        },
        "definitions": {
            "io.k8s.api.core.v1.ConfigMap": {
                "description": "ConfigMap holds configuration data.",
                "type": "object",
                "properties": {
                    "data": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                    "immutable": {"type": "boolean"},
                    "ports": {"type": "array", "items": {"type": "integer", "format": "int32"}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["containerPort", "protocol"]},
                    "open": {"type": "object", "additionalProperties": false, "minLength": 1, "maximum": 2.5}
                },
                "required": ["data"],
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}]
            }
        },
        "parameters": {
            "namespace-vgWSWtn3": {"uniqueItems": true, "type": "string", "description": "object name and auth scope", "name": "namespace", "in": "path", "required": true}
        },
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}]
    })
}

#[test]
fn decodes_with_gnostics_schema() {
    let bytes = openapi_v2_protobuf(sample().to_string().as_bytes()).expect("encodes");
    let Some(text) = protoc_decode(&bytes) else {
        return;
    };
    for expected in [
        "swagger: \"2.0\"",
        "title: \"Kubernetes\"",
        "name: \"/api/v1/namespaces/{namespace}/configmaps\"",
        "operation_id: \"listCoreV1NamespacedConfigMap\"",
        "response_code {\n",
        "_ref: \"#/definitions/io.k8s.api.core.v1.ConfigMapList\"",
        "name: \"x-kubernetes-action\"\n",
        "yaml: \"list\\n\"",
        "yaml: \"group: \\\"\\\"\\nkind: ConfigMap\\nversion: v1\\n\"",
        "yaml: \"- group: \\\"\\\"\\n  kind: ConfigMap\\n  version: v1\\n\"",
        "yaml: \"- containerPort\\n- protocol\\n\"",
        "json_reference {\n",
        "_ref: \"#/parameters/namespace-vgWSWtn3\"",
        "query_parameter_sub_schema {\n",
        "unique_items: true",
        "body_parameter {\n",
        "path_parameter_sub_schema {\n",
        "boolean: false",
        "min_length: 1",
        "maximum: 2.5",
        "value: \"object\"",
        "api_key_security {\n",
        "security {\n",
        "yaml: \"\\\"\\\"\\n\"",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    // A response schema of type string is a Schema, only `type: file` is a FileSchema.
    assert!(!text.contains("file_schema"), "{text}");
}

#[test]
fn accept_negotiation_follows_kube_openapi() {
    let pb = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    assert!(wants_openapi_v2_protobuf(Some(pb)));
    assert!(wants_openapi_v2_protobuf(Some(
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    )));
    assert!(wants_openapi_v2_protobuf(Some(&format!(
        "{pb}, application/json;q=0.9"
    ))));
    assert!(!wants_openapi_v2_protobuf(Some(&format!(
        "application/json, {pb}"
    ))));
    assert!(!wants_openapi_v2_protobuf(Some(&format!(
        "{pb};q=0.5, application/json"
    ))));
    assert!(!wants_openapi_v2_protobuf(Some("*/*")));
    assert!(!wants_openapi_v2_protobuf(None));
    assert!(!wants_openapi_v2_protobuf(Some("application/json")));
}

#[test]
fn yaml_scalars_as_yaml_v3_writes_them() {
    for (v, y) in [
        (json!("list"), "list\n"),
        (json!(""), "\"\"\n"),
        (json!("true"), "\"true\"\n"),
        (json!("1.5"), "\"1.5\"\n"),
        (json!("0x1F"), "\"0x1F\"\n"),
        (json!("v1"), "v1\n"),
        (json!("a: b"), "'a: b'\n"),
        (json!("*"), "'*'\n"),
        (json!(true), "true\n"),
        (json!(3), "3\n"),
        (json!(null), "null\n"),
        (json!({}), "{}\n"),
        (json!([]), "[]\n"),
        (
            json!({"a": {"b": ["c", {"d": 1, "e": 2}]}}),
            "a:\n    b:\n        - c\n        - d: 1\n          e: 2\n",
        ),
        // A mapping's children are indented from the dash of the item it starts on (seen in
        // the apiserver's x-kubernetes-unions).
        (
            json!([{"discriminator": "type", "fields-to-discriminateBy": {"a": "A"}}]),
            "- discriminator: type\n  fields-to-discriminateBy:\n    a: A\n",
        ),
    ] {
        assert_eq!(yaml_text(&v), y, "{v}");
    }
}

#[test]
fn yaml_text_reads_back_as_the_same_value() {
    for v in [
        json!({"rule": "self.x == 'a: b' && size(self.y) < 10 # not a comment", "message": "a long message with spaces that would be folded by yaml.v3 at column eighty, surely"}),
        json!([
            "multi\nline",
            " lead",
            "trail ",
            "- dash",
            "#hash",
            "it's",
            "ünïcode"
        ]),
        json!({"k: colon": {"nested": [[1, 2], []]}}),
    ] {
        let back: serde_json::Value = serde_norway::from_str(&yaml_text(&v)).expect("valid YAML");
        assert_eq!(back, v, "{}", yaml_text(&v));
    }
}

#[test]
fn not_a_document_is_an_upstream_error() {
    assert!(openapi_v2_protobuf(b"[1]").is_err());
    assert!(openapi_v2_protobuf(b"{").is_err());
}
