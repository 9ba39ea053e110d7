//! The rule table: for every kind, the fields that hold something tenant-relative, each with
//! its JSON path, its protobuf field numbers and what it holds. This is the one declaration
//! the JSON walker, the protobuf walker, json-patch checks, field selectors and the generated
//! rule table in docs/translation.md read. Adding a kind is one row in [`KINDS`].
//!
//! Protobuf field numbers are those of the upstream `generated.proto` files
//! (k8s.io/api v0.33, k8s.io/apiextensions-apiserver v0.33), never guessed; the unit tests in
//! `wire::protobuf` encode bodies with the real generated types (k8s-pb) to prove them.
//!
//! Every kind also gets the universal rules of `metadata` (ObjectMeta, protobuf field 1 of
//! every built-in kind), which are not repeated per row.

use super::schema::*;
use super::schema::{f, kind};

// ---------------------------------------------------------------------------------------------
// Embedded structures (k8s.io/api/core/v1/generated.proto)

const AFFINITY_TERM: Struct = Struct {
    name: "PodAffinityTerm",
    fields: &[
        f(&[many("namespaces", &[2])], Holds::Namespace),
        f(
            &[one("namespaceSelector", &[4])],
            Holds::NamespaceSelector { forced: false },
        ),
    ],
};

const REQUIRED: Step = many("requiredDuringSchedulingIgnoredDuringExecution", &[1]);
const PREFERRED: Step = many("preferredDuringSchedulingIgnoredDuringExecution", &[2]);
const TERM: Step = one("podAffinityTerm", &[2]);
const AFFINITY: Step = one("affinity", &[18]);
const POD_AFFINITY: Step = one("podAffinity", &[2]);
const POD_ANTI_AFFINITY: Step = one("podAntiAffinity", &[3]);

/// Where a pod names other namespaces: its (anti-)affinity terms, required and preferred.
pub const POD_SPEC: Struct = Struct {
    name: "PodSpec",
    fields: &[
        f(
            &[AFFINITY, POD_AFFINITY, REQUIRED],
            Holds::Embed(&AFFINITY_TERM),
        ),
        f(
            &[AFFINITY, POD_AFFINITY, PREFERRED, TERM],
            Holds::Embed(&AFFINITY_TERM),
        ),
        f(
            &[AFFINITY, POD_ANTI_AFFINITY, REQUIRED],
            Holds::Embed(&AFFINITY_TERM),
        ),
        f(
            &[AFFINITY, POD_ANTI_AFFINITY, PREFERRED, TERM],
            Holds::Embed(&AFFINITY_TERM),
        ),
        // An ephemeral volume is a claim made from this template (`volumeSource` is inline).
        f(
            &[
                POD_VOLUMES,
                one("ephemeral", &[2, 29]),
                one("volumeClaimTemplate", &[1]),
                one("spec", &[2]),
            ],
            Holds::Embed(&PVC_SPEC),
        ),
    ],
};

const POD_VOLUMES: Step = many("volumes", &[1]);

/// A claim names a volume, and a data source in another namespace.
pub const PVC_SPEC: Struct = Struct {
    name: "PersistentVolumeClaimSpec",
    fields: &[
        f(&[one("volumeName", &[3])], Holds::VolumeName),
        f(
            &[one("dataSourceRef", &[8]), one("namespace", &[4])],
            Holds::Namespace,
        ),
    ],
};

const NS: Step = one("namespace", &[2]);
const NS_1: Step = one("namespace", &[1]);

/// The secrets and endpoints a volume source names by namespace (SecretReference and
/// ObjectReference: namespace = 2). A volume plugin reads them with the platform's rights, so
/// a tenant volume must not name another tenant's. `persistentVolumeSource` is inline (2).
pub const PV_SOURCE: Struct = Struct {
    name: "PersistentVolumeSource",
    fields: &[
        f(
            &[one("cephfs", &[2, 9]), one("secretRef", &[5]), NS],
            Holds::Namespace,
        ),
        f(
            &[one("cinder", &[2, 8]), one("secretRef", &[4]), NS],
            Holds::Namespace,
        ),
        f(
            &[
                one("csi", &[2, 22]),
                one("controllerPublishSecretRef", &[6]),
                NS,
            ],
            Holds::Namespace,
        ),
        f(
            &[one("csi", &[2, 22]), one("nodeStageSecretRef", &[7]), NS],
            Holds::Namespace,
        ),
        f(
            &[one("csi", &[2, 22]), one("nodePublishSecretRef", &[8]), NS],
            Holds::Namespace,
        ),
        f(
            &[
                one("csi", &[2, 22]),
                one("controllerExpandSecretRef", &[9]),
                NS,
            ],
            Holds::Namespace,
        ),
        f(
            &[one("csi", &[2, 22]), one("nodeExpandSecretRef", &[10]), NS],
            Holds::Namespace,
        ),
        f(
            &[one("flexVolume", &[2, 12]), one("secretRef", &[3]), NS],
            Holds::Namespace,
        ),
        f(
            &[one("iscsi", &[2, 7]), one("secretRef", &[10]), NS],
            Holds::Namespace,
        ),
        f(
            &[one("rbd", &[2, 6]), one("secretRef", &[7]), NS],
            Holds::Namespace,
        ),
        f(
            &[one("scaleIO", &[2, 19]), one("secretRef", &[3]), NS],
            Holds::Namespace,
        ),
        f(
            &[one("storageos", &[2, 21]), one("secretRef", &[5]), NS],
            Holds::Namespace,
        ),
        f(
            &[one("azureFile", &[2, 13]), one("secretNamespace", &[4])],
            Holds::Namespace,
        ),
        f(
            &[one("glusterfs", &[2, 4]), one("endpointsNamespace", &[4])],
            Holds::Namespace,
        ),
    ],
};

const SPEC: Step = one("spec", &[2]);
const TEMPLATE_SPEC: Step = one("spec", &[2]);
const POD: Holds = Holds::Embed(&POD_SPEC);
const PVC: Holds = Holds::Embed(&PVC_SPEC);

const WEBHOOK_FIELDS: &[FieldRule] = &[
    f(
        &[many("webhooks", &[2]), one("clientConfig", &[2])],
        Holds::ClientConfig,
    ),
    f(
        &[many("webhooks", &[2]), one("namespaceSelector", &[5])],
        Holds::NamespaceSelector { forced: true },
    ),
    f(
        &[many("webhooks", &[2]), many("rules", &[3])],
        Holds::WebhookRules,
    ),
];

// admissionregistration/v1 ValidatingAdmissionPolicySpec{paramKind=1, matchConstraints=2},
// MatchResources{namespaceSelector=1, resourceRules=3, excludeResourceRules=4},
// ValidatingAdmissionPolicyBindingSpec{policyName=1, paramRef=2 {namespace=2},
// matchResources=3}.
const MATCH_CONSTRAINTS: Step = one("matchConstraints", &[2]);
const MATCH_RESOURCES: Step = one("matchResources", &[3]);

/// The confining fields of a policy's or a binding's MatchResources (one macro, two places:
/// a `const fn` with the step as a parameter cannot build `'static` paths).
macro_rules! match_resources {
    ($at:expr) => {
        [
            f(
                &[SPEC, $at, one("namespaceSelector", &[1])],
                Holds::NamespaceSelector { forced: true },
            ),
            f(
                &[SPEC, $at, many("resourceRules", &[3])],
                Holds::PolicyRulesNamed,
            ),
            f(
                &[SPEC, $at, many("excludeResourceRules", &[4])],
                Holds::PolicyRulesNamed,
            ),
        ]
    };
}
const POLICY_MATCH: [FieldRule; 3] = match_resources!(MATCH_CONSTRAINTS);
const BINDING_MATCH: [FieldRule; 3] = match_resources!(MATCH_RESOURCES);

const ACCESS_REVIEW_STATUS: [FieldRule; 2] = [
    f(&[one("status", &[3]), one("reason", &[2])], Holds::FreeText),
    f(
        &[one("status", &[3]), one("evaluationError", &[3])],
        Holds::FreeText,
    ),
];

const RESOURCE_ATTRIBUTES: FieldRule = f(
    &[SPEC, one("resourceAttributes", &[1])],
    Holds::ResourceAttributes,
);

/// An access review: what it asks about, whose identity, the answer's free text.
const fn access_review(writable: bool) -> [FieldRule; 4] {
    [
        RESOURCE_ATTRIBUTES,
        f(&[SPEC], Holds::ReviewIdentity { writable }),
        ACCESS_REVIEW_STATUS[0],
        ACCESS_REVIEW_STATUS[1],
    ]
}
const SELF_ACCESS_REVIEW: [FieldRule; 4] = access_review(false);
const ACCESS_REVIEW: [FieldRule; 4] = access_review(true);

/// Every kind with rules beyond `metadata`, and the subresource body kinds. A built-in kind
/// absent from this table has only the `metadata` rules (its other fields name nothing
/// outside its namespace; `tests/openapi_fields.rs` proves it for every built-in kind).
pub const KINDS: &[KindRules] = &[
    // --- workloads: pod specs
    kind("", "Pod", &[f(&[SPEC], POD)]),
    kind(
        "",
        "PodTemplate",
        &[f(&[one("template", &[2]), TEMPLATE_SPEC], POD)],
    ),
    kind(
        "",
        "ReplicationController",
        &[f(&[SPEC, one("template", &[3]), TEMPLATE_SPEC], POD)],
    ),
    kind(
        "apps",
        "Deployment",
        &[f(&[SPEC, one("template", &[3]), TEMPLATE_SPEC], POD)],
    ),
    kind(
        "apps",
        "ReplicaSet",
        &[f(&[SPEC, one("template", &[3]), TEMPLATE_SPEC], POD)],
    ),
    kind(
        "apps",
        "StatefulSet",
        &[
            f(&[SPEC, one("template", &[3]), TEMPLATE_SPEC], POD),
            f(&[SPEC, many("volumeClaimTemplates", &[4]), SPEC], PVC),
        ],
    ),
    kind(
        "apps",
        "DaemonSet",
        &[f(&[SPEC, one("template", &[2]), TEMPLATE_SPEC], POD)],
    ),
    kind(
        "batch",
        "Job",
        &[f(&[SPEC, one("template", &[6]), TEMPLATE_SPEC], POD)],
    ),
    kind(
        "batch",
        "CronJob",
        &[
            f(
                &[
                    SPEC,
                    one("jobTemplate", &[5]),
                    SPEC,
                    one("template", &[6]),
                    TEMPLATE_SPEC,
                ],
                POD,
            ),
            f(
                &[one("status", &[3]), many("active", &[1])],
                Holds::ObjectRef,
            ),
        ],
    ),
    // --- service accounts: their (legacy) token secrets
    kind(
        "",
        "ServiceAccount",
        &[f(&[many("secrets", &[2])], Holds::ObjectRef)],
    ),
    // --- storage
    kind("", "PersistentVolumeClaim", &[f(&[SPEC], PVC)]),
    KindRules {
        group: "",
        kind: "PersistentVolume",
        fields: &[
            f(&[SPEC, one("claimRef", &[4]), NS], Holds::Namespace),
            f(&[SPEC], Holds::Embed(&PV_SOURCE)),
        ],
        checks: &[
            Check::Absent {
                path: &[SPEC, one("hostPath", &[2, 3])],
                reason: "a host path volume is a way onto a shared node's filesystem",
            },
            Check::Absent {
                path: &[SPEC, one("local", &[2, 20])],
                reason: "a local volume is a way onto a shared node's filesystem",
            },
        ],
        body_of: None,
    },
    // --- events and endpoints: object references
    kind(
        "",
        "Event",
        &[
            f(&[one("involvedObject", &[2])], Holds::ObjectRef),
            f(&[one("related", &[13])], Holds::ObjectRef),
            f(&[one("message", &[4])], Holds::FreeText),
        ],
    ),
    kind(
        "events.k8s.io",
        "Event",
        &[
            f(&[one("regarding", &[8])], Holds::ObjectRef),
            f(&[one("related", &[9])], Holds::ObjectRef),
            f(&[one("note", &[10])], Holds::FreeText),
        ],
    ),
    kind(
        "",
        "Endpoints",
        &[
            f(
                &[
                    many("subsets", &[2]),
                    many("addresses", &[1]),
                    one("targetRef", &[2]),
                ],
                Holds::ObjectRef,
            ),
            f(
                &[
                    many("subsets", &[2]),
                    many("notReadyAddresses", &[2]),
                    one("targetRef", &[2]),
                ],
                Holds::ObjectRef,
            ),
        ],
    ),
    kind(
        "discovery.k8s.io",
        "EndpointSlice",
        &[f(
            &[many("endpoints", &[2]), one("targetRef", &[4])],
            Holds::ObjectRef,
        )],
    ),
    // --- networking
    kind(
        "networking.k8s.io",
        "NetworkPolicy",
        &[
            f(
                &[
                    SPEC,
                    many("ingress", &[2]),
                    many("from", &[2]),
                    one("namespaceSelector", &[2]),
                ],
                Holds::NamespaceSelector { forced: false },
            ),
            f(
                &[
                    SPEC,
                    many("egress", &[3]),
                    many("to", &[2]),
                    one("namespaceSelector", &[2]),
                ],
                Holds::NamespaceSelector { forced: false },
            ),
        ],
    ),
    // --- RBAC
    kind(
        "rbac.authorization.k8s.io",
        "Role",
        &[f(
            &[many("rules", &[2])],
            Holds::PolicyRules { cluster: false },
        )],
    ),
    KindRules {
        group: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        fields: &[
            f(&[many("rules", &[2])], Holds::PolicyRules { cluster: true }),
            f(
                &[
                    one("aggregationRule", &[3]),
                    many("clusterRoleSelectors", &[1]),
                ],
                Holds::RoleSelector,
            ),
        ],
        // Aggregation labels are renamed, not refused (rules/aggregate.rs).
        checks: &[],
        body_of: None,
    },
    kind(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        &[
            f(&[one("roleRef", &[3])], Holds::RoleRef { cluster: false }),
            f(
                &[many("subjects", &[2])],
                Holds::Subjects { cluster: false },
            ),
        ],
    ),
    kind(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        &[
            f(&[one("roleRef", &[3])], Holds::RoleRef { cluster: true }),
            f(&[many("subjects", &[2])], Holds::Subjects { cluster: true }),
        ],
    ),
    // --- admission webhooks
    kind(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        WEBHOOK_FIELDS,
    ),
    kind(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        WEBHOOK_FIELDS,
    ),
    // --- admission policies (rules/policy.rs)
    kind(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        &[
            POLICY_MATCH[0],
            POLICY_MATCH[1],
            POLICY_MATCH[2],
            f(&[SPEC, one("paramKind", &[1])], Holds::ParamKind),
            // Validation{expression=1, messageExpression=4}, AuditAnnotation{valueExpression=2},
            // MatchCondition{expression=2}, Variable{expression=2}
            f(
                &[SPEC, many("validations", &[3]), one("expression", &[1])],
                Holds::CelExpression,
            ),
            f(
                &[
                    SPEC,
                    many("validations", &[3]),
                    one("messageExpression", &[4]),
                ],
                Holds::CelExpression,
            ),
            f(
                &[
                    SPEC,
                    many("auditAnnotations", &[5]),
                    one("valueExpression", &[2]),
                ],
                Holds::CelExpression,
            ),
            f(
                &[SPEC, many("matchConditions", &[6]), one("expression", &[2])],
                Holds::CelExpression,
            ),
            f(
                &[SPEC, many("variables", &[7]), one("expression", &[2])],
                Holds::CelExpression,
            ),
        ],
    ),
    kind(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        &[
            BINDING_MATCH[0],
            BINDING_MATCH[1],
            BINDING_MATCH[2],
            f(&[SPEC, one("policyName", &[1])], Holds::PolicyName),
            f(
                &[SPEC, one("paramRef", &[2]), one("namespace", &[2])],
                Holds::Namespace,
            ),
        ],
    ),
    // --- API priority and fairness (rules/flowcontrol.rs). flowcontrol/v1 FlowSchemaSpec
    // {priorityLevelConfiguration=1 {name=1}, rules=4}, PolicyRulesWithSubjects{subjects=1,
    // resourceRules=2 {namespaces=5}}; a PriorityLevelConfiguration's rule is on the whole
    // object (its shares move into metadata.annotations).
    kind(
        "flowcontrol.apiserver.k8s.io",
        "FlowSchema",
        &[
            f(
                &[
                    SPEC,
                    one("priorityLevelConfiguration", &[1]),
                    one("name", &[1]),
                ],
                Holds::PriorityLevelRef,
            ),
            f(
                &[SPEC, many("rules", &[4]), many("subjects", &[1])],
                Holds::FlowSubjects,
            ),
            f(
                &[
                    SPEC,
                    many("rules", &[4]),
                    many("resourceRules", &[2]),
                    many("namespaces", &[5]),
                ],
                Holds::FlowNamespaces,
            ),
        ],
    ),
    kind(
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        &[f(&[], Holds::PriorityLevel)],
    ),
    // --- CRDs
    kind(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        &[
            f(&[SPEC, one("group", &[1])], Holds::CrdGroup),
            f(
                &[
                    SPEC,
                    one("conversion", &[9]),
                    one("webhook", &[2]),
                    one("clientConfig", &[2]),
                ],
                Holds::ConversionClientConfig,
            ),
            f(
                &[
                    one("status", &[3]),
                    many("conditions", &[1]),
                    one("message", &[5]),
                ],
                Holds::FreeText,
            ),
        ],
    ),
    // --- APIServices: shared read-only, each naming a group (rules/apiservice.rs).
    // apiregistration/v1 APIService{spec=2 {service=1 {namespace=1}, group=2}, status=3
    // {conditions=1 {message=5}}}; ObjectMeta{name=1}.
    kind(
        "apiregistration.k8s.io",
        "APIService",
        &[
            f(
                &[one("metadata", &[1]), one("name", &[1])],
                Holds::ServedGroupName,
            ),
            f(&[SPEC, one("group", &[2])], Holds::ServedGroup),
            f(&[SPEC, one("service", &[1]), NS_1], Holds::Namespace),
            f(
                &[
                    one("status", &[3]),
                    many("conditions", &[1]),
                    one("message", &[5]),
                ],
                Holds::FreeText,
            ),
        ],
    ),
    // --- reviews
    kind(
        "authorization.k8s.io",
        "SelfSubjectAccessReview",
        &SELF_ACCESS_REVIEW,
    ),
    kind(
        "authorization.k8s.io",
        "SubjectAccessReview",
        &ACCESS_REVIEW,
    ),
    kind(
        "authorization.k8s.io",
        "LocalSubjectAccessReview",
        &ACCESS_REVIEW,
    ),
    kind(
        "authorization.k8s.io",
        "SelfSubjectRulesReview",
        &[
            f(&[SPEC, one("namespace", &[1])], Holds::Namespace),
            f(
                &[one("status", &[3]), many("resourceRules", &[1])],
                Holds::RulesReviewStatus,
            ),
            f(
                &[one("status", &[3]), one("evaluationError", &[4])],
                Holds::FreeText,
            ),
        ],
    ),
    kind(
        "authentication.k8s.io",
        "TokenReview",
        &[f(&[one("status", &[3])], Holds::TokenReviewStatus)],
    ),
    kind(
        "authentication.k8s.io",
        "SelfSubjectReview",
        &[f(
            &[one("status", &[2]), one("userInfo", &[1])],
            Holds::UserInfo,
        )],
    ),
    // --- subresource bodies without a resource of their own: metadata only
    KindRules {
        group: "autoscaling",
        kind: "Scale",
        fields: &[],
        checks: &[],
        body_of: Some("scale"),
    },
    KindRules {
        group: "policy",
        kind: "Eviction",
        fields: &[],
        checks: &[],
        body_of: Some("eviction"),
    },
    KindRules {
        group: "authentication.k8s.io",
        kind: "TokenRequest",
        fields: &[],
        checks: &[],
        body_of: Some("token"),
    },
];

/// The rules of a kind (by upstream group); None for kinds with `metadata` rules only
/// (including every custom resource).
pub fn rules_for(group: &str, kind: &str) -> Option<&'static KindRules> {
    KINDS.iter().find(|k| k.group == group && k.kind == kind)
}

/// The body kind of a subresource that has one of its own (`scale` -> autoscaling Scale).
pub fn subresource_body(sub: &str) -> Option<&'static KindRules> {
    KINDS.iter().find(|k| k.body_of == Some(sub))
}

/// Top-level fields that hold an object reference in some kind (`involvedObject`, `regarding`,
/// `related`): their `<field>.namespace|name|apiVersion` field selectors are translated.
/// Deliberately the union over all kinds: a selector on another kind is refused upstream
/// anyway, and translating it there costs nothing.
pub fn reference_field_selectors() -> impl Iterator<Item = &'static str> {
    let mut seen: Vec<&'static str> = Vec::new();
    for k in KINDS {
        for r in k.fields {
            if r.holds == Holds::ObjectRef
                && let [step] = r.path
                && !step.repeated
                && !seen.contains(&step.json)
            {
                seen.push(step.json);
            }
        }
    }
    seen.into_iter()
}

/// Field names inside selectors paddock confines (a json-patch may not reach inside them by
/// index): every `NamespaceSelector` and `RoleSelector` field of the table. The number is the
/// depth below the field name at which an operation reaches inside one selector (a list of
/// selectors needs one more step: its index).
pub fn confined_selector_fields() -> Vec<(&'static str, usize)> {
    let mut out: Vec<(&'static str, usize)> = Vec::new();
    let mut add = |step: &Step| {
        let depth = if step.repeated { 2 } else { 1 };
        if !out.iter().any(|(n, _)| *n == step.json) {
            out.push((step.json, depth));
        }
    };
    fn visit(fields: &[FieldRule], add: &mut dyn FnMut(&Step)) {
        for r in fields {
            match r.holds {
                Holds::NamespaceSelector { .. } | Holds::RoleSelector => {
                    if let Some(last) = r.path.last() {
                        add(last);
                    }
                }
                Holds::Embed(s) => visit(s.fields, add),
                _ => {}
            }
        }
    }
    for k in KINDS {
        visit(k.fields, &mut add);
    }
    out
}

/// Whether a json-patch path (segments) addresses a forced, confining field as a whole (a
/// webhook's `namespaceSelector`: `webhooks/<i>/namespaceSelector`), which may not be removed.
pub fn is_forced_field(segs: &[&str]) -> bool {
    fn matches(path: &[Step], segs: &[&str]) -> bool {
        let Some((step, rest)) = path.split_first() else {
            return segs.is_empty();
        };
        let Some((first, more)) = segs.split_first() else {
            return false;
        };
        if *first != step.json {
            return false;
        }
        if step.repeated && !rest.is_empty() {
            let Some((idx, more)) = more.split_first() else {
                return false;
            };
            return idx.bytes().all(|b| b.is_ascii_digit())
                && !idx.is_empty()
                && matches(rest, more);
        }
        matches(rest, more)
    }
    KINDS.iter().flat_map(|k| k.fields).any(|r| {
        matches!(r.holds, Holds::NamespaceSelector { forced: true }) && matches(r.path, segs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_kind() {
        for (i, a) in KINDS.iter().enumerate() {
            assert!(
                !KINDS[i + 1..]
                    .iter()
                    .any(|b| a.group == b.group && a.kind == b.kind),
                "{}/{} has two rows",
                a.group,
                a.kind
            );
            for r in a.fields {
                assert!(
                    r.path.iter().all(|s| !s.pb.is_empty()),
                    "{}: a step without a protobuf field number",
                    a.kind
                );
            }
        }
    }

    #[test]
    fn derived_views_of_the_table() {
        let refs: Vec<&str> = reference_field_selectors().collect();
        assert_eq!(refs, vec!["involvedObject", "related", "regarding"]);
        let confined = confined_selector_fields();
        assert!(confined.contains(&("namespaceSelector", 1)));
        assert!(confined.contains(&("clusterRoleSelectors", 2)));
        assert!(is_forced_field(&["webhooks", "0", "namespaceSelector"]));
        assert!(!is_forced_field(&["webhooks", "x", "namespaceSelector"]));
        assert!(!is_forced_field(&["spec", "namespaceSelector"]));
        assert_eq!(subresource_body("scale").map(|r| r.kind), Some("Scale"));
        assert!(subresource_body("status").is_none());
    }
}
