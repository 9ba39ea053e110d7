//! Every kind with rules, as protobuf bodies built and read with the real generated types
//! (k8s-pb, from the upstream `generated.proto`): translated up, checked field by field, and
//! brought back down to what the tenant sent. This is what proves the table's field numbers.

use std::collections::BTreeMap;

use k8s_pb::api::admissionregistration::v1 as adm;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::discovery::v1 as discovery;
use k8s_pb::api::events::v1 as events;
use k8s_pb::api::networking::v1 as net;
use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
use k8s_pb::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;

use super::*;

use crate::catalog::context::tests::ctx;

fn st(s: &str) -> Option<String> {
    Some(s.to_owned())
}

fn meta(name: &str, ns: Option<&str>) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: st(name),
        namespace: ns.map(str::to_owned),
        ..Default::default()
    })
}

fn wrap<M: Message>(av: &str, kind: &str, obj: &M) -> Vec<u8> {
    let u = Unknown {
        type_meta: Some(TypeMeta {
            api_version: st(av),
            kind: st(kind),
        }),
        raw: Some(obj.encode_to_vec()),
        content_encoding: st(""),
        content_type: st(""),
    };
    let mut out = MAGIC.to_vec();
    out.extend(u.encode_to_vec());
    out
}

fn unwrap<M: Message + Default>(body: &[u8]) -> M {
    let u = Unknown::decode(&body[4..]).unwrap();
    M::decode(u.raw.unwrap_or_default().as_slice()).unwrap()
}

/// Up, then down again: returns the upstream object and asserts that the tenant gets back
/// what it sent.
fn both_ways<M: Message + Default + PartialEq + std::fmt::Debug>(
    av: &str,
    kind: &str,
    ns: Option<&str>,
    obj: &M,
) -> M {
    let c = ctx();
    let up = translate_protobuf_body(&c, None, ns, &wrap(av, kind, obj)).unwrap();
    let upstream: M = unwrap(&up);
    let down = protobuf_down(&c, None, &up).unwrap().expect("kept");
    let back: M = unwrap(&down);
    assert_eq!(&back, obj, "{kind}: down(up(x)) != x");
    upstream
}

fn code<M: Message>(av: &str, kind: &str, ns: Option<&str>, obj: &M) -> u16 {
    translate_protobuf_body(&ctx(), None, ns, &wrap(av, kind, obj))
        .unwrap_err()
        .http_code()
}

fn objref(kind: &str, ns: &str, name: &str) -> Option<core::ObjectReference> {
    Some(core::ObjectReference {
        kind: st(kind),
        namespace: (!ns.is_empty()).then(|| ns.to_owned()),
        name: st(name),
        api_version: st("v1"),
        ..Default::default()
    })
}

fn ns_selector(ns: &str) -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: BTreeMap::from([("kubernetes.io/metadata.name".into(), ns.into())]),
        match_expressions: Vec::new(),
    })
}

fn tenant_term() -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: st("paddock.io/tenant"),
        operator: st("In"),
        values: vec!["foofoo".into()],
    }
}

#[test]
fn core_and_events_k8s_io_events() {
    let ev = core::Event {
        metadata: meta("e1", Some("default")),
        involved_object: objref("Pod", "default", "web"),
        related: objref("Namespace", "", "default"),
        message: st("pulled image for web"),
        reason: st("Pulled"),
        ..Default::default()
    };
    let up = both_ways("v1", "Event", Some("default"), &ev);
    let io = up.involved_object.unwrap();
    assert_eq!(io.namespace.as_deref(), Some("foofoo-default"));
    assert_eq!(io.name.as_deref(), Some("web"));
    assert_eq!(up.related.unwrap().name.as_deref(), Some("foofoo-default"));
    assert_eq!(up.reason.as_deref(), Some("Pulled"));

    let ev = events::Event {
        metadata: meta("e2", Some("default")),
        regarding: objref("Pod", "default", "web"),
        related: objref("Pod", "other", "db"),
        note: st("ok"),
        reporting_controller: st("kubelet"),
        ..Default::default()
    };
    let up = both_ways("events.k8s.io/v1", "Event", Some("default"), &ev);
    assert_eq!(
        up.regarding.unwrap().namespace.as_deref(),
        Some("foofoo-default")
    );
    assert_eq!(
        up.related.unwrap().namespace.as_deref(),
        Some("foofoo-other")
    );
    assert_eq!(up.reporting_controller.as_deref(), Some("kubelet"));
}

#[test]
fn event_notes_are_scrubbed_down() {
    let c = ctx();
    let upstream = core::Event {
        metadata: meta("e1", Some("foofoo-default")),
        message: st("pod foofoo-default/web and barbar-db"),
        ..Default::default()
    };
    let down = protobuf_down(&c, None, &wrap("v1", "Event", &upstream))
        .unwrap()
        .unwrap();
    let ev: core::Event = unwrap(&down);
    assert_eq!(
        ev.message.as_deref(),
        Some("pod default/web and <redacted>")
    );
    // another tenant's event is dropped
    let other = core::Event {
        metadata: meta("e1", Some("barbar-default")),
        ..Default::default()
    };
    assert!(
        protobuf_down(&c, None, &wrap("v1", "Event", &other))
            .unwrap()
            .is_none()
    );
}

#[test]
fn endpoints_and_endpoint_slices() {
    let addr = |name: &str| core::EndpointAddress {
        ip: st("10.0.0.1"),
        target_ref: objref("Pod", "default", name),
        ..Default::default()
    };
    let ep = core::Endpoints {
        metadata: meta("svc", Some("default")),
        subsets: vec![core::EndpointSubset {
            addresses: vec![addr("a")],
            not_ready_addresses: vec![addr("b")],
            ..Default::default()
        }],
    };
    let up = both_ways("v1", "Endpoints", Some("default"), &ep);
    let s = &up.subsets[0];
    for a in s.addresses.iter().chain(&s.not_ready_addresses) {
        let r = a.target_ref.as_ref().unwrap();
        assert_eq!(r.namespace.as_deref(), Some("foofoo-default"));
    }
    assert_eq!(s.addresses[0].ip.as_deref(), Some("10.0.0.1"));

    let slice = discovery::EndpointSlice {
        metadata: meta("svc-1", Some("default")),
        address_type: st("IPv4"),
        endpoints: vec![discovery::Endpoint {
            addresses: vec!["10.0.0.1".into()],
            target_ref: objref("Pod", "default", "a"),
            node_name: st("node-1"),
            ..Default::default()
        }],
        ..Default::default()
    };
    let up = both_ways(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        Some("default"),
        &slice,
    );
    let e = &up.endpoints[0];
    assert_eq!(
        e.target_ref.as_ref().unwrap().namespace.as_deref(),
        Some("foofoo-default")
    );
    assert_eq!(e.node_name.as_deref(), Some("node-1"));
    assert_eq!(
        up.metadata.unwrap().namespace.as_deref(),
        Some("foofoo-default")
    );
}

#[test]
fn network_policies() {
    let np = net::NetworkPolicy {
        metadata: meta("np", Some("default")),
        spec: Some(net::NetworkPolicySpec {
            ingress: vec![net::NetworkPolicyIngressRule {
                from: vec![net::NetworkPolicyPeer {
                    namespace_selector: ns_selector("db"),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            egress: vec![net::NetworkPolicyEgressRule {
                to: vec![net::NetworkPolicyPeer {
                    namespace_selector: Some(LabelSelector::default()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            policy_types: vec!["Ingress".into(), "Egress".into()],
            ..Default::default()
        }),
    };
    let up = both_ways(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        Some("default"),
        &np,
    );
    let spec = up.spec.unwrap();
    let from = spec.ingress[0].from[0].namespace_selector.clone().unwrap();
    assert_eq!(
        from.match_labels["kubernetes.io/metadata.name"],
        "foofoo-db"
    );
    assert_eq!(from.match_expressions, vec![tenant_term()]);
    let to = spec.egress[0].to[0].namespace_selector.clone().unwrap();
    assert_eq!(to.match_expressions, vec![tenant_term()]);
    assert_eq!(spec.policy_types.len(), 2);
}

fn client_config(ns: &str) -> Option<adm::WebhookClientConfig> {
    Some(adm::WebhookClientConfig {
        service: Some(adm::ServiceReference {
            namespace: st(ns),
            name: st("hook"),
            ..Default::default()
        }),
        ca_bundle: Some(b"ca".to_vec()),
        ..Default::default()
    })
}

fn rule(scope: &str) -> adm::RuleWithOperations {
    adm::RuleWithOperations {
        operations: vec!["CREATE".into()],
        rule: Some(adm::Rule {
            api_groups: vec!["example.com".into()],
            api_versions: vec!["v1".into()],
            resources: vec!["widgets".into()],
            scope: st(scope),
        }),
    }
}

#[test]
fn webhook_configurations() {
    let hook = adm::ValidatingWebhook {
        name: st("v.example.com"),
        client_config: client_config("hooks"),
        rules: vec![rule("Namespaced")],
        namespace_selector: ns_selector("default"),
        side_effects: st("None"),
        ..Default::default()
    };
    let cfg = adm::ValidatingWebhookConfiguration {
        metadata: meta("v", None),
        webhooks: vec![hook.clone()],
    };
    let c = ctx();
    let av = "admissionregistration.k8s.io/v1";
    let up: adm::ValidatingWebhookConfiguration = unwrap(
        &translate_protobuf_body(
            &c,
            None,
            None,
            &wrap(av, "ValidatingWebhookConfiguration", &cfg),
        )
        .unwrap(),
    );
    let h = &up.webhooks[0];
    let svc = h.client_config.as_ref().unwrap().service.as_ref().unwrap();
    assert_eq!(svc.namespace.as_deref(), Some("foofoo-hooks"));
    assert_eq!(
        h.client_config.as_ref().unwrap().ca_bundle.as_deref(),
        Some(&b"ca"[..])
    );
    let r = h.rules[0].rule.as_ref().unwrap();
    assert_eq!(r.api_groups, vec!["foofoo-example.com".to_string()]);
    assert_eq!(r.api_versions, vec!["v1".to_string()]);
    assert_eq!(h.rules[0].operations, vec!["CREATE".to_string()]);
    let sel = h.namespace_selector.as_ref().unwrap();
    assert_eq!(sel.match_expressions, vec![tenant_term()]);
    // down gives back the tenant's object
    let down = protobuf_down(&c, None, &wrap(av, "ValidatingWebhookConfiguration", &up))
        .unwrap()
        .unwrap();
    assert_eq!(unwrap::<adm::ValidatingWebhookConfiguration>(&down), cfg);

    // A webhook without a selector gets the confining one; scope * becomes Namespaced.
    let m = adm::MutatingWebhookConfiguration {
        metadata: meta("m", None),
        webhooks: vec![adm::MutatingWebhook {
            name: st("m.example.com"),
            client_config: client_config("hooks"),
            rules: vec![rule("*")],
            ..Default::default()
        }],
    };
    let up: adm::MutatingWebhookConfiguration = unwrap(
        &translate_protobuf_body(
            &c,
            None,
            None,
            &wrap(av, "MutatingWebhookConfiguration", &m),
        )
        .unwrap(),
    );
    let h = &up.webhooks[0];
    assert_eq!(
        h.namespace_selector.as_ref().unwrap().match_expressions,
        vec![tenant_term()]
    );
    assert_eq!(
        h.rules[0].rule.as_ref().unwrap().scope.as_deref(),
        Some("Namespaced")
    );
    // url and Cluster scope are refused
    let mut bad = m.clone();
    bad.webhooks[0].client_config = Some(adm::WebhookClientConfig {
        url: st("https://evil"),
        ..Default::default()
    });
    assert_eq!(code(av, "MutatingWebhookConfiguration", None, &bad), 403);
    let mut bad = m;
    bad.webhooks[0].rules = vec![rule("Cluster")];
    assert_eq!(code(av, "MutatingWebhookConfiguration", None, &bad), 403);
}

#[test]
fn crd_conversion_webhooks_and_conditions() {
    let crd = ext::CustomResourceDefinition {
        metadata: meta("widgets.example.com", None),
        spec: Some(ext::CustomResourceDefinitionSpec {
            group: st("example.com"),
            scope: st("Namespaced"),
            conversion: Some(ext::CustomResourceConversion {
                strategy: st("Webhook"),
                webhook: Some(ext::WebhookConversion {
                    client_config: Some(ext::WebhookClientConfig {
                        service: Some(ext::ServiceReference {
                            namespace: st("conv"),
                            name: st("svc"),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    conversion_review_versions: vec!["v1".into()],
                }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let c = ctx();
    let av = "apiextensions.k8s.io/v1";
    let up: ext::CustomResourceDefinition = unwrap(
        &translate_protobuf_body(&c, None, None, &wrap(av, "CustomResourceDefinition", &crd))
            .unwrap(),
    );
    let spec = up.spec.clone().unwrap();
    assert_eq!(spec.group.as_deref(), Some("foofoo-example.com"));
    let cc = spec
        .conversion
        .unwrap()
        .webhook
        .unwrap()
        .client_config
        .unwrap();
    assert_eq!(
        cc.service.unwrap().namespace.as_deref(),
        Some("foofoo-conv")
    );
    // down: group and namespace back, condition messages scrubbed
    let mut stored = up;
    stored.status = Some(ext::CustomResourceDefinitionStatus {
        conditions: vec![ext::CustomResourceDefinitionCondition {
            r#type: st("NamesAccepted"),
            message: st("conflicts with barbar-x"),
            ..Default::default()
        }],
        ..Default::default()
    });
    let down = protobuf_down(&c, None, &wrap(av, "CustomResourceDefinition", &stored))
        .unwrap()
        .unwrap();
    let back: ext::CustomResourceDefinition = unwrap(&down);
    assert_eq!(back.spec, crd.spec);
    assert_eq!(
        back.metadata.unwrap().name.as_deref(),
        Some("widgets.example.com")
    );
    assert_eq!(
        back.status.unwrap().conditions[0].message.as_deref(),
        Some("conflicts with <redacted>")
    );
}

#[test]
fn cluster_roles_aggregation_and_bindings() {
    let cr = rbac::ClusterRole {
        metadata: meta("agg", None),
        aggregation_rule: Some(rbac::AggregationRule {
            cluster_role_selectors: vec![LabelSelector {
                match_labels: BTreeMap::from([("team".into(), "a".into())]),
                ..Default::default()
            }],
        }),
        rules: vec![rbac::PolicyRule {
            verbs: vec!["get".into()],
            api_groups: vec!["".into()],
            resources: vec!["namespaces".into()],
            resource_names: vec!["dev".into()],
            ..Default::default()
        }],
    };
    let c = ctx();
    let av = "rbac.authorization.k8s.io/v1";
    let up: rbac::ClusterRole =
        unwrap(&translate_protobuf_body(&c, None, None, &wrap(av, "ClusterRole", &cr)).unwrap());
    let sel = &up.aggregation_rule.as_ref().unwrap().cluster_role_selectors[0];
    assert_eq!(sel.match_expressions, vec![tenant_term()]);
    assert_eq!(up.rules[0].resource_names, vec!["foofoo-dev".to_string()]);
    let down = protobuf_down(&c, None, &wrap(av, "ClusterRole", &up))
        .unwrap()
        .unwrap();
    assert_eq!(unwrap::<rbac::ClusterRole>(&down), cr);
    // Aggregation labels are renamed upstream (the platform's roles never select a tenant's
    // role) and read back as written; the upstream spelling itself is reserved.
    let mut part = cr.clone();
    if let Some(m) = part.metadata.as_mut() {
        m.labels.insert(
            "rbac.authorization.k8s.io/aggregate-to-admin".into(),
            "true".into(),
        );
    }
    let up = both_ways(av, "ClusterRole", None, &part);
    let labels = &up.metadata.as_ref().unwrap().labels;
    assert_eq!(
        labels
            .get("paddock.io/aggregate-to-admin")
            .map(String::as_str),
        Some("true")
    );
    assert!(!labels.contains_key("rbac.authorization.k8s.io/aggregate-to-admin"));
    let mut bad = cr;
    if let Some(m) = bad.metadata.as_mut() {
        m.labels
            .insert("paddock.io/aggregate-to-admin".into(), "true".into());
    }
    assert_eq!(code(av, "ClusterRole", None, &bad), 403);

    let rb = rbac::RoleBinding {
        metadata: meta("b", Some("default")),
        subjects: vec![rbac::Subject {
            kind: st("ServiceAccount"),
            name: st("ci"),
            namespace: st("build"),
            ..Default::default()
        }],
        role_ref: Some(rbac::RoleRef {
            api_group: st("rbac.authorization.k8s.io"),
            kind: st("ClusterRole"),
            name: st("reader"),
        }),
    };
    let up = both_ways(av, "RoleBinding", Some("default"), &rb);
    assert_eq!(up.subjects[0].namespace.as_deref(), Some("foofoo-build"));
    assert_eq!(up.role_ref.unwrap().name.as_deref(), Some("foofoo-reader"));
}

#[path = "protobuf_workload_tests.rs"]
mod workloads;

/// A tenant ValidatingAdmissionPolicy and its binding in protobuf (client-go's default for
/// the e2e framework): the same confinement as JSON, at the upstream field numbers.
#[test]
fn admission_policies() {
    let c = ctx();
    let av = "admissionregistration.k8s.io/v1";
    let named = |scope: &str| adm::NamedRuleWithOperations {
        resource_names: vec!["x".into()],
        rule_with_operations: Some(rule(scope)),
    };
    let policy = adm::ValidatingAdmissionPolicy {
        metadata: meta("p", None),
        spec: Some(adm::ValidatingAdmissionPolicySpec {
            param_kind: Some(adm::ParamKind {
                api_version: st("example.com/v1"),
                kind: st("Widget"),
            }),
            match_constraints: Some(adm::MatchResources {
                namespace_selector: ns_selector("default"),
                resource_rules: vec![named("*")],
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let up: adm::ValidatingAdmissionPolicy = unwrap(
        &translate_protobuf_body(
            &c,
            None,
            None,
            &wrap(av, "ValidatingAdmissionPolicy", &policy),
        )
        .unwrap(),
    );
    assert_eq!(
        up.metadata.as_ref().unwrap().name.as_deref(),
        Some("foofoo-p")
    );
    let spec = up.spec.as_ref().unwrap();
    assert_eq!(
        spec.param_kind.as_ref().unwrap().api_version.as_deref(),
        Some("foofoo-example.com/v1")
    );
    let mc = spec.match_constraints.as_ref().unwrap();
    assert_eq!(
        mc.namespace_selector.as_ref().unwrap().match_expressions,
        vec![tenant_term()]
    );
    let r = mc.resource_rules[0].rule_with_operations.as_ref().unwrap();
    let r = r.rule.as_ref().unwrap();
    assert_eq!(r.scope.as_deref(), Some("Namespaced"));
    assert_eq!(r.api_groups, vec!["foofoo-example.com".to_string()]);
    assert_eq!(mc.resource_rules[0].resource_names, vec!["x".to_string()]);

    let binding = adm::ValidatingAdmissionPolicyBinding {
        metadata: meta("b", None),
        spec: Some(adm::ValidatingAdmissionPolicyBindingSpec {
            policy_name: st("p"),
            param_ref: Some(adm::ParamRef {
                name: st("w"),
                namespace: st("cfg"),
                ..Default::default()
            }),
            validation_actions: vec!["Deny".into()],
            ..Default::default()
        }),
    };
    let up = both_ways(av, "ValidatingAdmissionPolicyBinding", None, &binding);
    let spec = up.spec.unwrap();
    assert_eq!(spec.policy_name.as_deref(), Some("foofoo-p"));
    assert_eq!(
        spec.param_ref.unwrap().namespace.as_deref(),
        Some("foofoo-cfg")
    );

    // A cluster-scoped rule or a platform param kind is refused in protobuf too.
    let mut bad = policy.clone();
    if let Some(s) = bad.spec.as_mut() {
        s.param_kind = Some(adm::ParamKind {
            api_version: st("v1"),
            kind: st("Node"),
        });
    }
    assert_eq!(code(av, "ValidatingAdmissionPolicy", None, &bad), 403);
}
