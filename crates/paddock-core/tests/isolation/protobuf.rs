//! Protobuf bodies (what client-go sends for typed writes): generated objects of every kind
//! with naming fields, built with the real generated types (k8s-pb), whose namespace and
//! identity fields hold hostile values, are driven through `parse_request` -> `plan` ->
//! `translate_request_body` as the server does. The oracle decodes the upstream body without
//! any schema (every length-delimited field read both as a string and as a message) and fails
//! if a hostile value survives as it was, if another tenant's identity or a reserved group
//! appears, or if a namespace selector lacks the tenant term. It knows nothing of the table.

use std::collections::BTreeMap;

use k8s_pb::api::admissionregistration::v1 as adm;
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::discovery::v1 as discovery;
use k8s_pb::api::events::v1 as events;
use k8s_pb::api::networking::v1 as net;
use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use paddock_core::{parse_request, plan, translate_request_body};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use prost::Message;

use super::ctx;

const PB: &str = "application/vnd.kubernetes.protobuf";

/// Namespace names a hostile tenant would write into reference fields.
fn hostile_ns() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("kube-system".to_owned()),
        Just("barbar-web".to_owned()),
        Just("default".to_owned()),
        "zq[a-z]{2,6}",
    ]
}

fn hostile_identity() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("system:masters".to_owned()),
        Just("paddock:barbar:bob".to_owned()),
        Just("paddock:tenant:barbar".to_owned()),
        Just("system:serviceaccount:kube-system:default".to_owned()),
        "zq[a-z]{2,6}",
    ]
}

fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

fn meta(name: &str, ns: Option<&str>) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: s(name),
        namespace: ns.map(str::to_owned),
        ..Default::default()
    })
}

fn objref(ns: &str) -> Option<core::ObjectReference> {
    Some(core::ObjectReference {
        kind: s("Pod"),
        namespace: s(ns),
        name: s("p"),
        api_version: s("v1"),
        ..Default::default()
    })
}

fn ns_selector(ns: &str) -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: BTreeMap::from([("kubernetes.io/metadata.name".into(), ns.into())]),
        match_expressions: Vec::new(),
    })
}

fn pod_spec(h: &str) -> Option<core::PodSpec> {
    let term = core::PodAffinityTerm {
        namespaces: vec![h.into()],
        namespace_selector: ns_selector(h),
        topology_key: s("k"),
        ..Default::default()
    };
    Some(core::PodSpec {
        containers: vec![core::Container {
            name: s("c"),
            image: s("i"),
            ..Default::default()
        }],
        affinity: Some(core::Affinity {
            pod_anti_affinity: Some(core::PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: vec![
                    core::WeightedPodAffinityTerm {
                        weight: Some(1),
                        pod_affinity_term: Some(term.clone()),
                    },
                ],
                required_during_scheduling_ignored_during_execution: vec![term],
            }),
            ..Default::default()
        }),
        volumes: vec![core::Volume {
            name: s("v"),
            volume_source: Some(core::VolumeSource {
                ephemeral: Some(core::EphemeralVolumeSource {
                    volume_claim_template: Some(core::PersistentVolumeClaimTemplate {
                        metadata: None,
                        spec: claim(h),
                    }),
                }),
                ..Default::default()
            }),
        }],
        ..Default::default()
    })
}

fn claim(h: &str) -> Option<core::PersistentVolumeClaimSpec> {
    Some(core::PersistentVolumeClaimSpec {
        volume_name: s(h),
        data_source_ref: Some(core::TypedObjectReference {
            kind: s("PersistentVolumeClaim"),
            name: s("src"),
            namespace: s(h),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn wrap<M: Message>(av: &str, kind: &str, obj: &M) -> Vec<u8> {
    let u = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s(av),
            kind: s(kind),
        }),
        raw: Some(obj.encode_to_vec()),
        content_encoding: s(""),
        content_type: s(""),
    };
    let mut out = b"k8s\x00".to_vec();
    out.extend(u.encode_to_vec());
    out
}

/// (path, body, whether the body holds a namespace selector).
fn build(kind: usize, ns: Option<&str>, h: &str, ident: &str) -> (String, Vec<u8>, bool) {
    let n = ns.unwrap_or("web");
    let at = |g: &str, r: &str| format!("{g}/namespaces/{n}/{r}");
    let subject = |k: &str| rbac::Subject {
        kind: s(k),
        name: s(if k == "ServiceAccount" { "ci" } else { ident }),
        namespace: (k == "ServiceAccount").then(|| h.to_owned()),
        api_group: (k != "ServiceAccount").then(|| "rbac.authorization.k8s.io".to_owned()),
    };
    match kind {
        0 => {
            let o = core::Pod {
                metadata: meta("p", ns),
                spec: pod_spec(h),
                ..Default::default()
            };
            (at("/api/v1", "pods"), wrap("v1", "Pod", &o), true)
        }
        1 => {
            let o = apps::Deployment {
                metadata: meta("d", ns),
                spec: Some(apps::DeploymentSpec {
                    template: Some(core::PodTemplateSpec {
                        metadata: None,
                        spec: pod_spec(h),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            };
            (
                at("/apis/apps/v1", "deployments"),
                wrap("apps/v1", "Deployment", &o),
                true,
            )
        }
        2 => {
            let o = apps::StatefulSet {
                metadata: meta("ss", ns),
                spec: Some(apps::StatefulSetSpec {
                    template: Some(core::PodTemplateSpec {
                        metadata: None,
                        spec: pod_spec(h),
                    }),
                    volume_claim_templates: vec![core::PersistentVolumeClaim {
                        metadata: meta("data", None),
                        spec: claim(h),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            };
            (
                at("/apis/apps/v1", "statefulsets"),
                wrap("apps/v1", "StatefulSet", &o),
                true,
            )
        }
        3 => {
            let o = core::Event {
                metadata: meta("e", ns),
                involved_object: objref(h),
                related: objref(h),
                ..Default::default()
            };
            (at("/api/v1", "events"), wrap("v1", "Event", &o), false)
        }
        4 => {
            let o = events::Event {
                metadata: meta("e", ns),
                regarding: objref(h),
                related: objref(h),
                ..Default::default()
            };
            (
                at("/apis/events.k8s.io/v1", "events"),
                wrap("events.k8s.io/v1", "Event", &o),
                false,
            )
        }
        5 => {
            let o = core::Endpoints {
                metadata: meta("svc", ns),
                subsets: vec![core::EndpointSubset {
                    addresses: vec![core::EndpointAddress {
                        ip: s("10.0.0.1"),
                        target_ref: objref(h),
                        ..Default::default()
                    }],
                    not_ready_addresses: vec![core::EndpointAddress {
                        ip: s("10.0.0.2"),
                        target_ref: objref(h),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
            };
            (
                at("/api/v1", "endpoints"),
                wrap("v1", "Endpoints", &o),
                false,
            )
        }
        6 => {
            let o = discovery::EndpointSlice {
                metadata: meta("svc-1", ns),
                address_type: s("IPv4"),
                endpoints: vec![discovery::Endpoint {
                    addresses: vec!["10.0.0.1".into()],
                    target_ref: objref(h),
                    ..Default::default()
                }],
                ..Default::default()
            };
            (
                at("/apis/discovery.k8s.io/v1", "endpointslices"),
                wrap("discovery.k8s.io/v1", "EndpointSlice", &o),
                false,
            )
        }
        7 => {
            let peer = net::NetworkPolicyPeer {
                namespace_selector: ns_selector(h),
                ..Default::default()
            };
            let o = net::NetworkPolicy {
                metadata: meta("np", ns),
                spec: Some(net::NetworkPolicySpec {
                    ingress: vec![net::NetworkPolicyIngressRule {
                        from: vec![peer.clone()],
                        ..Default::default()
                    }],
                    egress: vec![net::NetworkPolicyEgressRule {
                        to: vec![peer],
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            };
            (
                at("/apis/networking.k8s.io/v1", "networkpolicies"),
                wrap("networking.k8s.io/v1", "NetworkPolicy", &o),
                true,
            )
        }
        8 => {
            let o = core::PersistentVolumeClaim {
                metadata: meta("c", ns),
                spec: claim(h),
                ..Default::default()
            };
            (
                at("/api/v1", "persistentvolumeclaims"),
                wrap("v1", "PersistentVolumeClaim", &o),
                false,
            )
        }
        9 => {
            let secret = Some(core::SecretReference {
                name: s("creds"),
                namespace: s(h),
            });
            let o = core::PersistentVolume {
                metadata: meta("pv", None),
                spec: Some(core::PersistentVolumeSpec {
                    claim_ref: objref(h),
                    persistent_volume_source: Some(core::PersistentVolumeSource {
                        csi: Some(core::CSIPersistentVolumeSource {
                            driver: s("d"),
                            volume_handle: s("x"),
                            node_publish_secret_ref: secret.clone(),
                            node_stage_secret_ref: secret,
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            };
            (
                "/api/v1/persistentvolumes".into(),
                wrap("v1", "PersistentVolume", &o),
                false,
            )
        }
        10 => {
            let o = rbac::RoleBinding {
                metadata: meta("b", ns),
                subjects: vec![subject("User"), subject("Group"), subject("ServiceAccount")],
                role_ref: Some(rbac::RoleRef {
                    api_group: s("rbac.authorization.k8s.io"),
                    kind: s("ClusterRole"),
                    name: s("cluster-admin"),
                }),
            };
            (
                at("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
                wrap("rbac.authorization.k8s.io/v1", "RoleBinding", &o),
                false,
            )
        }
        11 => {
            let o = rbac::ClusterRoleBinding {
                metadata: meta("b", None),
                subjects: vec![subject("User"), subject("ServiceAccount")],
                role_ref: Some(rbac::RoleRef {
                    api_group: s("rbac.authorization.k8s.io"),
                    kind: s("ClusterRole"),
                    name: s("cluster-admin"),
                }),
            };
            (
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings".into(),
                wrap("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &o),
                false,
            )
        }
        12 => {
            let o = adm::ValidatingWebhookConfiguration {
                metadata: meta("v", None),
                webhooks: vec![adm::ValidatingWebhook {
                    name: s("w.example.com"),
                    client_config: Some(adm::WebhookClientConfig {
                        service: Some(adm::ServiceReference {
                            namespace: s(h),
                            name: s("s"),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    namespace_selector: if h.len().is_multiple_of(2) {
                        ns_selector(h)
                    } else {
                        None
                    },
                    ..Default::default()
                }],
            };
            (
                "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations".into(),
                wrap(
                    "admissionregistration.k8s.io/v1",
                    "ValidatingWebhookConfiguration",
                    &o,
                ),
                true,
            )
        }
        _ => {
            let o = core::ServiceAccount {
                metadata: meta("sa", ns),
                secrets: vec![core::ObjectReference {
                    name: s("t"),
                    namespace: s(h),
                    ..Default::default()
                }],
                ..Default::default()
            };
            (
                at("/api/v1", "serviceaccounts"),
                wrap("v1", "ServiceAccount", &o),
                false,
            )
        }
    }
}

/// Every string of a protobuf message, read without a schema: each length-delimited field as
/// a string (when UTF-8) and, when it parses, as a message too.
fn strings(b: &[u8], out: &mut Vec<String>, depth: u32) -> bool {
    fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*pos)?;
            *pos += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    let mut pos = 0;
    let mut found = Vec::new();
    while pos < b.len() {
        let Some(key) = varint(b, &mut pos) else {
            return false;
        };
        if key >> 3 == 0 {
            return false;
        }
        match key & 7 {
            0 => {
                if varint(b, &mut pos).is_none() {
                    return false;
                }
            }
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let Some(n) = varint(b, &mut pos).and_then(|n| usize::try_from(n).ok()) else {
                    return false;
                };
                let Some(v) = pos.checked_add(n).and_then(|e| b.get(pos..e)) else {
                    return false;
                };
                pos += n;
                if let Ok(s) = std::str::from_utf8(v) {
                    found.push(s.to_owned());
                }
                if depth < 24 {
                    strings(v, &mut found, depth + 1);
                }
            }
            _ => return false,
        }
    }
    if pos > b.len() {
        return false;
    }
    out.extend(found);
    true
}

fn check(upstream: &[u8], h: &str, ident: &str, selector: bool) -> Result<(), String> {
    let mut all = Vec::new();
    if !strings(&upstream[4..], &mut all, 0) {
        return Err("upstream body is not protobuf".into());
    }
    if all.iter().any(|x| x == h) {
        return Err(format!("namespace {h:?} reached upstream as it was"));
    }
    for x in &all {
        let bad = x == "system:masters"
            || x.starts_with("paddock:barbar:")
            || x.starts_with("paddock:tenant:barbar")
            || x.starts_with("barbar-");
        if bad {
            return Err(format!("{x:?} reached upstream"));
        }
    }
    if all.iter().any(|x| x == ident) {
        return Err(format!("identity {ident:?} reached upstream unmapped"));
    }
    if selector && !all.iter().any(|x| x == "paddock.io/tenant") {
        return Err("a namespace selector without the tenant term".into());
    }
    Ok(())
}

#[test]
fn no_protobuf_body_names_anything_outside_the_tenant() {
    let ctx = ctx();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let accepted = std::sync::atomic::AtomicU32::new(0);
    let strategy = (
        0usize..14,
        prop_oneof![3 => Just(None), 1 => Just(Some("web")), 1 => Just(Some("kube-system"))],
        hostile_ns(),
        hostile_identity(),
    );
    runner
        .run(&strategy, |(kind, ns, h, ident)| {
            let (path, body, selector) = build(kind, ns, &h, &ident);
            let Ok(parsed) = parse_request("POST", &path, None) else {
                return Ok(());
            };
            let Ok(p) = plan(&ctx, parsed) else {
                return Ok(());
            };
            let Ok((up, ct)) = translate_request_body(&ctx, &p, PB, &body) else {
                return Ok(());
            };
            accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            prop_assert_eq!(ct, PB);
            if let Err(e) = check(&up, &h, &ident, selector) {
                return Err(TestCaseError::fail(format!("{e}\n  POST {path}")));
            }
            Ok(())
        })
        .unwrap();
    assert!(
        accepted.into_inner() > cases / 10,
        "too few protobuf bodies accepted to check"
    );
}

/// Positive control: the oracle fails an untranslated body.
#[test]
fn the_protobuf_oracle_sees_untranslated_bodies() {
    let (_, body, sel) = build(0, Some("web"), "barbar-web", "alice");
    assert!(check(&body, "barbar-web", "alice", sel).is_err());
    let (_, body, _) = build(10, Some("web"), "zqab", "paddock:barbar:bob");
    assert!(check(&body, "zqab", "paddock:barbar:bob", false).is_err());
}
