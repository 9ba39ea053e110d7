//! The template record, its validation, and the stamping decisions.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::rules::object_up;
use crate::tenant::TenantId;

/// Label on a namespace asking for an optional template: `templates.paddock.io/<name>: "true"`.
pub const REQUEST_LABEL_PREFIX: &str = "templates.paddock.io/";
/// Label on every stamped object: the template it came from.
pub const TEMPLATE_LABEL: &str = "paddock.io/template";
/// Label on the objects of a mandatory template: the admission guard refuses tenants any
/// change or deletion of an object carrying it, and any setting or removal of it.
pub const LOCKED_LABEL: &str = "paddock.io/template-locked";
/// Annotation on a tenant namespace: the templates it has, `name=<generation>/<state>` each,
/// comma-separated, sorted by name (state `in-sync` or `failed`).
pub const TEMPLATES_ANNOTATION: &str = "paddock.io/templates";
/// The policy name refusals carry.
pub const POLICY: &str = "namespace-templates";
/// The largest number of objects one template may hold.
pub const MAX_OBJECTS: usize = 50;

/// One kind a template may stamp: namespaced, tenant-owned, and translated by the rule table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateKind {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub resource: &'static str,
}

/// The kinds a template may hold (policy objects and the configuration a platform hands every
/// namespace). Workloads are not offered: a stamped Deployment would run in every namespace.
pub const TEMPLATE_KINDS: &[TemplateKind] = &[
    TemplateKind {
        api_version: "v1",
        kind: "ConfigMap",
        resource: "configmaps",
    },
    TemplateKind {
        api_version: "v1",
        kind: "Secret",
        resource: "secrets",
    },
    TemplateKind {
        api_version: "v1",
        kind: "ServiceAccount",
        resource: "serviceaccounts",
    },
    TemplateKind {
        api_version: "v1",
        kind: "LimitRange",
        resource: "limitranges",
    },
    TemplateKind {
        api_version: "v1",
        kind: "ResourceQuota",
        resource: "resourcequotas",
    },
    TemplateKind {
        api_version: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        resource: "networkpolicies",
    },
    TemplateKind {
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        resource: "roles",
    },
    TemplateKind {
        api_version: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        resource: "rolebindings",
    },
    TemplateKind {
        api_version: "policy/v1",
        kind: "PodDisruptionBudget",
        resource: "poddisruptionbudgets",
    },
];

/// Names paddock keeps in every tenant namespace for itself; no template may take them.
const RESERVED_OBJECT_NAMES: &[&str] = &[crate::provision::NAMESPACE_ADMIN_BINDING];

/// A namespace template as stored (`<prefix>/templates/<name>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceTemplate {
    pub name: String,
    /// Stamped into every namespace of its tenants, locked; otherwise on request only.
    pub mandatory: bool,
    /// The tenants it applies to; empty = every tenant.
    #[serde(default)]
    pub tenants: Vec<String>,
    /// The objects, in the tenant's view, without namespace.
    pub manifests: Vec<Value>,
    /// Raised by every change; namespaces record the generation they carry.
    pub generation: u64,
    #[serde(default)]
    pub created: String,
    /// Shipped with paddock (computed from the configuration, not stored; read-only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub builtin: bool,
}

/// Why a template is refused (400 at the admin API).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("namespace template {name}: {reason}")]
pub struct TemplateError {
    pub name: String,
    pub reason: String,
}

fn refuse(name: &str, reason: impl Into<String>) -> TemplateError {
    TemplateError {
        name: name.to_string(),
        reason: reason.into(),
    }
}

/// The allowed kind of an object, by its `apiVersion` and `kind`.
pub fn template_kind(obj: &Value) -> Option<&'static TemplateKind> {
    let av = obj["apiVersion"].as_str()?;
    let kind = obj["kind"].as_str()?;
    TEMPLATE_KINDS
        .iter()
        .find(|k| k.api_version == av && k.kind == kind)
}

fn allowed_kinds() -> String {
    TEMPLATE_KINDS
        .iter()
        .map(|k| format!("{} ({})", k.kind, k.api_version))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A DNS-1123 label: the template's name is also a label key's name part.
pub fn valid_template_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 63
        && n.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !n.starts_with('-')
        && !n.ends_with('-')
}

/// Checks a template's name, tenants and objects. Each object must be of an allowed kind,
/// name itself, carry no namespace and no label of paddock's, appear once, and translate up
/// with the rule table (checked for a probe tenant over `ctx`'s catalog), so that stamping
/// can only fail upstream, never in translation.
pub fn validate(t: &NamespaceTemplate, ctx: &TenantContext) -> Result<(), TemplateError> {
    let name = t.name.as_str();
    if !valid_template_name(name) {
        return Err(refuse(
            name,
            "the name must be a DNS label (lower-case letters, digits and '-', at most 63 characters)",
        ));
    }
    for tid in &t.tenants {
        TenantId::parse(tid).map_err(|e| refuse(name, format!("tenant {tid:?}: {e}")))?;
    }
    if t.manifests.is_empty() {
        return Err(refuse(name, "it holds no objects"));
    }
    if t.manifests.len() > MAX_OBJECTS {
        return Err(refuse(
            name,
            format!(
                "it holds {} objects; at most {MAX_OBJECTS}",
                t.manifests.len()
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, obj) in t.manifests.iter().enumerate() {
        let what = format!(
            "object {} ({}/{})",
            i + 1,
            obj["kind"].as_str().unwrap_or("?"),
            obj["metadata"]["name"].as_str().unwrap_or("?")
        );
        let Some(kind) = template_kind(obj) else {
            return Err(refuse(
                name,
                format!(
                    "{what}: kind {} of apiVersion {} cannot be stamped by a namespace template; allowed: {}",
                    obj["kind"].as_str().unwrap_or("(none)"),
                    obj["apiVersion"].as_str().unwrap_or("(none)"),
                    allowed_kinds()
                ),
            ));
        };
        let meta = &obj["metadata"];
        let Some(oname) = meta["name"].as_str().filter(|n| !n.is_empty()) else {
            return Err(refuse(
                name,
                format!("{what}: metadata.name is required (generateName is not offered)"),
            ));
        };
        if RESERVED_OBJECT_NAMES.contains(&oname) && kind.kind == "RoleBinding" {
            return Err(refuse(
                name,
                format!("{what}: the name {oname} is paddock's own"),
            ));
        }
        if meta.get("namespace").is_some_and(|n| !n.is_null()) {
            return Err(refuse(
                name,
                format!(
                    "{what}: metadata.namespace must not be set: the object is stamped into each namespace"
                ),
            ));
        }
        if meta.get("generateName").is_some() {
            return Err(refuse(name, format!("{what}: generateName is not offered")));
        }
        if let Some(labels) = meta["labels"].as_object()
            && let Some(k) = labels.keys().find(|k| reserved_label(k))
        {
            return Err(refuse(
                name,
                format!("{what}: label {k} is reserved by paddock"),
            ));
        }
        if !seen.insert((kind.resource, oname.to_string())) {
            return Err(refuse(
                name,
                format!("{what}: a {} named {oname} appears twice", kind.kind),
            ));
        }
        let tenant = TenantId::parse(PROBE_TENANT).map_err(|e| refuse(name, e.to_string()))?;
        let probe = TenantContext {
            tenant,
            catalog: ctx.catalog.clone(),
        };
        stamped_object(&probe, t, obj, &probe.tenant.upstream_name("probe"))
            .map_err(|e| refuse(name, format!("{what}: {e}")))?;
    }
    Ok(())
}

/// The tenant a template is translated for at validation (nothing is written for it).
const PROBE_TENANT: &str = "tmplpr";

fn reserved_label(k: &str) -> bool {
    k.starts_with("paddock.io/") || k.starts_with(REQUEST_LABEL_PREFIX)
}

/// Two templates must not stamp the same object: the one being written against the others.
pub fn check_overlap(
    t: &NamespaceTemplate,
    others: &[NamespaceTemplate],
) -> Result<(), TemplateError> {
    let mine: BTreeSet<(&str, &str)> = object_keys(t).collect();
    for o in others.iter().filter(|o| o.name != t.name) {
        if let Some((res, n)) = object_keys(o).find(|k| mine.contains(k)) {
            return Err(refuse(
                &t.name,
                format!(
                    "{res}/{n} is already stamped by namespace template {}",
                    o.name
                ),
            ));
        }
    }
    Ok(())
}

fn object_keys(t: &NamespaceTemplate) -> impl Iterator<Item = (&'static str, &str)> {
    t.manifests
        .iter()
        .filter_map(|o| Some((template_kind(o)?.resource, o["metadata"]["name"].as_str()?)))
}

impl NamespaceTemplate {
    /// Whether the template applies to tenant `t` at all.
    pub fn applies_to(&self, t: &TenantId) -> bool {
        self.tenants.is_empty() || self.tenants.iter().any(|x| x == t.as_str())
    }
}

/// Whether a namespace's labels ask for optional template `name`.
pub fn requested(labels: &Map<String, Value>, name: &str) -> bool {
    labels
        .get(&format!("{REQUEST_LABEL_PREFIX}{name}"))
        .and_then(Value::as_str)
        == Some("true")
}

/// The templates namespace `ns` of tenant `t` should carry: every mandatory one of the tenant,
/// and each optional one of the tenant the namespace's labels ask for. Sorted by name.
pub fn wanted<'a>(
    templates: &'a [NamespaceTemplate],
    t: &TenantId,
    ns: &Value,
) -> Vec<&'a NamespaceTemplate> {
    let empty = Map::new();
    let labels = ns["metadata"]["labels"].as_object().unwrap_or(&empty);
    let mut out: Vec<&NamespaceTemplate> = templates
        .iter()
        .filter(|x| x.applies_to(t) && (x.mandatory || requested(labels, &x.name)))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The upstream form of one template object for `upstream_ns`: translated up by the rule
/// table as a tenant's create would be, then labelled with its template (and locked when the
/// template is mandatory). Returns the object's upstream path and body.
pub fn stamped_object(
    ctx: &TenantContext,
    t: &NamespaceTemplate,
    obj: &Value,
    upstream_ns: &str,
) -> Result<(String, Value), TranslateError> {
    let kind = template_kind(obj)
        .ok_or_else(|| TranslateError::BadRequest("kind not offered in templates".into()))?;
    let view_ns = ctx.tenant.strip(upstream_ns).ok_or_else(|| {
        TranslateError::Internal(format!(
            "{upstream_ns} is not a namespace of tenant {}",
            ctx.tenant
        ))
    })?;
    let mut o = obj.clone();
    let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Err(TranslateError::BadRequest("metadata is required".into()));
    };
    meta.insert("namespace".into(), Value::String(view_ns.to_string()));
    object_up(ctx, &mut o, Some(view_ns))?;
    let name = o["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let labels = o["metadata"].as_object_mut().map(|m| {
        m.entry("labels")
            .or_insert_with(|| Value::Object(Map::new()))
    });
    if let Some(Value::Object(l)) = labels {
        l.insert(TEMPLATE_LABEL.into(), Value::String(t.name.clone()));
        if t.mandatory {
            l.insert(LOCKED_LABEL.into(), Value::String("true".into()));
        }
    }
    Ok((object_path(kind, upstream_ns, &name), o))
}

/// The upstream path of an object of `kind` in `upstream_ns`.
pub fn object_path(kind: &TemplateKind, upstream_ns: &str, name: &str) -> String {
    collection_path(kind, upstream_ns) + "/" + name
}

/// The upstream collection path of `kind` in `upstream_ns`.
pub fn collection_path(kind: &TemplateKind, upstream_ns: &str) -> String {
    if kind.api_version == "v1" {
        format!("/api/v1/namespaces/{upstream_ns}/{}", kind.resource)
    } else {
        format!(
            "/apis/{}/namespaces/{upstream_ns}/{}",
            kind.api_version, kind.resource
        )
    }
}

/// One entry of the namespace annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub generation: u64,
    pub in_sync: bool,
}

/// Parses `paddock.io/templates` (entries that do not parse are ignored: they are restamped).
pub fn parse_annotation(s: &str) -> BTreeMap<String, Stamp> {
    s.split(',')
        .filter_map(|e| {
            let (name, rest) = e.trim().split_once('=')?;
            let (generation, state) = rest.split_once('/')?;
            Some((
                name.to_string(),
                Stamp {
                    generation: generation.parse().ok()?,
                    in_sync: state == "in-sync",
                },
            ))
        })
        .collect()
}

/// Writes the annotation (sorted by name).
pub fn format_annotation(stamps: &BTreeMap<String, Stamp>) -> String {
    stamps
        .iter()
        .map(|(n, s)| {
            format!(
                "{n}={}/{}",
                s.generation,
                if s.in_sync { "in-sync" } else { "failed" }
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The annotation a namespace carries now.
pub fn current_stamps(ns: &Value) -> BTreeMap<String, Stamp> {
    ns["metadata"]["annotations"][TEMPLATES_ANNOTATION]
        .as_str()
        .map(parse_annotation)
        .unwrap_or_default()
}

/// Whether a namespace must be (re)stamped: a wanted template it lacks, carries at another
/// generation, or failed; or a template it carries that it should no longer have.
pub fn needs_stamp(ns: &Value, wanted: &[&NamespaceTemplate]) -> bool {
    let cur = current_stamps(ns);
    cur.len() != wanted.len()
        || wanted.iter().any(|w| {
            cur.get(&w.name)
                != Some(&Stamp {
                    generation: w.generation,
                    in_sync: true,
                })
        })
}

/// A locked object found in a namespace: its kind, name and the template its label names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundLocked {
    pub kind: &'static TemplateKind,
    pub name: String,
    pub template: String,
}

/// The locked objects that no wanted mandatory template stamps any more (the template was
/// deleted, no longer names the tenant, or dropped the object): they are deleted. Objects of
/// optional templates are never locked, so they are never found here: they are the tenant's.
pub fn stale_locked<'a>(
    found: &'a [FoundLocked],
    wanted: &[&NamespaceTemplate],
) -> Vec<&'a FoundLocked> {
    let keep: BTreeSet<(&str, &str, &str)> = wanted
        .iter()
        .filter(|w| w.mandatory)
        .flat_map(|w| object_keys(w).map(move |(r, n)| (w.name.as_str(), r, n)))
        .collect();
    found
        .iter()
        .filter(|f| !keep.contains(&(f.template.as_str(), f.kind.resource, f.name.as_str())))
        .collect()
}
