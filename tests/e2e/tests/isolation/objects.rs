//! The objects of the world: CRDs, webhooks, ClusterRoles and reviews the cases send, and
//! the platform's, victim's and attacker's objects set up before them.

pub(crate) fn crd(plural: &str, group: &str, scope: &str) -> String {
    let kind = {
        let s = plural.trim_end_matches('s');
        let mut c = s.chars();
        c.next()
            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
            .unwrap_or_default()
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: {plural}.{group}}}\nspec:\n  group: {group}\n  scope: {scope}\n  names: {{plural: {plural}, singular: {s}, kind: {kind}}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}\n",
        s = plural.trim_end_matches('s')
    )
}

pub(crate) fn webhook(name: &str, client: &str, scope: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: {name}}}\nwebhooks:\n- name: v.{name}.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Ignore\n  timeoutSeconds: 2\n  clientConfig: {{{client}}}\n  rules: [{{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE], resources: [gadgets], scope: {scope}}}]\n"
    )
}

/// A tenant webhook as it would be written upstream by hand (bypass): labelled, with or without
/// the confining selector.
pub(crate) fn webhook_up(name: &str, svc_ns: &str, scope: &str, confined: bool) -> String {
    let sel = if confined {
        "  namespaceSelector: {matchExpressions: [{key: paddock.io/tenant, operator: In, values: [alphaa]}]}\n"
    } else {
        ""
    };
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: {name}, labels: {{paddock.io/tenant: alphaa}}}}\nwebhooks:\n- name: v.{name}.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Ignore\n  timeoutSeconds: 2\n{sel}  clientConfig: {{service: {{name: hooksvc, namespace: {svc_ns}, port: 443}}}}\n  rules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [secrets], scope: {scope}}}]\n"
    )
}

pub(crate) const AGG_EDIT: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: sneaky, labels: {rbac.authorization.k8s.io/aggregate-to-edit: 'true'}}\nrules: [{apiGroups: [''], resources: [nodes], verbs: [update]}]\n";
pub(crate) const AGG_OWN: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: part-of-mine, labels: {alpha.example.com/aggregate-to-mine: 'true'}}\nrules: [{apiGroups: [''], resources: [configmaps], verbs: [get]}]\n";
pub(crate) const AGG_ALL: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: collect-all}\naggregationRule: {clusterRoleSelectors: [{}]}\nrules: []\n";
pub(crate) const AGG_ALL_UP: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: alphaa-collect-all2, labels: {paddock.io/tenant: alphaa}}\naggregationRule: {clusterRoleSelectors: [{}]}\nrules: []\n";
pub(crate) const SAR_OWN_SA: &str = "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec: {user: 'system:serviceaccount:web:robot', resourceAttributes: {namespace: web, verb: get, resource: secrets}}\n";
/// Through paddock the names map into the attacker's tenant; in the bypass they are upstream names.
pub(crate) const SAR_VICTIM_SA: &str = "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec: {user: 'system:serviceaccount:bravoo-vault-ns:b-sa', resourceAttributes: {namespace: bravoo-vault-ns, verb: get, resource: secrets}}\n";
/// The conformance SubjectReview shape (a user with a service account's groups), in the
/// attacker's namespace, whose service accounts `a-sa-group-view` lets view.
pub(crate) const LSAR_ALL_SA_OWN: &str = "apiVersion: authorization.k8s.io/v1\nkind: LocalSubjectAccessReview\nmetadata: {namespace: web}\nspec: {user: e2e, groups: ['system:authenticated', 'system:serviceaccounts', 'system:serviceaccounts:web'], resourceAttributes: {namespace: web, verb: list, resource: configmaps}}\n";
/// The same about the victim's namespace (upstream names), whose service accounts the victim
/// lets view (`b-sa-group-view`).
pub(crate) const SAR_ALL_SA_VICTIM: &str = "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec: {user: e2e, groups: ['system:serviceaccounts', 'system:serviceaccounts:bravoo-vault-ns'], resourceAttributes: {namespace: bravoo-vault-ns, verb: list, resource: configmaps}}\n";
pub(crate) const SAR_OTHER: &str = "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec: {user: 'paddock:bravoo:admin', resourceAttributes: {namespace: vault-ns, verb: get, resource: secrets}}\n";

pub(crate) const PLATFORM: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: plat-core}
---
apiVersion: v1
kind: Secret
metadata: {name: plat-token, namespace: plat-core}
stringData: {token: s3cr3t}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: plat-sa, namespace: plat-core}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: plat-reader}
rules: [{apiGroups: [''], resources: [secrets], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: plat-sa-reader, namespace: plat-core}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: plat-reader}
subjects: [{kind: ServiceAccount, name: plat-sa, namespace: plat-core}]
---
apiVersion: v1
kind: Namespace
metadata: {name: plat-hole}
---
# A platform admin's mistake: the attacker's upstream user may edit a platform namespace.
# Upstream RBAC lets its writes there through; only the admission guard refuses them
# (case guard-rbac-hole).
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: hole, namespace: plat-hole}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: 'paddock:alphaa:admin'}]
"#;

pub(crate) fn victim_objects() -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: vault-ns}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: crown-jewels, namespace: vault-ns}}\nstringData: {{k: v}}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: b-sa, namespace: vault-ns}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b-cm, namespace: vault-ns}}\ndata: {{k: v}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: b-role}}\nrules: [{{apiGroups: [''], resources: [vaultitems], verbs: [get]}}]\n---\n{}---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: b-pv}}\nspec: {{capacity: {{storage: 1Gi}}, accessModes: [ReadWriteOnce], csi: {{driver: pv.example.com, volumeHandle: b-pv}}, persistentVolumeReclaimPolicy: Retain, storageClassName: ''}}\n",
        crd("gadgets", "example.com", "Namespaced")
    )
}

pub(crate) fn attacker_objects() -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: web, labels: {{team: alpha}}}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: own-secret, namespace: web}}\nstringData: {{k: v}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: own-cm, namespace: web}}\ndata: {{k: v}}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: robot, namespace: web}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: a-role}}\nrules: [{{apiGroups: [''], resources: [secrets, configmaps], verbs: [get, list, watch]}}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: robot-secrets}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: a-role}}\nsubjects: [{{kind: ServiceAccount, name: robot, namespace: web}}]\n---\n{}---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: a-pv}}\nspec: {{capacity: {{storage: 1Gi}}, accessModes: [ReadWriteOnce], csi: {{driver: pv.example.com, volumeHandle: a-pv}}, persistentVolumeReclaimPolicy: Retain, storageClassName: ''}}\n",
        crd("gadgets", "example.com", "Namespaced")
    )
}

pub(crate) fn gadget(name: &str, ns: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: {name}, namespace: {ns}}}\nspec: {{x: 1}}\n"
    )
}
