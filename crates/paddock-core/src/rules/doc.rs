//! The rule table as Markdown, for docs/translation.md (`tests/rule_table_doc.rs` fails when
//! the document is stale and prints the command that regenerates it).

use super::table::KINDS;
use crate::rules::schema::Check;
use crate::rules::schema::FieldRule;
use crate::rules::schema::Holds;
use crate::rules::schema::Step;

/// Markers around the generated part of docs/translation.md.
pub const BEGIN: &str =
    "<!-- BEGIN GENERATED RULE TABLE (cargo run -p paddock-core --example rule_table) -->";
pub const END: &str = "<!-- END GENERATED RULE TABLE -->";

/// What a rule does, up and down, in a few words.
pub fn describe(h: Holds) -> (&'static str, &'static str, &'static str) {
    match h {
        Holds::Namespace => ("namespace", "prefixed", "own prefix stripped"),
        Holds::VolumeName => (
            "PersistentVolume name",
            "prefixed, except provisioned `pvc-<uid>`",
            "own prefix stripped",
        ),
        Holds::ObjectRef => (
            "object reference",
            "namespace prefixed, name of prefixed cluster-scoped kinds prefixed, CR apiVersion; forbidden kind 403",
            "reverse (own CR group stripped)",
        ),
        Holds::NamespaceSelector { forced: false } => (
            "namespace selector",
            "`kubernetes.io/metadata.name` values prefixed, ANDed with `paddock.io/tenant In [<tid>]`; tenant label 403",
            "reverse",
        ),
        Holds::NamespaceSelector { forced: true } => (
            "namespace selector (confining)",
            "as a namespace selector, and created when absent; `null` in a strategic merge patch 403",
            "reverse",
        ),
        Holds::RoleSelector => (
            "ClusterRole selector",
            "ANDed with `paddock.io/tenant In [<tid>]`; tenant label 403",
            "term removed",
        ),
        Holds::Subjects { cluster: false } => (
            "subjects",
            "users/groups mapped, ServiceAccount namespace prefixed; reserved identities 403",
            "mapped; foreign identities dropped",
        ),
        Holds::Subjects { cluster: true } => (
            "subjects (cluster)",
            "as subjects, SA namespace required, stored in the inert shadow form",
            "unshadowed, mapped; foreign identities dropped",
        ),
        Holds::RoleRef { cluster: false } => (
            "role ref",
            "ClusterRole prefixed except `admin`/`edit`/`view`; Role unchanged",
            "own prefix stripped",
        ),
        Holds::RoleRef { cluster: true } => (
            "role ref (cluster)",
            "always a tenant ClusterRole; `kind: Role` 422",
            "own prefix stripped",
        ),
        Holds::PolicyRules { cluster: false } => (
            "policy rules",
            "`apiGroups` of tenant CRD groups prefixed",
            "groups stripped",
        ),
        Holds::PolicyRules { cluster: true } => (
            "policy rules (cluster)",
            "`apiGroups` prefixed; `resourceNames` of prefixed kinds prefixed; mixing or `*` with names 422",
            "groups and names stripped",
        ),
        Holds::WebhookRules => (
            "webhook rules",
            "`apiGroups` like RBAC; scope forced to Namespaced, `Cluster` only for namespaces (else 403)",
            "groups stripped",
        ),
        Holds::PolicyRulesNamed => (
            "admission policy rules",
            "as webhook rules (`resourceNames` kept)",
            "groups stripped",
        ),
        Holds::ParamKind => (
            "admission policy paramKind",
            "group of a tenant CRD prefixed; a built-in kind must be namespaced and the tenant's (else 403)",
            "group stripped",
        ),
        Holds::PolicyName => (
            "admission policy name",
            "prefixed (a binding names only the tenant's policies)",
            "stripped",
        ),
        Holds::CelExpression => (
            "admission policy CEL expression",
            "reads of the request's namespace (`namespaceObject.metadata.name`, `object.metadata.namespace`, `oldObject.metadata.namespace`, `request.namespace`) mapped to the tenant's names",
            "the exact rewritten form back",
        ),
        Holds::ClientConfig => (
            "admission webhook client config",
            "relayed: paddock's admission URL and CA, the tenant's service, path and caBundle in the path (docs/webhooks.md); written whole (a patch of part of it 422); `url` 403",
            "the tenant's service, path and caBundle back",
        ),
        Holds::ConversionClientConfig => (
            "CRD conversion webhook client config",
            "`service.namespace` prefixed; `url` 403",
            "namespace stripped",
        ),
        Holds::CrdGroup => (
            "CRD group",
            "prefixed; built-in groups 422",
            "stripped; other tenants' CRDs dropped",
        ),
        Holds::ServedGroup => (
            "API group served",
            "as in RBAC rules (the kind is never written: shared read-only)",
            "own CRD group stripped, built-in and visible platform groups kept; any other drops the object",
        ),
        Holds::ServedGroupName => (
            "name `<version>.<group>`",
            "group part as in RBAC rules (a GET, a field selector)",
            "group part as the API group served",
        ),
        Holds::ResourceAttributes => (
            "resource attributes",
            "namespace prefixed, group like RBAC, name of prefixed kinds prefixed",
            "reverse",
        ),
        Holds::ReviewIdentity { writable: true } => (
            "review identity",
            "user/groups mapped (`system:authenticated` and `system:serviceaccounts` kept: the platform's bindings to them are what every such identity of the tenant's cluster holds; no tenant binding names them); tenant users get their upstream groups; reserved extra 403",
            "mapped, additions removed",
        ),
        Holds::ReviewIdentity { writable: false } => (
            "review identity (self)",
            "untouched (the apiserver fills it in)",
            "mapped, additions removed",
        ),
        Holds::RulesReviewStatus => (
            "rules review status",
            "—",
            "groups and names stripped, invisible groups removed",
        ),
        Holds::UserInfo => (
            "user info",
            "—",
            "user and groups mapped, `paddock:tenant:*` and the extra removed",
        ),
        Holds::TokenReviewStatus => (
            "token review status",
            "—",
            "kept (user info mapped) for a token of the tenant's own; any other token is `authenticated: false`",
        ),
        Holds::FreeText => ("free text", "—", "`text_down`"),
        Holds::PriorityLevelRef => (
            "priority level name",
            "prefixed (a FlowSchema sends requests only to the tenant's levels; `exempt` dangles)",
            "stripped",
        ),
        Holds::FlowSubjects => (
            "FlowSchema subjects",
            "users/groups mapped, `system:authenticated` to `paddock:tenant:<tid>`, ServiceAccount namespace prefixed; `*` and reserved identities 403",
            "mapped",
        ),
        Holds::FlowNamespaces => (
            "FlowSchema namespaces",
            "prefixed, `*` kept",
            "own prefix stripped",
        ),
        Holds::PriorityLevel => (
            "priority level",
            "`Exempt` 403; `nominalConcurrencyShares` held at 0, the tenant's value in annotation `paddock.io/nominal-concurrency-shares`",
            "shares back from the annotation, annotation removed",
        ),
        Holds::Embed(s) => (s.name, "its rules below", "its rules below"),
    }
}

fn json_path(path: &[Step]) -> String {
    if path.is_empty() {
        return "(the object)".to_owned();
    }
    let mut out = String::new();
    for (i, s) in path.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        out.push_str(s.json);
        if s.repeated {
            out.push_str("[]");
        }
    }
    out
}

fn pb_path(path: &[Step]) -> String {
    path.iter()
        .map(|s| {
            s.pb.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(".")
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn rows(out: &mut String, who: &str, fields: &[FieldRule]) {
    for r in fields {
        let (what, up, down) = describe(r.holds);
        out.push_str(&format!(
            "| {who} | `{}` | {} | {what} | {up} | {down} |\n",
            json_path(r.path),
            pb_path(r.path)
        ));
    }
}

/// The generated section (between [`BEGIN`] and [`END`], exclusive).
pub fn markdown() -> String {
    let mut out = String::new();
    out.push_str("| kind | field (JSON) | protobuf field numbers | holds | up | down |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    out.push_str("| every kind | `metadata` | 1 | ObjectMeta | see the table above | see the table above |\n");
    let mut embedded = Vec::new();
    for k in KINDS {
        let who = if k.group.is_empty() {
            format!("{} (core)", k.kind)
        } else {
            format!("{} ({})", k.kind, k.group)
        };
        if let Some(sub) = k.body_of {
            out.push_str(&format!(
                "| {who} | — | — | body of subresource `{sub}` | `metadata` only | `metadata` only |\n"
            ));
        }
        rows(&mut out, &who, k.fields);
        for c in k.checks {
            match c {
                Check::Absent { path, reason } => out.push_str(&format!(
                    "| {who} | `{}` | {} | check | present -> 403 ({reason}) | — |\n",
                    json_path(path),
                    pb_path(path)
                )),
            }
        }
        for r in k.fields {
            collect_embedded(r.holds, &mut embedded);
        }
    }
    for s in embedded {
        rows(&mut out, &format!("*{}*", s.name), s.fields);
    }
    out.push_str("| every custom resource | `apiVersion` | — | API group/version | tenant CRD group prefixed | stripped |\n");
    out
}

fn collect_embedded(h: Holds, out: &mut Vec<&'static crate::rules::schema::Struct>) {
    if let Holds::Embed(s) = h {
        if !out.iter().any(|x| x.name == s.name) {
            out.push(s);
        }
        for r in s.fields {
            collect_embedded(r.holds, out);
        }
    }
}

/// `doc` with the part between [`BEGIN`] and [`END`] replaced by [`markdown`]; None when the
/// markers are missing.
pub fn splice_into(doc: &str) -> Option<String> {
    let start = doc.find(BEGIN)? + BEGIN.len();
    let end = doc[start..].find(END)? + start;
    Some(format!("{}\n{}{}", &doc[..start], markdown(), &doc[end..]))
}
