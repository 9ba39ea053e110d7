//! The vocabulary of the rule table (`table.rs`): a field path's steps, what a field holds,
//! per-kind checks, and the constructors the table's rows are written with.

/// One step of a field path: its JSON key and the protobuf field numbers that lead to it.
/// There is more than one number where Go embeds a struct inline: JSON `spec.hostPath` is
/// protobuf `spec(2).persistentVolumeSource(2).hostPath(3)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub json: &'static str,
    pub pb: &'static [u32],
    /// A list: a JSON array, a repeated protobuf field.
    pub repeated: bool,
}

/// A single field.
pub const fn one(json: &'static str, pb: &'static [u32]) -> Step {
    Step {
        json,
        pb,
        repeated: false,
    }
}

/// A list field.
pub const fn many(json: &'static str, pb: &'static [u32]) -> Step {
    Step {
        json,
        pb,
        repeated: true,
    }
}

/// What a field holds, which decides its rule in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// A namespace name (or a list of them): prefixed up, own prefix stripped down.
    Namespace,
    /// The name of a PersistentVolume: prefixed, except provisioned `pvc-<uid>` names.
    VolumeName,
    /// A core/v1 ObjectReference: namespace, name of prefixed kinds, CR apiVersion.
    ObjectRef,
    /// A label selector that selects namespaces: `kubernetes.io/metadata.name` values mapped,
    /// ANDed with the tenant term. `forced`: created when absent (it is what confines).
    NamespaceSelector { forced: bool },
    /// A label selector over ClusterRoles (aggregation): ANDed with the tenant term.
    RoleSelector,
    /// RBAC subjects (identities mapped; a ClusterRoleBinding's stored in shadow form).
    Subjects { cluster: bool },
    /// An RBAC roleRef.
    RoleRef { cluster: bool },
    /// RBAC policy rules: apiGroups, and resourceNames of prefixed cluster-scoped kinds.
    PolicyRules { cluster: bool },
    /// Admission webhook rules: apiGroups, scope forced to Namespaced.
    WebhookRules,
    /// An admission policy's resource rules (NamedRuleWithOperations: the webhook rule
    /// inline, plus resourceNames): the same rules as [`Holds::WebhookRules`].
    PolicyRulesNamed,
    /// An admission policy's `paramKind`: a tenant CRD group prefixed; kinds whose objects
    /// are not all the tenant's refused.
    ParamKind,
    /// A binding's `policyName`: the tenant's cluster-scoped policy name, prefixed.
    PolicyName,
    /// A CEL expression of an admission policy: its reads of the request's namespace mapped
    /// into the tenant's names (rules/cel.rs).
    CelExpression,
    /// An admission webhook's clientConfig: relayed through paddock's admission listener when
    /// the catalog has a relay (rules/relay.rs), else service namespace prefixed; url refused.
    ClientConfig,
    /// A CRD conversion webhook's clientConfig: service namespace prefixed, url refused (the
    /// relay speaks AdmissionReview only).
    ConversionClientConfig,
    /// The API group of a tenant CRD.
    CrdGroup,
    /// The API group an APIService serves (`spec.group`): the tenant's own CRD group loses
    /// its prefix; a group the tenant does not see (another tenant's, a platform group its
    /// discovery hides) drops the object; built-in and visible groups stay (rules/apiservice.rs).
    ServedGroup,
    /// An APIService's name, `<version>.<group>`: its group part as [`Holds::ServedGroup`].
    ServedGroupName,
    /// An access review's resourceAttributes: namespace, group, name.
    ResourceAttributes,
    /// An access review's user, groups and extra; `writable`: translated on the way up
    /// (SubjectAccessReview), or only shown down (SelfSubjectAccessReview).
    ReviewIdentity { writable: bool },
    /// A SelfSubjectRulesReview's resourceRules (down only).
    RulesReviewStatus,
    /// An authentication UserInfo (down only).
    UserInfo,
    /// A TokenReview's status (down only): kept for a token of the tenant's own (mapped into
    /// its names), `authenticated: false` for any other (rules/reviews.rs).
    TokenReviewStatus,
    /// Free text that may name upstream objects (down only, through `text_down`).
    FreeText,
    /// A FlowSchema's `priorityLevelConfiguration.name`: a tenant level, prefixed.
    PriorityLevelRef,
    /// A FlowSchema rule's subjects (users, groups, service accounts) mapped into the tenant.
    FlowSubjects,
    /// A FlowSchema resource rule's `namespaces`: prefixed, `*` kept.
    FlowNamespaces,
    /// A whole PriorityLevelConfiguration: `Exempt` refused, `nominalConcurrencyShares` held
    /// at 0 upstream and kept in an annotation (rules/flowcontrol.rs).
    PriorityLevel,
    /// An embedded structure with rules of its own (a pod spec, a claim spec).
    Embed(&'static Struct),
}

/// A named structure embedded in several kinds.
#[derive(Debug, PartialEq, Eq)]
pub struct Struct {
    pub name: &'static str,
    pub fields: &'static [FieldRule],
}

/// One rule: the field at `path` holds `holds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldRule {
    pub path: &'static [Step],
    pub holds: Holds,
}

pub(super) const fn f(path: &'static [Step], holds: Holds) -> FieldRule {
    FieldRule { path, holds }
}

/// A per-kind check that refuses a body (403).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The field must be absent.
    Absent {
        path: &'static [Step],
        reason: &'static str,
    },
}

/// The rules of one kind.
#[derive(Debug, PartialEq, Eq)]
pub struct KindRules {
    /// Upstream API group ("" for core).
    pub group: &'static str,
    pub kind: &'static str,
    pub fields: &'static [FieldRule],
    pub checks: &'static [Check],
    /// For kinds that are the body of a subresource and have no resource of their own
    /// (Scale, Eviction, TokenRequest): that subresource.
    pub body_of: Option<&'static str>,
}

pub(super) const fn kind(
    group: &'static str,
    kind: &'static str,
    fields: &'static [FieldRule],
) -> KindRules {
    KindRules {
        group,
        kind,
        fields,
        checks: &[],
        body_of: None,
    }
}
