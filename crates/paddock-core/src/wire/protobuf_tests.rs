//! Unit tests of the protobuf walker: hand-built wire bodies (envelope, unknown fields), and
//! every kind with rules, encoded and decoded with the real generated types (k8s-pb) in
//! `protobuf_kinds_tests.rs`.

use super::*;
use crate::wire::pb::{read_varint, write_varint};

use crate::catalog::context::tests::ctx;

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
    // No extra: the tenant id is not sent as one (no RBAC rule can name an extra; the
    // identity's groups already carry the tenant).
    assert!(spec.iter().all(|x| x.num != 5), "no extra in the review");
    let body = envelope(
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        vec![m(1, vec![]), m(2, vec![s(1, "default")])],
    );
    let out = translate_protobuf_body(&ctx(), None, None, &body).unwrap();
    assert_eq!(strs(&sub(&raw_of(&out), 2), 1), vec!["foofoo-default"]);
}

#[test]
fn protobuf_malformed_and_encoded_bodies_are_refused() {
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
    // A kind the catalog does not know is a bad request, as in JSON.
    let body = envelope(
        "other.example.org/v1",
        "Gadget",
        vec![m(1, vec![s(1, "x")])],
    );
    assert_eq!(
        translate_protobuf_body(&ctx(), None, Some("default"), &body)
            .unwrap_err()
            .http_code(),
        400
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

#[test]
fn protobuf_token_review_status() {
    use crate::rules::reviews::FOREIGN_TOKEN_ERROR;
    let varint = |num: u32, x: u64| Field {
        num,
        val: Wire::Varint(x),
    };
    let review = |user: &str| {
        envelope(
            "authentication.k8s.io/v1",
            "TokenReview",
            vec![
                m(1, vec![]),
                m(2, vec![s(1, "tok")]),
                m(
                    3,
                    vec![
                        varint(1, 1),
                        m(
                            2,
                            vec![
                                s(1, user),
                                s(2, "uid-1"),
                                s(3, "system:serviceaccounts"),
                                s(3, "system:serviceaccounts:foofoo-web"),
                            ],
                        ),
                        s(4, "api"),
                    ],
                ),
            ],
        )
    };
    let c = ctx();
    let own = protobuf_down(&c, None, &review("system:serviceaccount:foofoo-web:robot"))
        .unwrap()
        .expect("kept");
    let status = sub(&raw_of(&own), 3);
    assert!(
        status
            .iter()
            .any(|f| f.num == 1 && f.val == Wire::Varint(1))
    );
    let user = sub(&status, 2);
    assert_eq!(strs(&user, 1), vec!["system:serviceaccount:web:robot"]);
    assert_eq!(strs(&user, 2), vec!["uid-1"]);
    assert_eq!(
        strs(&user, 3),
        vec!["system:serviceaccounts", "system:serviceaccounts:web"]
    );
    assert_eq!(strs(&status, 4), vec!["api"]);
    let other = protobuf_down(&c, None, &review("system:serviceaccount:barbar-web:robot"))
        .unwrap()
        .expect("kept");
    let status = sub(&raw_of(&other), 3);
    assert!(status.iter().all(|f| f.num == 3), "{status:?}");
    assert_eq!(strs(&status, 3), vec![FOREIGN_TOKEN_ERROR]);
}
