use serde_json::json;

use super::policy::{ExternalNamePolicy, PodSecurityLevel, Toleration};
use super::scheduling::node_wanted;
use super::*;

fn tid() -> TenantId {
    TenantId::parse("acme01").unwrap()
}

fn request(resource: &str, group: &str, op: &str, object: Value) -> AdmissionRequest {
    AdmissionRequest {
        uid: "u1".into(),
        resource: GroupVersionResource {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
        },
        namespace: "acme01-default".into(),
        name: object["metadata"]["name"].as_str().unwrap_or("x").into(),
        operation: op.into(),
        user_info: UserInfo {
            username: "system:serviceaccount:kube-system:replicaset-controller".into(),
            groups: vec![],
        },
        object,
        ..Default::default()
    }
}

fn run(
    phase: Phase,
    req: &AdmissionRequest,
    policy: &TenantPolicy,
    node: Option<&NodeFacts>,
) -> Outcome {
    let t = tid();
    let platform = Platform::default();
    let ctx = TenantContext {
        tenant: &t,
        policy,
        platform: &platform,
        node,
    };
    run_phase(&registry(), phase, req, &ctx)
}

fn pool() -> TenantPolicy {
    let mut p = TenantPolicy::default();
    p.scheduling
        .node_selector
        .insert("pool".into(), "acme".into());
    p.scheduling.tolerations.push(Toleration {
        key: "pool".into(),
        operator: "Equal".into(),
        value: "acme".into(),
        effect: "NoSchedule".into(),
        toleration_seconds: None,
    });
    p
}

fn denied(o: &Outcome) -> String {
    match o {
        Outcome::Deny(r) => r.message.clone(),
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[test]
fn pods_get_the_pool_and_then_pass_validation() {
    let pod =
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let req = request("pods", "", "CREATE", pod);
    let Outcome::Patch(ops) = run(Phase::Mutating, &req, &pool(), None) else {
        panic!("expected a patch")
    };
    let mut patched = req.clone();
    for op in &ops {
        apply_op(&mut patched.object, op).unwrap();
    }
    assert_eq!(patched.object["spec"]["nodeSelector"]["pool"], "acme");
    assert_eq!(patched.object["spec"]["tolerations"][0]["key"], "pool");
    assert_eq!(
        run(Phase::Validating, &patched, &pool(), None),
        Outcome::Allow
    );
    // Unpatched, the validating phase refuses it (another mutating webhook removed it).
    assert!(
        denied(&run(Phase::Validating, &req, &pool(), None))
            .contains("nodeSelector must hold pool=acme")
    );
}

#[test]
fn existing_selectors_and_tolerations_are_extended_not_replaced() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeSelector": {"zone": "a"},
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]}});
    let req = request("pods", "", "CREATE", pod);
    let Outcome::Patch(ops) = run(Phase::Mutating, &req, &pool(), None) else {
        panic!()
    };
    assert_eq!(ops[0].path, "/spec/nodeSelector/pool");
    assert_eq!(ops[1].path, "/spec/tolerations/-");
    let doc = patch_document(&ops);
    assert_eq!(doc[0]["op"], "add");
}

#[test]
fn system_priority_classes_and_blanket_tolerations_are_refused() {
    let p = TenantPolicy::default();
    let pc = request(
        "pods",
        "",
        "CREATE",
        json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "system-node-critical"}}),
    );
    let m = denied(&run(Phase::Validating, &pc, &p, None));
    assert!(
        m.starts_with("paddock policy scheduling:") && m.contains("system-node-critical"),
        "{m}"
    );
    let ok = request(
        "pods",
        "",
        "CREATE",
        json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "batch-low"}}),
    );
    assert_eq!(run(Phase::Validating, &ok, &p, None), Outcome::Allow);
    let mut only = p.clone();
    only.scheduling.allowed_priority_classes = Some(vec!["gold".into()]);
    assert!(denied(&run(Phase::Validating, &ok, &only, None)).contains("allowed: gold"));
    // `*` lifts the default's `system-*` exclusion (a platform setting).
    let mut every = p.clone();
    every.scheduling.allowed_priority_classes = Some(vec!["*".into()]);
    let critical = request(
        "pods",
        "",
        "CREATE",
        json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "system-cluster-critical"}}),
    );
    assert!(!denied(&run(Phase::Validating, &critical, &p, None)).is_empty());
    assert_eq!(
        run(Phase::Validating, &critical, &every, None),
        Outcome::Allow
    );
    let blanket = request(
        "pods",
        "",
        "CREATE",
        json!({"metadata": {"name": "p"}, "spec": {"tolerations": [{"operator": "Exists"}]}}),
    );
    assert!(denied(&run(Phase::Validating, &blanket, &p, None)).contains("every taint"));
    let platform = request(
        "pods",
        "",
        "CREATE",
        json!({"metadata": {"name": "p"}, "spec": {"tolerations": [{"key": "platform", "operator": "Exists"}]}}),
    );
    assert!(denied(&run(Phase::Validating, &platform, &p, None)).contains("\"platform\""));
}

#[test]
fn node_name_must_be_in_the_pool_and_tolerated() {
    let pod = |node: &str| {
        let mut r = request(
            "pods",
            "",
            "CREATE",
            json!({"metadata": {"name": "p"}, "spec": {"nodeName": node,
            "nodeSelector": {"pool": "acme"}, "tolerations": [{"key": "pool", "value": "acme", "effect": "NoSchedule"}]}}),
        );
        r.name = "p".into();
        r
    };
    let mut in_pool = NodeFacts {
        name: "n1".into(),
        ..Default::default()
    };
    in_pool.labels.insert("pool".into(), "acme".into());
    in_pool
        .taints
        .push(("pool".into(), "acme".into(), "NoSchedule".into()));
    let req = pod("n1");
    assert_eq!(node_wanted(&req), Some("n1"));
    assert_eq!(
        run(Phase::Validating, &req, &pool(), Some(&in_pool)),
        Outcome::Allow
    );
    let mut platform = NodeFacts {
        name: "n2".into(),
        ..Default::default()
    };
    platform.labels.insert("pool".into(), "platform".into());
    assert!(
        denied(&run(
            Phase::Validating,
            &pod("n2"),
            &pool(),
            Some(&platform)
        ))
        .contains("outside the tenant's node pool")
    );
    // No pool: a tainted node is still out of reach (nodeName skips the scheduler's check).
    let mut tainted = NodeFacts {
        name: "n3".into(),
        ..Default::default()
    };
    tainted
        .taints
        .push(("dedicated".into(), "platform".into(), "NoSchedule".into()));
    let bare = request(
        "pods",
        "",
        "CREATE",
        json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n3"}}),
    );
    assert!(
        denied(&run(
            Phase::Validating,
            &bare,
            &TenantPolicy::default(),
            Some(&tainted)
        ))
        .contains("does not tolerate")
    );
    assert!(
        denied(&run(
            Phase::Validating,
            &bare,
            &TenantPolicy::default(),
            None
        ))
        .contains("not found")
    );
}

#[test]
fn pod_updates_check_only_new_tolerations() {
    let old = json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "system-cluster-critical"}});
    let mut req = request(
        "pods",
        "",
        "UPDATE",
        json!({"metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"priorityClassName": "system-cluster-critical"}}),
    );
    req.old_object = old.clone();
    assert_eq!(
        run(Phase::Validating, &req, &TenantPolicy::default(), None),
        Outcome::Allow
    );
    req.object["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
    assert!(
        denied(&run(
            Phase::Validating,
            &req,
            &TenantPolicy::default(),
            None
        ))
        .contains("every taint")
    );
}

#[test]
fn service_types_follow_the_policy() {
    let svc = |spec: Value| {
        request(
            "services",
            "",
            "CREATE",
            json!({"metadata": {"name": "s"}, "spec": spec}),
        )
    };
    let p = TenantPolicy::default();
    assert!(
        denied(&run(
            Phase::Validating,
            &svc(json!({"type": "NodePort"})),
            &p,
            None
        ))
        .contains("allowNodePort")
    );
    assert!(
        denied(&run(
            Phase::Validating,
            &svc(json!({"type": "LoadBalancer"})),
            &p,
            None
        ))
        .contains("allowLoadBalancer")
    );
    assert!(
        denied(&run(
            Phase::Validating,
            &svc(json!({"externalIPs": ["1.2.3.4"]})),
            &p,
            None
        ))
        .contains("externalIPs")
    );
    assert!(
        denied(&run(
            Phase::Validating,
            &svc(json!({"type": "ExternalName", "externalName": "example.com"})),
            &p,
            None
        ))
        .contains("ExternalName")
    );
    assert_eq!(
        run(
            Phase::Validating,
            &svc(json!({"type": "ClusterIP"})),
            &p,
            None
        ),
        Outcome::Allow
    );
    let mut open = p.clone();
    open.services.allow_node_port = true;
    open.services.allow_load_balancer = true;
    open.services.external_name = ExternalNamePolicy::OutsideClusterDomain;
    assert_eq!(
        run(
            Phase::Validating,
            &svc(json!({"type": "NodePort"})),
            &open,
            None
        ),
        Outcome::Allow
    );
    assert_eq!(
        run(
            Phase::Validating,
            &svc(json!({"type": "LoadBalancer"})),
            &open,
            None
        ),
        Outcome::Allow
    );
    assert_eq!(
        run(
            Phase::Validating,
            &svc(json!({"type": "ExternalName", "externalName": "api.example.com"})),
            &open,
            None
        ),
        Outcome::Allow
    );
    for inside in [
        "web.other1-default.svc.cluster.local",
        "kubernetes.default.svc",
        "web",
        "10.96.0.1",
        "cluster.local.",
    ] {
        let m = denied(&run(
            Phase::Validating,
            &svc(json!({"type": "ExternalName", "externalName": inside})),
            &open,
            None,
        ));
        assert!(m.contains("outside the cluster domain"), "{inside}: {m}");
    }
}

#[test]
fn endpoints_are_refused_to_the_tenant_only() {
    let ep = json!({"metadata": {"name": "e"}, "subsets": [{"addresses": [{"ip": "10.96.0.1"}]}]});
    let mut req = request("endpoints", "", "CREATE", ep);
    req.user_info.username = "system:serviceaccount:kube-system:endpoint-controller".into();
    assert_eq!(
        run(Phase::Validating, &req, &TenantPolicy::default(), None),
        Outcome::Allow
    );
    for (user, groups) in [
        (
            "paddock:acme01:alice",
            vec!["paddock:tenant:acme01".to_string()],
        ),
        ("system:serviceaccount:acme01-default:default", vec![]),
    ] {
        req.user_info = UserInfo {
            username: user.into(),
            groups,
        };
        assert!(
            denied(&run(
                Phase::Validating,
                &req,
                &TenantPolicy::default(),
                None
            ))
            .contains("CVE-2021-25740")
        );
    }
    let mut open = TenantPolicy::default();
    open.services.endpoints = super::policy::EndpointsPolicy::Unrestricted;
    assert_eq!(run(Phase::Validating, &req, &open, None), Outcome::Allow);
    let mut slice = request(
        "endpointslices",
        "discovery.k8s.io",
        "UPDATE",
        json!({"metadata": {"name": "s"}}),
    );
    slice.user_info.username = "system:serviceaccount:acme01-apps:deployer".into();
    assert!(
        denied(&run(
            Phase::Validating,
            &slice,
            &TenantPolicy::default(),
            None
        ))
        .starts_with("paddock policy endpoints:")
    );
}

#[test]
fn ingress_hosts_are_claimed_within_allowed_domains() {
    let ing = request(
        "ingresses",
        "networking.k8s.io",
        "CREATE",
        json!({"metadata": {"name": "i"}, "spec": {
        "rules": [{"host": "Shop.Example.com"}, {"host": "shop.example.com"}, {}],
        "tls": [{"hosts": ["api.example.com"]}]}}),
    );
    let Outcome::Claim(c) = run(Phase::Validating, &ing, &TenantPolicy::default(), None) else {
        panic!()
    };
    let keys: Vec<&str> = c.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["api.example.com", "shop.example.com"]);
    let mut p = TenantPolicy::default();
    p.ingress.allowed_domains = vec!["acme.example".into()];
    assert!(
        denied(&run(Phase::Validating, &ing, &p, None))
            .contains("outside the tenant's allowed domains")
    );
    let none = request(
        "ingresses",
        "networking.k8s.io",
        "CREATE",
        json!({"metadata": {"name": "i"}, "spec": {"defaultBackend": {}}}),
    );
    assert_eq!(run(Phase::Validating, &none, &p, None), Outcome::Allow);
}

#[test]
fn weaker_namespace_labels_are_refused_not_rewritten() {
    let p = TenantPolicy::default();
    for labels in [json!({ENFORCE: "privileged"}), json!({"team": "a"})] {
        let mut ns = request(
            "namespaces",
            "",
            "UPDATE",
            json!({"metadata": {"name": "acme01-x", "labels": labels}}),
        );
        ns.namespace = String::new();
        assert_eq!(
            run(Phase::Mutating, &ns, &p, None),
            Outcome::Allow,
            "{labels}"
        );
        assert!(denied(&run(Phase::Validating, &ns, &p, None)).contains("baseline"));
    }
    let mut new = request(
        "namespaces",
        "",
        "CREATE",
        json!({"metadata": {"name": "acme01-y"}}),
    );
    new.namespace = String::new();
    let Outcome::Patch(ops) = run(Phase::Mutating, &new, &p, None) else {
        panic!()
    };
    assert_eq!(ops[0].path, "/metadata/labels");
}

#[test]
fn a_generated_namespace_is_the_tenant_of_its_name_or_generate_name() {
    // Straight at the apiserver: the request carries no name; the mutating phase sees the
    // generateName, the validating phase the generated name.
    let mut ns = request(
        "namespaces",
        "",
        "CREATE",
        json!({"metadata": {"generateName": "acme01-dev-"}}),
    );
    (ns.namespace, ns.name) = (String::new(), String::new());
    assert_eq!(ns.tenant_namespace(), "acme01-dev-");
    ns.object["metadata"]["name"] = json!("acme01-dev-x2b4z");
    assert_eq!(ns.tenant_namespace(), "acme01-dev-x2b4z");
    ns.name = "acme01-named".into();
    assert_eq!(ns.tenant_namespace(), "acme01-named");
    let mut other = request("configmaps", "", "CREATE", json!({"metadata": {}}));
    other.name = String::new();
    assert_eq!(other.tenant_namespace(), "acme01-default");
}

#[test]
fn namespaces_are_raised_to_the_tenant_level() {
    let mut p = TenantPolicy::default();
    let mut ns = request(
        "namespaces",
        "",
        "CREATE",
        json!({"metadata": {"name": "acme01-x", "labels": {ENFORCE: "baseline"}}}),
    );
    ns.namespace = String::new();
    assert_eq!(ns.tenant_namespace(), "acme01-x");
    assert_eq!(run(Phase::Mutating, &ns, &p, None), Outcome::Allow);
    assert_eq!(run(Phase::Validating, &ns, &p, None), Outcome::Allow);
    p.pod_security = PodSecurityLevel::Restricted;
    let Outcome::Patch(ops) = run(Phase::Mutating, &ns, &p, None) else {
        panic!()
    };
    assert_eq!(
        ops[0].path,
        "/metadata/labels/pod-security.kubernetes.io~1enforce"
    );
    assert!(denied(&run(Phase::Validating, &ns, &p, None)).contains("restricted"));
}

#[test]
fn a_privileged_tenant_may_choose_privileged_and_still_gets_baseline_unasked() {
    let p = TenantPolicy {
        pod_security: PodSecurityLevel::Privileged,
        ..TenantPolicy::default()
    };
    let mut ns = request(
        "namespaces",
        "",
        "UPDATE",
        json!({"metadata": {"name": "acme01-x", "labels": {ENFORCE: "privileged"}}}),
    );
    ns.namespace = String::new();
    assert_eq!(run(Phase::Mutating, &ns, &p, None), Outcome::Allow);
    assert_eq!(run(Phase::Validating, &ns, &p, None), Outcome::Allow);
    // An unknown level is refused for every tenant.
    ns.object["metadata"]["labels"][ENFORCE] = json!("anything");
    assert!(denied(&run(Phase::Validating, &ns, &p, None)).contains("privileged"));
    // A new namespace without the label: the platform's floor, not privileged.
    let mut new = request(
        "namespaces",
        "",
        "CREATE",
        json!({"metadata": {"name": "acme01-y", "labels": {"team": "a"}}}),
    );
    new.namespace = String::new();
    let Outcome::Patch(ops) = run(Phase::Mutating, &new, &p, None) else {
        panic!()
    };
    assert_eq!(ops[0].value, json!("baseline"));
}
const ENFORCE: &str = "pod-security.kubernetes.io/enforce";

#[test]
fn reviews_decode_and_answer() {
    assert!(decode_review(b"{}").is_err());
    assert!(
        decode_review(br#"{"apiVersion":"admission.k8s.io/v1beta1","request":{"uid":"a"}}"#)
            .is_err()
    );
    let r = decode_review(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a","resource":{"group":"","version":"v1","resource":"pods"},"operation":"CREATE","userInfo":{"username":"u"},"object":{}}}"#).unwrap();
    assert_eq!(r.uid, "a");
    let deny = review_response("a", &Outcome::Deny(Refusal::forbidden("x", "no")), None);
    assert_eq!(deny["response"]["allowed"], false);
    assert_eq!(deny["response"]["status"]["code"], 403);
    let patch = review_response("a", &Outcome::Patch(vec![]), Some("W10=".into()));
    assert_eq!(patch["response"]["patchType"], "JSONPatch");
    let rules = phase_rules(&registry(), Phase::Mutating);
    assert!(rules.iter().any(|r| r["resources"][0] == "pods"));
}

#[test]
fn wildcard_rules_match_as_the_apiserver_does() {
    let all = Rule {
        api_groups: &["*"],
        resources: &["*"],
        operations: &["CREATE"],
    };
    let mut r = request("configmaps", "", "CREATE", json!({}));
    assert!(all.matches(&r));
    r.resource.group = "apps".into();
    assert!(all.matches(&r));
    r.sub_resource = "status".into();
    assert!(!all.matches(&r), "* is not a subresource");
    r.sub_resource.clear();
    r.operation = "UPDATE".into();
    assert!(!all.matches(&r));
}
