//! FlowSchemas and PriorityLevelConfigurations as protobuf bodies (the e2e framework's
//! client-go sends protobuf), built and read with the real generated types (k8s-pb).

use k8s_pb::api::flowcontrol::v1 as fc;
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;

use super::*;
use crate::catalog::context::tests::ctx;
use crate::rules::SHARES_ANNOTATION;

const AV: &str = "flowcontrol.apiserver.k8s.io/v1";

fn wrap<M: Message>(kind: &str, obj: &M) -> Vec<u8> {
    let u = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(AV.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(obj.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(u.encode_to_vec());
    out
}

fn unwrap<M: Message + Default>(body: &[u8]) -> M {
    let u = Unknown::decode(&body[4..]).unwrap();
    M::decode(u.raw.unwrap_or_default().as_slice()).unwrap()
}

fn meta(name: &str) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    })
}

#[test]
fn priority_level_shares_move_into_the_annotation_and_back() {
    let pl = fc::PriorityLevelConfiguration {
        metadata: meta("pl"),
        spec: Some(fc::PriorityLevelConfigurationSpec {
            r#type: Some("Limited".into()),
            limited: Some(fc::LimitedPriorityLevelConfiguration {
                nominal_concurrency_shares: Some(2),
                lendable_percent: Some(10),
                limit_response: Some(fc::LimitResponse {
                    r#type: Some("Reject".into()),
                    queuing: None,
                }),
                borrowing_limit_percent: None,
            }),
            exempt: None,
        }),
        status: None,
    };
    let c = ctx();
    let up =
        translate_protobuf_body(&c, None, None, &wrap("PriorityLevelConfiguration", &pl)).unwrap();
    let upstream: fc::PriorityLevelConfiguration = unwrap(&up);
    let m = upstream.metadata.clone().unwrap();
    assert_eq!(m.name.as_deref(), Some("foofoo-pl"));
    assert_eq!(
        m.annotations.get(SHARES_ANNOTATION).map(String::as_str),
        Some("2")
    );
    let l = upstream.spec.clone().unwrap().limited.unwrap();
    assert_eq!(l.nominal_concurrency_shares, Some(0));
    assert_eq!(l.lendable_percent, Some(10));
    let down = protobuf_down(&c, None, &up).unwrap().expect("kept");
    let back: fc::PriorityLevelConfiguration = unwrap(&down);
    assert_eq!(back, pl);

    let exempt = fc::PriorityLevelConfiguration {
        metadata: meta("pl"),
        spec: Some(fc::PriorityLevelConfigurationSpec {
            r#type: Some("Exempt".into()),
            ..Default::default()
        }),
        status: None,
    };
    let e = translate_protobuf_body(&c, None, None, &wrap("PriorityLevelConfiguration", &exempt))
        .unwrap_err();
    assert_eq!(e.http_code(), 403);
}

#[test]
fn flow_schema_subjects_and_level_are_confined() {
    let fs = fc::FlowSchema {
        metadata: meta("fs"),
        spec: Some(fc::FlowSchemaSpec {
            priority_level_configuration: Some(fc::PriorityLevelConfigurationReference {
                name: Some("global-default".into()),
            }),
            matching_precedence: Some(10000),
            distinguisher_method: None,
            rules: vec![fc::PolicyRulesWithSubjects {
                subjects: vec![
                    fc::Subject {
                        kind: Some("User".into()),
                        user: Some(fc::UserSubject {
                            name: Some("alice".into()),
                        }),
                        ..Default::default()
                    },
                    fc::Subject {
                        kind: Some("Group".into()),
                        group: Some(fc::GroupSubject {
                            name: Some("system:authenticated".into()),
                        }),
                        ..Default::default()
                    },
                    fc::Subject {
                        kind: Some("ServiceAccount".into()),
                        service_account: Some(fc::ServiceAccountSubject {
                            namespace: Some("ci".into()),
                            name: Some("*".into()),
                        }),
                        ..Default::default()
                    },
                ],
                resource_rules: vec![fc::ResourcePolicyRule {
                    verbs: vec!["*".into()],
                    namespaces: vec!["web".into(), "*".into()],
                    ..Default::default()
                }],
                non_resource_rules: vec![],
            }],
        }),
        status: None,
    };
    let c = ctx();
    let up = translate_protobuf_body(&c, None, None, &wrap("FlowSchema", &fs)).unwrap();
    let u: fc::FlowSchema = unwrap(&up);
    let spec = u.spec.unwrap();
    assert_eq!(
        spec.priority_level_configuration.unwrap().name.as_deref(),
        Some("foofoo-global-default")
    );
    assert_eq!(spec.matching_precedence, Some(10000));
    let s = &spec.rules[0].subjects;
    assert_eq!(
        s[0].user.as_ref().unwrap().name.as_deref(),
        Some("paddock:foofoo:alice")
    );
    assert_eq!(
        s[1].group.as_ref().unwrap().name.as_deref(),
        Some("paddock:tenant:foofoo")
    );
    assert_eq!(
        s[2].service_account.as_ref().unwrap().namespace.as_deref(),
        Some("foofoo-ci")
    );
    assert_eq!(
        spec.rules[0].resource_rules[0].namespaces,
        vec!["foofoo-web", "*"]
    );
    let down = protobuf_down(&c, None, &up).unwrap().expect("kept");
    let back: fc::FlowSchema = unwrap(&down);
    assert_eq!(back, fs);
}
