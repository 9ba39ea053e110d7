//! Object rules, shared by request and response sides: every field of every kind that names
//! something, moved into the tenant's space on the way up and back on the way down.
//!
//! The rules only touch the fields they know; every other field is kept exactly as it is
//! (serde_json with `preserve_order` keeps key order too).

use serde_json::{Map, Value, json};

use crate::catalog::{Policy, ResourceInfo, Scope, join_api_version, split_api_version};
use crate::error::TranslateError;
use crate::identity::{
    cluster_shadow, cluster_unshadow, map_group_down, map_group_up, map_user_down,
    map_user_info_group_down, map_user_up, tenant_group,
};
use crate::request::{
    TenantContext, api_version_up, check_crd_group, is_dns_label, name_down, name_up,
    resolve_ref_kind,
};
use crate::tenant::{
    NAMESPACE_NAME_LABEL, NameKind, TENANT_ID_LEN, TENANT_LABEL, TenantId, check_prefixed_len,
    tenant_of,
};

/// Whether an upstream object belongs in the tenant's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Keep,
    /// The object is not the tenant's (list item / watch event removed).
    Drop,
}

/// How complete the object given to [`object_up_with`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpMode {
    /// A whole object (create, update) or a server-side apply configuration: paddock may add
    /// fields (the tenant label, a webhook's namespaceSelector).
    Full,
    /// An RFC 7386 merge patch: present fields replace, arrays replace whole.
    MergePatch,
    /// A strategic merge patch: lists with merge keys are merged element by element, so a
    /// missing field in an element keeps the stored (already translated) value.
    StrategicMerge,
}

/// The ClusterRoles that a RoleBinding may reference without a tenant prefix: the built-in
/// aggregated user-facing roles, which grant nothing outside the binding's namespace.
pub const SHARED_BINDABLE_CLUSTER_ROLES: &[&str] = &["admin", "edit", "view"];
/// Label-key prefix of the platform's role aggregation; refused on tenant ClusterRoles.
pub const AGGREGATE_LABEL_PREFIX: &str = "rbac.authorization.k8s.io/aggregate-to-";

fn bad(m: impl Into<String>) -> TranslateError {
    TranslateError::BadRequest(m.into())
}

fn tenant_expr(t: &TenantId) -> Value {
    json!({"key": TENANT_LABEL, "operator": "In", "values": [t.as_str()]})
}

// ---------------------------------------------------------------------------------------------
// Up: tenant view -> upstream

/// Tenant view -> upstream, for request bodies (create/update, and the object inside apply
/// patches). Refuses names that do not fit after prefixing, unmappable identities, and
/// references to things outside the tenant. Stamps the tenant label on namespaces,
/// cluster-scoped objects and CRDs. `path_namespace` is the namespace from the URL, if any.
pub fn object_up(
    ctx: &TenantContext,
    obj: &mut Value,
    path_namespace: Option<&str>,
) -> Result<(), TranslateError> {
    object_up_with(ctx, obj, None, path_namespace, UpMode::Full)
}

/// [`object_up`] with the resource the URL names (used when the body carries no `kind`, as
/// merge patches usually do) and the completeness of the body.
pub fn object_up_with(
    ctx: &TenantContext,
    obj: &mut Value,
    hint: Option<&ResourceInfo>,
    path_namespace: Option<&str>,
    mode: UpMode,
) -> Result<(), TranslateError> {
    let Value::Object(o) = obj else {
        return Err(bad("request body must be a JSON object"));
    };
    let av = o
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let kind = o.get("kind").and_then(Value::as_str).map(str::to_owned);
    let info = match (av.as_deref(), kind.as_deref()) {
        (_, Some("DeleteOptions")) => return check_delete_options(o),
        (Some(av), Some(kind)) => body_kind(ctx, av, kind, hint)?,
        (None, None) => hint
            .cloned()
            .ok_or_else(|| bad("request body must have apiVersion and kind"))?,
        _ => {
            return Err(bad(
                "request body must have both apiVersion and kind, or neither",
            ));
        }
    };
    match info.policy {
        Policy::TenantOwned => {}
        Policy::SharedReadOnly => {
            return Err(TranslateError::forbidden(format!(
                "{} objects are shared read-only in this cluster",
                info.kind
            )));
        }
        Policy::Forbidden => {
            return Err(TranslateError::forbidden(format!(
                "{} objects are not available to tenants of this cluster",
                info.kind
            )));
        }
    }
    // A top-level `$patch: replace` makes a strategic merge patch a whole object.
    let mode = if o.get("$patch").and_then(Value::as_str) == Some("replace") {
        UpMode::Full
    } else {
        mode
    };
    up_resource(ctx, o, &info, path_namespace, mode)
}

fn check_delete_options(o: &Map<String, Value>) -> Result<(), TranslateError> {
    // DeleteOptions carry preconditions (uid, resourceVersion) and policies, never names.
    if o.contains_key("metadata") && !matches!(o.get("metadata"), Some(Value::Null)) {
        let empty = o
            .get("metadata")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty);
        if !empty {
            return Err(bad("DeleteOptions must not carry metadata"));
        }
    }
    Ok(())
}

/// Kinds that are bodies of subresources and have no resource of their own.
fn subresource_body_kind(group: &str, version: &str, kind: &str) -> Option<ResourceInfo> {
    let ok = matches!(
        (group, kind),
        ("autoscaling", "Scale")
            | ("policy", "Eviction")
            | ("authentication.k8s.io", "TokenRequest")
    );
    ok.then(|| ResourceInfo {
        group: group.to_owned(),
        version: version.to_owned(),
        resource: String::new(),
        kind: kind.to_owned(),
        scope: Scope::Namespaced,
        policy: Policy::TenantOwned,
        verbs: Vec::new(),
        subresources: Vec::new(),
        tenant_crd: false,
        upstream_group: group.to_owned(),
    })
}

fn body_kind(
    ctx: &TenantContext,
    av: &str,
    kind: &str,
    hint: Option<&ResourceInfo>,
) -> Result<ResourceInfo, TranslateError> {
    let (g, v) = split_api_version(av);
    if let Some(i) = subresource_body_kind(g, v, kind) {
        return Ok(i);
    }
    if kind.ends_with("List") {
        return Err(bad(format!(
            "{kind} cannot be written: send the items one by one"
        )));
    }
    let info = ctx
        .catalog
        .resolve_kind(&ctx.tenant, av, kind)
        .ok_or_else(|| {
            bad(format!(
                "no kind {kind:?} is registered for version {av:?} in this cluster"
            ))
        })?;
    if let Some(h) = hint
        && (h.kind != info.kind || h.group != info.group)
    {
        return Err(bad(format!(
            "the body is a {kind} ({av}), but the URL addresses {}",
            h.resource
        )));
    }
    Ok(info)
}

fn up_resource(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    info: &ResourceInfo,
    path_ns: Option<&str>,
    mode: UpMode,
) -> Result<(), TranslateError> {
    if info.tenant_crd
        && let Some(Value::String(av)) = o.get_mut("apiVersion")
    {
        *av = info.upstream_api_version();
    }
    metadata_up(ctx, o, info, path_ns, mode)?;
    let t = &ctx.tenant;
    match (info.upstream_group.as_str(), info.kind.as_str()) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd_up(ctx, o)?,
        ("rbac.authorization.k8s.io", "ClusterRole") => {
            // `rbac.authorization.k8s.io/aggregate-to-*` labels feed the platform's aggregated
            // roles (admin, edit, view): a tenant role carrying one would add its rules to
            // every tenant's `admin`/`edit`/`view` (KubeZoo's hole).
            if let Some(Value::Object(labels)) = o.get("metadata").and_then(|m| m.get("labels"))
                && let Some(k) = labels
                    .keys()
                    .find(|k| k.starts_with(AGGREGATE_LABEL_PREFIX))
            {
                return Err(TranslateError::forbidden(format!(
                    "label {k} is not allowed: it would aggregate this role into the platform's roles"
                )));
            }
            rules_up(ctx, o.get_mut("rules"), true)?;
            if let Some(sels) = o
                .get_mut("aggregationRule")
                .and_then(|a| a.get_mut("clusterRoleSelectors"))
                .and_then(Value::as_array_mut)
            {
                for s in sels {
                    selector_up(ctx, s, false, true)?;
                }
            }
        }
        ("rbac.authorization.k8s.io", "Role") => rules_up(ctx, o.get_mut("rules"), false)?,
        ("rbac.authorization.k8s.io", k @ ("RoleBinding" | "ClusterRoleBinding")) => {
            let cluster = k == "ClusterRoleBinding";
            if let Some(rr) = o.get_mut("roleRef") {
                role_ref_up(t, rr, cluster)?;
            }
            subjects_up(t, o.get_mut("subjects"), cluster)?;
        }
        ("", "PersistentVolume") => pv_up(t, o)?,
        ("", "PersistentVolumeClaim") => {
            if let Some(spec) = o.get_mut("spec") {
                pvc_spec_up(t, spec)?;
            }
        }
        ("", "Event") => {
            for f in ["involvedObject", "related"] {
                if let Some(r) = o.get_mut(f) {
                    objref_up(ctx, r)?;
                }
            }
        }
        ("events.k8s.io", "Event") => {
            for f in ["regarding", "related"] {
                if let Some(r) = o.get_mut(f) {
                    objref_up(ctx, r)?;
                }
            }
        }
        ("", "Endpoints") => {
            for_each_path(
                o,
                &["subsets", "*", "addresses", "*", "targetRef"],
                &mut |r| objref_up(ctx, r),
            )?;
            for_each_path(
                o,
                &["subsets", "*", "notReadyAddresses", "*", "targetRef"],
                &mut |r| objref_up(ctx, r),
            )?;
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            for_each_path(o, &["endpoints", "*", "targetRef"], &mut |r| {
                objref_up(ctx, r)
            })?;
        }
        ("networking.k8s.io", "NetworkPolicy") => {
            for p in [
                &["spec", "ingress", "*", "from", "*", "namespaceSelector"][..],
                &["spec", "egress", "*", "to", "*", "namespaceSelector"][..],
            ] {
                for_each_path(o, p, &mut |s| selector_up(ctx, s, true, true))?;
            }
        }
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => webhooks_up(ctx, o, mode)?,
        ("authorization.k8s.io", "SelfSubjectAccessReview") => sar_spec_up(ctx, o, false)?,
        ("authorization.k8s.io", "SubjectAccessReview" | "LocalSubjectAccessReview") => {
            sar_spec_up(ctx, o, true)?
        }
        ("authorization.k8s.io", "SelfSubjectRulesReview") => {
            if let Some(Value::String(ns)) = o.get_mut("spec").and_then(|s| s.get_mut("namespace"))
            {
                *ns = namespace_up(t, ns)?;
            }
        }
        _ => {}
    }
    for path in pod_spec_paths(&info.upstream_group, &info.kind) {
        for_each_path(o, path, &mut |spec| pod_spec_up(ctx, spec))?;
    }
    if (info.upstream_group.as_str(), info.kind.as_str()) == ("apps", "StatefulSet") {
        for_each_path(
            o,
            &["spec", "volumeClaimTemplates", "*", "spec"],
            &mut |s| pvc_spec_up(t, s),
        )?;
    }
    Ok(())
}

/// Where pod specs live in workload kinds.
fn pod_spec_paths(group: &str, kind: &str) -> &'static [&'static [&'static str]] {
    match (group, kind) {
        ("", "Pod") => &[&["spec"]],
        ("", "PodTemplate") => &[&["template", "spec"]],
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => &[&["spec", "template", "spec"]],
        ("batch", "CronJob") => &[&["spec", "jobTemplate", "spec", "template", "spec"]],
        _ => &[],
    }
}

/// Calls `f` on every value at `path`; `*` walks every element of an array. Missing or null
/// steps are skipped (patches are partial).
fn for_each_path(
    v: &mut Map<String, Value>,
    path: &[&str],
    f: &mut dyn FnMut(&mut Value) -> Result<(), TranslateError>,
) -> Result<(), TranslateError> {
    fn walk(
        v: &mut Value,
        path: &[&str],
        f: &mut dyn FnMut(&mut Value) -> Result<(), TranslateError>,
    ) -> Result<(), TranslateError> {
        let Some((first, rest)) = path.split_first() else {
            return if v.is_null() { Ok(()) } else { f(v) };
        };
        match (*first, v) {
            ("*", Value::Array(a)) => {
                for e in a {
                    walk(e, rest, f)?;
                }
                Ok(())
            }
            (k, Value::Object(m)) if k != "*" => match m.get_mut(k) {
                Some(next) => walk(next, rest, f),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }
    let Some((first, rest)) = path.split_first() else {
        return Ok(());
    };
    match v.get_mut(*first) {
        Some(next) => walk(next, rest, f),
        None => Ok(()),
    }
}

fn namespace_up(t: &TenantId, ns: &str) -> Result<String, TranslateError> {
    if !is_dns_label(ns) {
        return Err(TranslateError::invalid(format!(
            "{ns:?} is not a valid namespace name"
        )));
    }
    check_prefixed_len(NameKind::Namespace, ns)?;
    Ok(t.upstream_name(ns))
}

fn metadata_up(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    info: &ResourceInfo,
    path_ns: Option<&str>,
    mode: UpMode,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    let stamp = info.stamps_label();
    if !o.contains_key("metadata") {
        if mode == UpMode::Full && stamp {
            o.insert("metadata".into(), json!({}));
        } else {
            return Ok(());
        }
    }
    let Some(meta) = o.get_mut("metadata") else {
        return Ok(());
    };
    if meta.is_null() {
        if stamp {
            return Err(TranslateError::invalid("metadata cannot be removed"));
        }
        return Ok(());
    }
    let Value::Object(meta) = meta else {
        return Err(bad("metadata must be an object"));
    };
    // namespace
    match info.scope {
        Scope::Namespaced => match meta.get_mut("namespace") {
            Some(Value::String(ns)) if !ns.is_empty() => {
                if let Some(p) = path_ns
                    && p != ns
                {
                    return Err(bad(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                *ns = namespace_up(t, ns)?;
            }
            Some(Value::String(_) | Value::Null) | None => {}
            Some(_) => return Err(bad("metadata.namespace must be a string")),
        },
        Scope::Cluster => {
            // The apiserver clears it for cluster-scoped kinds; clearing it here keeps a
            // tenant's namespace name from travelling upstream at all.
            if matches!(meta.get("namespace"), Some(Value::String(s)) if !s.is_empty()) {
                meta.remove("namespace");
            }
        }
    }
    // name, generateName
    if info.prefixes_name() {
        if let Some(Value::String(n)) = meta.get_mut("name")
            && !n.is_empty()
        {
            *n = name_up(t, info, n)?;
        }
        if let Some(Value::String(g)) = meta.get_mut("generateName")
            && !g.is_empty()
        {
            if info.is_crd() {
                return Err(TranslateError::invalid(
                    "custom resource definitions cannot use generateName",
                ));
            }
            *g = t.upstream_name(g);
        }
    }
    // labels
    let is_namespace = info.upstream_group.is_empty() && info.kind == "Namespace";
    let force_stamp = mode == UpMode::Full
        || meta.get("$patch").and_then(Value::as_str) == Some("replace")
        || meta
            .get("labels")
            .and_then(|l| l.get("$patch"))
            .and_then(Value::as_str)
            == Some("replace");
    match meta.get_mut("labels") {
        Some(Value::Object(labels)) => {
            if labels.contains_key(TENANT_LABEL) {
                return Err(TranslateError::forbidden(format!(
                    "label {TENANT_LABEL} is reserved and cannot be set"
                )));
            }
            if is_namespace && let Some(Value::String(v)) = labels.get_mut(NAMESPACE_NAME_LABEL) {
                *v = namespace_up(t, v)?;
            }
            if stamp && force_stamp {
                labels.insert(TENANT_LABEL.into(), Value::String(t.as_str().into()));
            }
        }
        Some(Value::Null) if stamp => {
            if mode == UpMode::Full {
                meta.insert("labels".into(), json!({TENANT_LABEL: t.as_str()}));
            } else {
                return Err(TranslateError::invalid(format!(
                    "metadata.labels cannot be removed as a whole on this kind (it carries {TENANT_LABEL}); remove labels one by one"
                )));
            }
        }
        None if stamp && force_stamp => {
            meta.insert("labels".into(), json!({TENANT_LABEL: t.as_str()}));
        }
        Some(Value::Null) | None => {}
        Some(_) => return Err(bad("metadata.labels must be an object")),
    }
    // ownerReferences
    if let Some(v) = meta.get_mut("ownerReferences") {
        match v {
            Value::Array(refs) => {
                for r in refs {
                    owner_ref_up(ctx, r)?;
                }
            }
            Value::Null => {}
            _ => return Err(bad("metadata.ownerReferences must be an array")),
        }
    }
    // managedFields (echoed back on update)
    if let Some(Value::Array(mf)) = meta.get_mut("managedFields") {
        for e in mf {
            if let Some(Value::String(av)) = e.get_mut("apiVersion") {
                *av = api_version_up(ctx, av);
            }
        }
    }
    Ok(())
}

fn owner_ref_up(ctx: &TenantContext, r: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(m) = r else {
        return Err(bad("ownerReferences entries must be objects"));
    };
    let av = m
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let kind = m.get("kind").and_then(Value::as_str).map(str::to_owned);
    let (Some(av), Some(kind)) = (av, kind) else {
        // A strategic-merge element addressed by uid only (e.g. `$patch: delete`) names nothing.
        if m.contains_key("name") {
            return Err(bad("ownerReferences entries must have apiVersion and kind"));
        }
        return Ok(());
    };
    let info = ctx
        .catalog
        .resolve_kind(&ctx.tenant, &av, &kind)
        .ok_or_else(|| {
            TranslateError::invalid(format!("ownerReferences: unknown kind {kind:?} in {av:?}"))
        })?;
    if info.policy == Policy::Forbidden {
        return Err(TranslateError::forbidden(format!(
            "ownerReferences: {kind} objects are not available to tenants of this cluster"
        )));
    }
    m.insert(
        "apiVersion".into(),
        Value::String(info.upstream_api_version()),
    );
    if info.prefixes_name()
        && let Some(Value::String(n)) = m.get_mut("name")
    {
        *n = name_up(&ctx.tenant, &info, n)?;
    }
    Ok(())
}

/// ObjectReference (Event involvedObject/related/regarding, Endpoints targetRef).
fn objref_up(ctx: &TenantContext, r: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(m) = r else { return Ok(()) };
    let t = &ctx.tenant;
    if let Some(Value::String(ns)) = m.get_mut("namespace")
        && !ns.is_empty()
    {
        *ns = namespace_up(t, ns)?;
    }
    let av = m
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let kind = m.get("kind").and_then(Value::as_str).map(str::to_owned);
    let info = kind
        .as_deref()
        .and_then(|k| resolve_ref_kind(ctx, av.as_deref(), k));
    if let Some(info) = &info {
        if info.policy == Policy::Forbidden {
            return Err(TranslateError::forbidden(format!(
                "{} objects are not available to tenants of this cluster",
                info.kind
            )));
        }
        if info.prefixes_name()
            && let Some(Value::String(n)) = m.get_mut("name")
            && !n.is_empty()
        {
            *n = name_up(t, info, n)?;
        }
    }
    if let Some(Value::String(a)) = m.get_mut("apiVersion") {
        *a = api_version_up(ctx, a);
    }
    Ok(())
}

/// A label selector that selects namespaces (or, with `map_ns_name` false, ClusterRoles for
/// aggregation): the tenant label may not appear, `kubernetes.io/metadata.name` values are
/// mapped, and with `add_term` the selection is ANDed with `paddock.io/tenant In [<tid>]`, so
/// that `{}` means "all of the tenant's namespaces", not all of the cluster's.
fn selector_up(
    ctx: &TenantContext,
    sel: &mut Value,
    map_ns_name: bool,
    add_term: bool,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    let Value::Object(m) = sel else { return Ok(()) };
    let reserved =
        || TranslateError::forbidden(format!("selectors on label {TENANT_LABEL} are not allowed"));
    if let Some(Value::Object(ml)) = m.get_mut("matchLabels") {
        if ml.contains_key(TENANT_LABEL) {
            return Err(reserved());
        }
        if map_ns_name && let Some(Value::String(v)) = ml.get_mut(NAMESPACE_NAME_LABEL) {
            *v = namespace_up(t, v)?;
        }
    }
    if let Some(Value::Array(exprs)) = m.get_mut("matchExpressions") {
        for e in exprs.iter_mut() {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            if key == TENANT_LABEL {
                return Err(reserved());
            }
            if map_ns_name
                && key == NAMESPACE_NAME_LABEL
                && let Some(Value::Array(vals)) = e.get_mut("values")
            {
                for v in vals {
                    if let Value::String(s) = v {
                        *s = namespace_up(t, s)?;
                    }
                }
            }
        }
    }
    if add_term {
        match m.get_mut("matchExpressions") {
            Some(Value::Array(exprs)) => exprs.push(tenant_expr(t)),
            _ => {
                m.insert(
                    "matchExpressions".into(),
                    Value::Array(vec![tenant_expr(t)]),
                );
            }
        }
    }
    Ok(())
}

/// Paths (from a pod spec) to every pod (anti-)affinity term, required and preferred: the
/// places where a pod names other namespaces.
fn affinity_term_paths() -> Vec<Vec<&'static str>> {
    let mut out = Vec::with_capacity(4);
    for aff in ["podAffinity", "podAntiAffinity"] {
        out.push(vec![
            "affinity",
            aff,
            "requiredDuringSchedulingIgnoredDuringExecution",
            "*",
        ]);
        out.push(vec![
            "affinity",
            aff,
            "preferredDuringSchedulingIgnoredDuringExecution",
            "*",
            "podAffinityTerm",
        ]);
    }
    out
}

fn pod_spec_up(ctx: &TenantContext, spec: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(spec) = spec else {
        return Ok(());
    };
    for p in affinity_term_paths() {
        for_each_path(spec, &p, &mut |term| affinity_term_up(ctx, term))?;
    }
    Ok(())
}

fn affinity_term_up(ctx: &TenantContext, term: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(m) = term else {
        return Ok(());
    };
    if let Some(Value::Array(nss)) = m.get_mut("namespaces") {
        for ns in nss {
            if let Value::String(s) = ns {
                *s = namespace_up(&ctx.tenant, s)?;
            }
        }
    }
    if let Some(sel) = m.get_mut("namespaceSelector") {
        selector_up(ctx, sel, true, true)?;
    }
    Ok(())
}

/// Dynamically provisioned volumes are named `pvc-<uid>` by the upstream provisioner and are
/// not the tenant's objects; a bound claim keeps referring to them by that name.
fn is_provisioned_volume_name(s: &str) -> bool {
    s.strip_prefix("pvc-").is_some_and(|u| {
        u.len() == 36
            && u.char_indices().all(|(i, c)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    c == '-'
                } else {
                    c.is_ascii_hexdigit()
                }
            })
    })
}

fn pvc_spec_up(t: &TenantId, spec: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(spec) = spec else {
        return Ok(());
    };
    if let Some(Value::String(v)) = spec.get_mut("volumeName")
        && !v.is_empty()
        && !is_provisioned_volume_name(v)
    {
        check_prefixed_len(NameKind::DnsSubdomain, v)?;
        *v = t.upstream_name(v);
    }
    if let Some(Value::String(ns)) = spec
        .get_mut("dataSourceRef")
        .and_then(|d| d.get_mut("namespace"))
        && !ns.is_empty()
    {
        *ns = namespace_up(t, ns)?;
    }
    Ok(())
}

fn pv_up(t: &TenantId, o: &mut Map<String, Value>) -> Result<(), TranslateError> {
    let Some(Value::Object(spec)) = o.get_mut("spec") else {
        return Ok(());
    };
    // A host path or local volume is a way onto a shared node's filesystem.
    for f in ["hostPath", "local"] {
        if spec.get(f).is_some_and(|v| !v.is_null()) {
            return Err(TranslateError::forbidden(format!(
                "persistent volumes with spec.{f} are not allowed in this cluster"
            )));
        }
    }
    if let Some(Value::String(ns)) = spec
        .get_mut("claimRef")
        .and_then(|c| c.get_mut("namespace"))
        && !ns.is_empty()
    {
        *ns = namespace_up(t, ns)?;
    }
    Ok(())
}

fn crd_up(ctx: &TenantContext, o: &mut Map<String, Value>) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    let Some(Value::Object(spec)) = o.get_mut("spec") else {
        return Ok(());
    };
    if let Some(Value::String(g)) = spec.get_mut("group") {
        check_crd_group(g)?;
        *g = t.upstream_name(g);
    }
    if let Some(Value::Object(cc)) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
    {
        client_config_up(t, cc)?;
    }
    Ok(())
}

fn client_config_up(t: &TenantId, cc: &mut Map<String, Value>) -> Result<(), TranslateError> {
    if cc.get("url").is_some_and(|u| !u.is_null()) {
        return Err(TranslateError::forbidden(
            "webhook clientConfig.url is not allowed in this cluster: use clientConfig.service",
        ));
    }
    if let Some(Value::String(ns)) = cc.get_mut("service").and_then(|s| s.get_mut("namespace")) {
        *ns = namespace_up(t, ns)?;
    }
    Ok(())
}

fn webhooks_up(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    mode: UpMode,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    let Some(Value::Array(hooks)) = o.get_mut("webhooks") else {
        return Ok(());
    };
    for h in hooks {
        let Value::Object(h) = h else {
            return Err(bad("webhooks entries must be objects"));
        };
        if let Some(Value::Object(cc)) = h.get_mut("clientConfig") {
            client_config_up(t, cc)?;
        }
        // The namespaceSelector is what confines a tenant's webhook to the tenant's
        // namespaces. A strategic-merge element without one keeps the stored, already
        // confined selector; everywhere else it is forced.
        let present = h.get("namespaceSelector").is_some_and(|s| !s.is_null());
        if present || mode != UpMode::StrategicMerge {
            if !present {
                h.insert("namespaceSelector".into(), json!({}));
            }
            if let Some(sel) = h.get_mut("namespaceSelector") {
                selector_up(ctx, sel, true, true)?;
            }
        }
        if let Some(Value::Array(rules)) = h.get_mut("rules") {
            for r in rules {
                webhook_rule_up(ctx, r)?;
            }
        }
    }
    Ok(())
}

/// namespaceSelector does not apply to cluster-scoped objects, so a rule matching them would
/// see every tenant's cluster-scoped objects. Scope is forced to Namespaced, except for rules
/// on namespaces themselves (which the namespaceSelector does confine).
fn webhook_rule_up(ctx: &TenantContext, r: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(r) = r else { return Ok(()) };
    if let Some(Value::Array(groups)) = r.get_mut("apiGroups") {
        for g in groups {
            if let Value::String(s) = g {
                *s = ctx.catalog.rule_group_up(&ctx.tenant, s);
            }
        }
    }
    let only_namespaces = r
        .get("resources")
        .and_then(Value::as_array)
        .is_some_and(|rs| {
            !rs.is_empty()
                && rs.iter().all(|x| {
                    x.as_str()
                        .is_some_and(|s| s == "namespaces" || s.starts_with("namespaces/"))
                })
        });
    let scope = r
        .get("scope")
        .and_then(Value::as_str)
        .unwrap_or("*")
        .to_owned();
    match scope.as_str() {
        "Namespaced" => {}
        _ if only_namespaces => {}
        "Cluster" => {
            return Err(TranslateError::forbidden(
                "webhook rules with scope Cluster are only allowed for namespaces in this cluster",
            ));
        }
        _ => {
            r.insert("scope".into(), Value::String("Namespaced".into()));
        }
    }
    Ok(())
}

fn rule_resource_infos(
    ctx: &TenantContext,
    rule: &Map<String, Value>,
    upstream_view: bool,
) -> Result<Option<ResourceInfo>, TranslateError> {
    let strs = |k: &str| -> Vec<String> {
        rule.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let groups = strs("apiGroups");
    let resources = strs("resources");
    let mut prefixed: Option<ResourceInfo> = None;
    let mut plain = false;
    for g in &groups {
        for r in &resources {
            let base = r.split('/').next().unwrap_or(r);
            if g == "*" || base == "*" {
                return Err(TranslateError::invalid(
                    "rules with resourceNames cannot use \"*\" groups or resources in this cluster",
                ));
            }
            let info = if upstream_view {
                ctx.catalog
                    .resolve_upstream_any_version(&ctx.tenant, g, base)
            } else {
                ctx.catalog.resolve_any_version(&ctx.tenant, g, base)
            };
            match info {
                Some(i) if i.prefixes_name() => {
                    if prefixed.as_ref().is_some_and(|p| p.is_crd() != i.is_crd()) {
                        return Err(TranslateError::invalid(
                            "rules with resourceNames cannot mix custom resource definitions with other cluster-scoped kinds",
                        ));
                    }
                    prefixed = Some(i);
                }
                _ => plain = true,
            }
        }
    }
    if prefixed.is_some() && plain {
        return Err(TranslateError::invalid(
            "rules with resourceNames cannot mix tenant cluster-scoped kinds with other kinds; split the rule",
        ));
    }
    Ok(prefixed)
}

fn rules_up(
    ctx: &TenantContext,
    rules: Option<&mut Value>,
    cluster: bool,
) -> Result<(), TranslateError> {
    let Some(Value::Array(rules)) = rules else {
        return Ok(());
    };
    for rule in rules {
        let Value::Object(rule) = rule else {
            return Err(bad("rules entries must be objects"));
        };
        // resourceNames of cluster-scoped tenant kinds are prefixed; in a Role they name only
        // namespaced objects.
        let has_names = rule
            .get("resourceNames")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if cluster
            && has_names
            && let Some(info) = rule_resource_infos(ctx, rule, false)?
            && let Some(Value::Array(names)) = rule.get_mut("resourceNames")
        {
            for n in names {
                if let Value::String(s) = n {
                    *s = name_up(&ctx.tenant, &info, s)?;
                }
            }
        }
        if let Some(Value::Array(groups)) = rule.get_mut("apiGroups") {
            for g in groups {
                if let Value::String(s) = g {
                    *s = ctx.catalog.rule_group_up(&ctx.tenant, s);
                }
            }
        }
    }
    Ok(())
}

fn role_ref_up(t: &TenantId, rr: &mut Value, cluster_binding: bool) -> Result<(), TranslateError> {
    let Value::Object(m) = rr else {
        return Err(bad("roleRef must be an object"));
    };
    if let Some(g) = m.get("apiGroup").and_then(Value::as_str)
        && g != "rbac.authorization.k8s.io"
    {
        return Err(TranslateError::invalid(format!(
            "roleRef.apiGroup {g:?} is not supported"
        )));
    }
    let kind = m
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match (kind.as_str(), cluster_binding) {
        ("ClusterRole", _) => {
            if let Some(Value::String(n)) = m.get_mut("name")
                && (cluster_binding || !SHARED_BINDABLE_CLUSTER_ROLES.contains(&n.as_str()))
            {
                check_prefixed_len(NameKind::DnsSubdomain, n)?;
                *n = t.upstream_name(n);
            }
        }
        ("Role", false) => {}
        ("", _) if !m.contains_key("name") => {}
        _ => {
            return Err(TranslateError::invalid(format!(
                "roleRef.kind {kind:?} is not supported here"
            )));
        }
    }
    Ok(())
}

fn subjects_up(
    t: &TenantId,
    subjects: Option<&mut Value>,
    cluster_binding: bool,
) -> Result<(), TranslateError> {
    let Some(Value::Array(subjects)) = subjects else {
        return Ok(());
    };
    for s in subjects {
        let Value::Object(s) = s else {
            return Err(bad("subjects entries must be objects"));
        };
        let kind = s
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        match kind.as_str() {
            "User" => {
                if let Some(Value::String(n)) = s.get_mut("name") {
                    *n = map_user_up(t, n)?;
                }
            }
            "Group" => {
                if let Some(Value::String(n)) = s.get_mut("name") {
                    *n = map_group_up(t, n)?;
                }
            }
            "ServiceAccount" => match s.get_mut("namespace") {
                Some(Value::String(ns)) if !ns.is_empty() => *ns = namespace_up(t, ns)?,
                _ if cluster_binding => {
                    return Err(TranslateError::invalid(
                        "ServiceAccount subjects of a ClusterRoleBinding need a namespace",
                    ));
                }
                _ => {}
            },
            // A ClusterRoleBinding's subjects are stored in the inert shadow form (see
            // `identity::CLUSTER_SHADOW_PREFIX`), so a json-patch of one field cannot be mapped.
            "" if cluster_binding => {
                return Err(TranslateError::invalid(
                    "patch the subjects of a ClusterRoleBinding as whole entries (kind, name, namespace)",
                ));
            }
            // A json-patch on `/subjects/N/namespace` carries the namespace alone; only
            // ServiceAccount subjects have one.
            "" if !s.contains_key("name") => {
                if let Some(Value::String(ns)) = s.get_mut("namespace")
                    && !ns.is_empty()
                {
                    *ns = namespace_up(t, ns)?;
                }
            }
            other => {
                return Err(TranslateError::invalid(format!(
                    "subject kind {other:?} is not supported"
                )));
            }
        }
        if cluster_binding {
            shadow_subject(t, s);
        }
    }
    Ok(())
}

/// A (mapped) subject of a ClusterRoleBinding -> its inert shadow form. ServiceAccounts become
/// shadow Users `paddock:cluster:<tid>:system:serviceaccount:<ns>:<sa>`.
fn shadow_subject(t: &TenantId, s: &mut Map<String, Value>) {
    let kind = s
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let name = s
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match kind.as_str() {
        "User" | "Group" => {
            s.insert("name".into(), Value::String(cluster_shadow(t, &name)));
        }
        "ServiceAccount" => {
            let ns = s
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            s.shift_remove("namespace");
            s.insert("kind".into(), Value::String("User".into()));
            s.insert(
                "apiGroup".into(),
                Value::String("rbac.authorization.k8s.io".into()),
            );
            s.insert(
                "name".into(),
                Value::String(cluster_shadow(
                    t,
                    &format!("system:serviceaccount:{ns}:{name}"),
                )),
            );
        }
        _ => {}
    }
}

/// Inverse of [`shadow_subject`]; false when the subject is not a shadow identity of `t`.
fn unshadow_subject(t: &TenantId, s: &mut Value) -> bool {
    let Value::Object(m) = s else { return false };
    let kind = m
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(real) = m
        .get("name")
        .and_then(Value::as_str)
        .and_then(|n| cluster_unshadow(t, n))
        .map(str::to_owned)
    else {
        return false;
    };
    if kind == "User"
        && let Some(rest) = real.strip_prefix("system:serviceaccount:")
        && let Some((ns, sa)) = rest.split_once(':')
    {
        m.insert("kind".into(), Value::String("ServiceAccount".into()));
        m.shift_remove("apiGroup");
        m.insert("name".into(), Value::String(sa.to_owned()));
        m.insert("namespace".into(), Value::String(ns.to_owned()));
        return true;
    }
    m.insert("name".into(), Value::String(real));
    true
}

fn sar_spec_up(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    with_user: bool,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    let Some(Value::Object(spec)) = o.get_mut("spec") else {
        return Ok(());
    };
    if let Some(Value::Object(ra)) = spec.get_mut("resourceAttributes") {
        resource_attributes_up(ctx, ra)?;
    }
    if !with_user {
        return Ok(());
    }
    let mut tenant_user = false;
    if let Some(Value::String(u)) = spec.get_mut("user") {
        tenant_user = !u.starts_with("system:serviceaccount:");
        *u = map_user_up(t, u)?;
    }
    if let Some(Value::Array(gs)) = spec.get_mut("groups") {
        for g in gs.iter_mut() {
            if let Value::String(s) = g {
                *s = map_group_up(t, s)?;
            }
        }
    }
    if let Some(Value::Object(extra)) = spec.get_mut("extra")
        && extra.contains_key(TENANT_LABEL)
    {
        return Err(TranslateError::forbidden(format!(
            "extra {TENANT_LABEL} is reserved"
        )));
    }
    // Upstream, a tenant user always carries these; without them the review would answer for
    // an identity that cannot exist.
    if tenant_user {
        let gs = spec
            .entry("groups")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(gs) = gs {
            gs.push(Value::String(tenant_group(t)));
            gs.push(Value::String("system:authenticated".into()));
        }
        let extra = spec.entry("extra").or_insert_with(|| json!({}));
        if let Value::Object(extra) = extra {
            extra.insert(TENANT_LABEL.into(), json!([t.as_str()]));
        }
    }
    Ok(())
}

fn resource_attributes_up(
    ctx: &TenantContext,
    ra: &mut Map<String, Value>,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    if let Some(Value::String(ns)) = ra.get_mut("namespace")
        && !ns.is_empty()
    {
        *ns = namespace_up(t, ns)?;
    }
    let group = ra
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let resource = ra
        .get("resource")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if let Some(Value::String(n)) = ra.get_mut("name")
        && !n.is_empty()
        && let Some(info) = ctx.catalog.resolve_any_version(t, &group, &resource)
        && info.prefixes_name()
    {
        *n = name_up(t, &info, n)?;
    }
    if let Some(Value::String(g)) = ra.get_mut("group") {
        *g = ctx.catalog.rule_group_up(t, g);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Down: upstream -> tenant view

/// Rewrite one object (any kind, as JSON) from the upstream view into the tenant's view.
/// Returns Drop when the object lies outside the tenant (wrong prefix / label).
pub fn object_down(ctx: &TenantContext, obj: &mut Value) -> Result<Disposition, TranslateError> {
    object_down_as(ctx, obj, None)
}

/// [`object_down`] with the resource the request addressed, for objects that do not carry
/// their own `kind` (items of built-in lists, `PartialObjectMetadata` rows of Tables).
pub fn object_down_as(
    ctx: &TenantContext,
    obj: &mut Value,
    hint: Option<&ResourceInfo>,
) -> Result<Disposition, TranslateError> {
    let Value::Object(o) = obj else {
        return Ok(Disposition::Keep);
    };
    let av = o
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let kind = o.get("kind").and_then(Value::as_str).map(str::to_owned);
    let info = match (av.as_deref(), kind.as_deref()) {
        (Some("v1") | None, Some("Status")) => {
            status_down(ctx, o);
            return Ok(Disposition::Keep);
        }
        (Some(av), Some(k))
            if k.ends_with("List") && o.get("items").is_some_and(Value::is_array) =>
        {
            return list_down(ctx, o, av, k, hint);
        }
        (Some(av), Some(k)) if k != "PartialObjectMetadata" => {
            let (g, v) = split_api_version(av);
            if let Some(i) = subresource_body_kind(g, v, k) {
                Some(i)
            } else if tenant_of(g).is_some() && ctx.tenant.strip(g).is_none() {
                // Another tenant's CRD group.
                return Ok(Disposition::Drop);
            } else {
                ctx.catalog
                    .resolve_upstream_kind(&ctx.tenant, av, k)
                    .or_else(|| hint.cloned())
            }
        }
        _ => hint.cloned(),
    };
    let Some(info) = info else {
        // Not a kind we know: keep it only if its metadata says it is the tenant's.
        return Ok(generic_down(ctx, o));
    };
    match info.policy {
        Policy::Forbidden => return Ok(Disposition::Drop),
        // paddock's own per-tenant objects among the shared kinds (each tenant's FlowSchema)
        // carry the tenant label: plumbing, hidden from every tenant (their names and rules
        // would tell one tenant the others' ids).
        Policy::SharedReadOnly if has_tenant_label(o) => return Ok(Disposition::Drop),
        Policy::SharedReadOnly => return Ok(Disposition::Keep),
        Policy::TenantOwned => {}
    }
    down_resource(ctx, o, &info)
}

fn has_tenant_label(o: &Map<String, Value>) -> bool {
    o.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(TENANT_LABEL))
        .is_some()
}

fn list_down(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    av: &str,
    kind: &str,
    hint: Option<&ResourceInfo>,
) -> Result<Disposition, TranslateError> {
    let item_kind = kind.trim_end_matches("List");
    let item_info = ctx
        .catalog
        .resolve_upstream_kind(&ctx.tenant, av, item_kind)
        .or_else(|| hint.cloned());
    if let Some(Value::String(a)) = o.get_mut("apiVersion")
        && let Some(i) = &item_info
        && i.tenant_crd
    {
        *a = i.api_version();
    }
    if let Some(Value::Array(items)) = o.get_mut("items") {
        let mut kept = Vec::with_capacity(items.len());
        for mut it in items.drain(..) {
            if object_down_as(ctx, &mut it, item_info.as_ref())? == Disposition::Keep {
                kept.push(it);
            }
        }
        *items = kept;
    }
    // After filtering the count of remaining items is not ours to tell.
    if let Some(Value::Object(m)) = o.get_mut("metadata") {
        m.remove("remainingItemCount");
    }
    Ok(Disposition::Keep)
}

fn generic_down(ctx: &TenantContext, o: &mut Map<String, Value>) -> Disposition {
    let Some(Value::Object(meta)) = o.get_mut("metadata") else {
        return Disposition::Keep;
    };
    if let Some(Value::String(ns)) = meta.get_mut("namespace") {
        if ns.is_empty() {
            return Disposition::Keep;
        }
        return match ctx.tenant.strip(ns) {
            Some(s) => {
                *ns = s.to_owned();
                Disposition::Keep
            }
            None => Disposition::Drop,
        };
    }
    Disposition::Keep
}

fn down_resource(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    info: &ResourceInfo,
) -> Result<Disposition, TranslateError> {
    let t = &ctx.tenant;
    if info.tenant_crd
        && let Some(Value::String(av)) = o.get_mut("apiVersion")
    {
        *av = info.api_version();
    }
    if metadata_down(ctx, o, info) == Disposition::Drop {
        return Ok(Disposition::Drop);
    }
    match (info.upstream_group.as_str(), info.kind.as_str()) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            if let Some(Value::Object(spec)) = o.get_mut("spec") {
                if let Some(Value::String(g)) = spec.get_mut("group") {
                    match t.strip(g) {
                        Some(s) => *g = s.to_owned(),
                        None => return Ok(Disposition::Drop),
                    }
                }
                if let Some(Value::Object(cc)) = spec
                    .get_mut("conversion")
                    .and_then(|c| c.get_mut("webhook"))
                    .and_then(|w| w.get_mut("clientConfig"))
                {
                    client_config_down(t, cc);
                }
            }
            texts_down(ctx, o, &["status", "conditions", "*", "message"]);
        }
        ("rbac.authorization.k8s.io", "ClusterRole") => {
            rules_down(ctx, o.get_mut("rules"), true);
            for_each_path_infallible(
                o,
                &["aggregationRule", "clusterRoleSelectors", "*"],
                &mut |s| selector_down(t, s, false),
            );
        }
        ("rbac.authorization.k8s.io", "Role") => rules_down(ctx, o.get_mut("rules"), false),
        ("rbac.authorization.k8s.io", k @ ("RoleBinding" | "ClusterRoleBinding")) => {
            let cluster = k == "ClusterRoleBinding";
            if let Some(Value::Object(rr)) = o.get_mut("roleRef")
                && rr.get("kind").and_then(Value::as_str) == Some("ClusterRole")
                && let Some(Value::String(n)) = rr.get_mut("name")
                && let Some(s) = t.strip(n)
            {
                *n = s.to_owned();
            }
            if let Some(Value::Array(subjects)) = o.get_mut("subjects") {
                // A tenant ClusterRoleBinding's subjects are stored in the shadow form; one
                // that is not (written before the shadow form existed, or by someone else)
                // is shown only if it is the tenant's.
                subjects.retain_mut(|s| {
                    if cluster {
                        unshadow_subject(t, s);
                    }
                    subject_down(t, s)
                });
            }
        }
        ("", "PersistentVolume") => {
            if let Some(Value::String(ns)) = o
                .get_mut("spec")
                .and_then(|s| s.get_mut("claimRef"))
                .and_then(|c| c.get_mut("namespace"))
                && let Some(s) = t.strip(ns)
            {
                *ns = s.to_owned();
            }
        }
        ("", "PersistentVolumeClaim") => {
            if let Some(spec) = o.get_mut("spec") {
                pvc_spec_down(t, spec);
            }
        }
        ("", "Event") => {
            for f in ["involvedObject", "related"] {
                if let Some(r) = o.get_mut(f) {
                    objref_down(ctx, r);
                }
            }
            if let Some(Value::String(m)) = o.get_mut("message") {
                *m = text_down(ctx, m);
            }
        }
        ("events.k8s.io", "Event") => {
            for f in ["regarding", "related"] {
                if let Some(r) = o.get_mut(f) {
                    objref_down(ctx, r);
                }
            }
            if let Some(Value::String(m)) = o.get_mut("note") {
                *m = text_down(ctx, m);
            }
        }
        ("", "Endpoints") => {
            for p in [
                &["subsets", "*", "addresses", "*", "targetRef"][..],
                &["subsets", "*", "notReadyAddresses", "*", "targetRef"][..],
            ] {
                for_each_path_infallible(o, p, &mut |r| objref_down(ctx, r));
            }
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            for_each_path_infallible(o, &["endpoints", "*", "targetRef"], &mut |r| {
                objref_down(ctx, r)
            });
        }
        ("networking.k8s.io", "NetworkPolicy") => {
            for p in [
                &["spec", "ingress", "*", "from", "*", "namespaceSelector"][..],
                &["spec", "egress", "*", "to", "*", "namespaceSelector"][..],
            ] {
                for_each_path_infallible(o, p, &mut |s| selector_down(t, s, true));
            }
        }
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => {
            if let Some(Value::Array(hooks)) = o.get_mut("webhooks") {
                for h in hooks {
                    let Value::Object(h) = h else { continue };
                    if let Some(Value::Object(cc)) = h.get_mut("clientConfig") {
                        client_config_down(t, cc);
                    }
                    if let Some(sel) = h.get_mut("namespaceSelector") {
                        selector_down(t, sel, true);
                    }
                    for_each_path_infallible(h, &["rules", "*", "apiGroups", "*"], &mut |g| {
                        group_down(ctx, g)
                    });
                }
            }
        }
        (
            "authorization.k8s.io",
            "SelfSubjectAccessReview" | "SubjectAccessReview" | "LocalSubjectAccessReview",
        ) => sar_down(ctx, o),
        ("authorization.k8s.io", "SelfSubjectRulesReview") => {
            if let Some(Value::String(ns)) = o.get_mut("spec").and_then(|s| s.get_mut("namespace"))
                && let Some(s) = t.strip(ns)
            {
                *ns = s.to_owned();
            }
            rules_review_status_down(ctx, o);
        }
        ("authentication.k8s.io", "SelfSubjectReview") => {
            if let Some(ui) = o.get_mut("status").and_then(|s| s.get_mut("userInfo")) {
                user_info_down(t, ui);
            }
        }
        _ => {}
    }
    for path in pod_spec_paths(&info.upstream_group, &info.kind) {
        for_each_path_infallible(o, path, &mut |spec| pod_spec_down(t, spec));
    }
    if (info.upstream_group.as_str(), info.kind.as_str()) == ("apps", "StatefulSet") {
        for_each_path_infallible(
            o,
            &["spec", "volumeClaimTemplates", "*", "spec"],
            &mut |s| pvc_spec_down(t, s),
        );
    }
    Ok(Disposition::Keep)
}

fn for_each_path_infallible(
    o: &mut Map<String, Value>,
    path: &[&str],
    f: &mut dyn FnMut(&mut Value),
) {
    let _ = for_each_path(o, path, &mut |v| {
        f(v);
        Ok(())
    });
}

fn texts_down(ctx: &TenantContext, o: &mut Map<String, Value>, path: &[&str]) {
    for_each_path_infallible(o, path, &mut |v| {
        if let Value::String(s) = v {
            *s = text_down(ctx, s);
        }
    });
}

fn metadata_down(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    info: &ResourceInfo,
) -> Disposition {
    let t = &ctx.tenant;
    let Some(Value::Object(meta)) = o.get_mut("metadata") else {
        return Disposition::Keep;
    };
    if info.is_review() {
        // Answers to the tenant's own request: never dropped, only un-prefixed.
        if let Some(Value::String(ns)) = meta.get_mut("namespace")
            && let Some(s) = t.strip(ns)
        {
            *ns = s.to_owned();
        }
        return Disposition::Keep;
    }
    match info.scope {
        Scope::Namespaced => {
            if let Some(Value::String(ns)) = meta.get_mut("namespace")
                && !ns.is_empty()
            {
                match t.strip(ns) {
                    Some(s) => *ns = s.to_owned(),
                    None => return Disposition::Drop,
                }
            }
        }
        Scope::Cluster => {
            if info.prefixes_name() {
                if let Some(Value::String(n)) = meta.get_mut("name") {
                    match name_down(t, info, n) {
                        Some(s) => *n = s,
                        None => return Disposition::Drop,
                    }
                }
                let label = meta
                    .get("labels")
                    .and_then(|l| l.get(TENANT_LABEL))
                    .and_then(Value::as_str);
                if label.is_some_and(|l| l != t.as_str()) {
                    return Disposition::Drop;
                }
                if let Some(Value::String(g)) = meta.get_mut("generateName")
                    && let Some(s) = t.strip(g)
                {
                    *g = s.to_owned();
                }
            }
        }
    }
    // labels: hide the tenant label, un-map the namespace name label.
    let mut now_empty = false;
    if let Some(Value::Object(labels)) = meta.get_mut("labels") {
        if labels.shift_remove(TENANT_LABEL).is_some() && labels.is_empty() {
            now_empty = true;
        }
        if info.upstream_group.is_empty()
            && info.kind == "Namespace"
            && let Some(Value::String(v)) = labels.get_mut(NAMESPACE_NAME_LABEL)
            && let Some(s) = t.strip(v)
        {
            *v = s.to_owned();
        }
    }
    if now_empty {
        meta.shift_remove("labels");
    }
    if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
        for r in refs {
            owner_ref_down(ctx, r);
        }
    }
    if let Some(Value::Array(mf)) = meta.get_mut("managedFields") {
        for e in mf {
            let Value::Object(e) = e else { continue };
            if let Some(Value::String(av)) = e.get_mut("apiVersion") {
                *av = api_version_down(ctx, av);
            }
            if let Some(Value::Object(labels)) = e
                .get_mut("fieldsV1")
                .and_then(|f| f.get_mut("f:metadata"))
                .and_then(|m| m.get_mut("f:labels"))
            {
                labels.shift_remove(&format!("f:{TENANT_LABEL}"));
            }
        }
    }
    Disposition::Keep
}

/// Upstream apiVersion -> tenant view (own CRD groups un-prefixed).
pub fn api_version_down(ctx: &TenantContext, av: &str) -> String {
    let (g, v) = split_api_version(av);
    match ctx.tenant.strip(g) {
        Some(s) => join_api_version(s, v),
        None => av.to_owned(),
    }
}

fn owner_ref_down(ctx: &TenantContext, r: &mut Value) {
    let Value::Object(m) = r else { return };
    let av = m
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let kind = m
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if let Some(info) = ctx.catalog.resolve_upstream_kind(&ctx.tenant, &av, &kind)
        && info.prefixes_name()
        && let Some(Value::String(n)) = m.get_mut("name")
        && let Some(s) = name_down(&ctx.tenant, &info, n)
    {
        *n = s;
    }
    if let Some(Value::String(a)) = m.get_mut("apiVersion") {
        *a = api_version_down(ctx, a);
    }
}

fn objref_down(ctx: &TenantContext, r: &mut Value) {
    let Value::Object(m) = r else { return };
    let t = &ctx.tenant;
    if let Some(Value::String(ns)) = m.get_mut("namespace")
        && let Some(s) = t.strip(ns)
    {
        *ns = s.to_owned();
    }
    let av = m
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let kind = m.get("kind").and_then(Value::as_str).map(str::to_owned);
    let info = match (av.as_deref(), kind.as_deref()) {
        (Some(av), Some(k)) => ctx.catalog.resolve_upstream_kind(t, av, k),
        (None, Some(k)) => resolve_ref_kind(ctx, None, k),
        _ => None,
    };
    if let Some(info) = info
        && info.prefixes_name()
        && let Some(Value::String(n)) = m.get_mut("name")
        && let Some(s) = name_down(t, &info, n)
    {
        *n = s;
    }
    if let Some(Value::String(a)) = m.get_mut("apiVersion") {
        *a = api_version_down(ctx, a);
    }
}

fn selector_down(t: &TenantId, sel: &mut Value, map_ns_name: bool) {
    let Value::Object(m) = sel else { return };
    let ours = tenant_expr(t);
    let mut emptied = false;
    if let Some(Value::Array(exprs)) = m.get_mut("matchExpressions") {
        let before = exprs.len();
        exprs.retain(|e| *e != ours);
        emptied = exprs.is_empty() && before > 0;
        if map_ns_name {
            for e in exprs.iter_mut() {
                if e.get("key").and_then(Value::as_str) == Some(NAMESPACE_NAME_LABEL)
                    && let Some(Value::Array(vals)) = e.get_mut("values")
                {
                    for v in vals {
                        if let Value::String(s) = v
                            && let Some(x) = t.strip(s)
                        {
                            *s = x.to_owned();
                        }
                    }
                }
            }
        }
    }
    if emptied {
        m.shift_remove("matchExpressions");
    }
    if map_ns_name
        && let Some(Value::String(v)) = m
            .get_mut("matchLabels")
            .and_then(|l| l.get_mut(NAMESPACE_NAME_LABEL))
        && let Some(x) = t.strip(v)
    {
        *v = x.to_owned();
    }
}

fn pod_spec_down(t: &TenantId, spec: &mut Value) {
    let Value::Object(spec) = spec else { return };
    for p in affinity_term_paths() {
        for_each_path_infallible(spec, &p, &mut |term| {
            let Value::Object(m) = term else { return };
            if let Some(Value::Array(nss)) = m.get_mut("namespaces") {
                for ns in nss {
                    if let Value::String(s) = ns
                        && let Some(x) = t.strip(s)
                    {
                        *s = x.to_owned();
                    }
                }
            }
            if let Some(sel) = m.get_mut("namespaceSelector") {
                selector_down(t, sel, true);
            }
        });
    }
}

fn pvc_spec_down(t: &TenantId, spec: &mut Value) {
    let Value::Object(spec) = spec else { return };
    if let Some(Value::String(v)) = spec.get_mut("volumeName")
        && let Some(s) = t.strip(v)
    {
        *v = s.to_owned();
    }
    if let Some(Value::String(ns)) = spec
        .get_mut("dataSourceRef")
        .and_then(|d| d.get_mut("namespace"))
        && let Some(s) = t.strip(ns)
    {
        *ns = s.to_owned();
    }
}

fn client_config_down(t: &TenantId, cc: &mut Map<String, Value>) {
    if let Some(Value::String(ns)) = cc.get_mut("service").and_then(|s| s.get_mut("namespace"))
        && let Some(s) = t.strip(ns)
    {
        *ns = s.to_owned();
    }
}

fn group_down(ctx: &TenantContext, g: &mut Value) {
    if let Value::String(s) = g
        && let Some(d) = ctx.catalog.rule_group_down(&ctx.tenant, s)
    {
        *s = d;
    }
}

fn rules_down(ctx: &TenantContext, rules: Option<&mut Value>, cluster: bool) {
    let Some(Value::Array(rules)) = rules else {
        return;
    };
    for rule in rules {
        let Value::Object(rule) = rule else { continue };
        if cluster
            && let Ok(Some(info)) = rule_resource_infos(ctx, rule, true)
            && let Some(Value::Array(names)) = rule.get_mut("resourceNames")
        {
            for n in names {
                if let Value::String(s) = n
                    && let Some(d) = name_down(&ctx.tenant, &info, s)
                {
                    *s = d;
                }
            }
        }
        if let Some(Value::Array(groups)) = rule.get_mut("apiGroups") {
            for g in groups {
                group_down(ctx, g);
            }
        }
    }
}

/// Keeps a subject only if it is an identity of this tenant (rewritten to the tenant's name).
fn subject_down(t: &TenantId, s: &mut Value) -> bool {
    let Value::Object(s) = s else { return false };
    let kind = s
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match kind.as_str() {
        "User" | "Group" => {
            let Some(Value::String(n)) = s.get_mut("name") else {
                return false;
            };
            let mapped = if kind == "User" {
                map_user_down(t, n)
            } else {
                map_group_down(t, n)
            };
            match mapped {
                Some(m) => {
                    *n = m;
                    true
                }
                None => false,
            }
        }
        "ServiceAccount" => match s.get_mut("namespace") {
            Some(Value::String(ns)) if !ns.is_empty() => match t.strip(ns) {
                Some(x) => {
                    *ns = x.to_owned();
                    true
                }
                None => false,
            },
            // Empty namespace: the binding's own, which is the tenant's.
            _ => true,
        },
        _ => false,
    }
}

fn user_info_down(t: &TenantId, ui: &mut Value) {
    let Value::Object(ui) = ui else { return };
    if let Some(Value::String(u)) = ui.get_mut("username")
        && let Some(d) = map_user_down(t, u)
    {
        *u = d;
    }
    if let Some(Value::Array(gs)) = ui.get_mut("groups") {
        gs.retain_mut(|g| match g {
            Value::String(s) => match map_user_info_group_down(t, s) {
                Some(d) => {
                    *s = d;
                    true
                }
                None => false,
            },
            _ => false,
        });
    }
    if let Some(Value::Object(extra)) = ui.get_mut("extra") {
        extra.shift_remove(TENANT_LABEL);
    }
}

fn sar_down(ctx: &TenantContext, o: &mut Map<String, Value>) {
    let t = &ctx.tenant;
    if let Some(Value::Object(spec)) = o.get_mut("spec") {
        if let Some(Value::Object(ra)) = spec.get_mut("resourceAttributes") {
            let group = ra
                .get("group")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let resource = ra
                .get("resource")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            if let Some(Value::String(ns)) = ra.get_mut("namespace")
                && let Some(s) = t.strip(ns)
            {
                *ns = s.to_owned();
            }
            if let Some(info) = ctx
                .catalog
                .resolve_upstream_any_version(t, &group, &resource)
                && info.prefixes_name()
                && let Some(Value::String(n)) = ra.get_mut("name")
                && let Some(d) = name_down(t, &info, n)
            {
                *n = d;
            }
            if let Some(g) = ra.get_mut("group") {
                group_down(ctx, g);
            }
        }
        if let Some(Value::String(u)) = spec.get_mut("user")
            && let Some(d) = map_user_down(t, u)
        {
            *u = d;
        }
        if let Some(Value::Array(gs)) = spec.get_mut("groups") {
            gs.retain_mut(|g| match g {
                Value::String(s) => match map_group_down(t, s) {
                    Some(d) => {
                        *s = d;
                        true
                    }
                    None => false,
                },
                _ => false,
            });
        }
        let mut drop_extra = false;
        if let Some(Value::Object(extra)) = spec.get_mut("extra") {
            extra.shift_remove(TENANT_LABEL);
            drop_extra = extra.is_empty();
        }
        if drop_extra {
            spec.shift_remove("extra");
        }
    }
    for f in ["reason", "evaluationError"] {
        if let Some(Value::String(s)) = o.get_mut("status").and_then(|st| st.get_mut(f)) {
            *s = text_down(ctx, s);
        }
    }
}

fn rules_review_status_down(ctx: &TenantContext, o: &mut Map<String, Value>) {
    let t = &ctx.tenant;
    let Some(Value::Object(st)) = o.get_mut("status") else {
        return;
    };
    if let Some(Value::Array(rules)) = st.get_mut("resourceRules") {
        for rule in rules {
            let Value::Object(rule) = rule else { continue };
            if let Ok(Some(info)) = rule_resource_infos(ctx, rule, true)
                && let Some(Value::Array(names)) = rule.get_mut("resourceNames")
            {
                for n in names {
                    if let Value::String(s) = n
                        && let Some(d) = name_down(t, &info, s)
                    {
                        *s = d;
                    }
                }
            }
            if let Some(Value::Array(groups)) = rule.get_mut("apiGroups") {
                groups.retain_mut(|g| match g {
                    Value::String(s) => match ctx.catalog.rule_group_down(t, s) {
                        Some(d) => {
                            *s = d;
                            true
                        }
                        None => false,
                    },
                    _ => true,
                });
            }
        }
    }
    if let Some(Value::String(s)) = st.get_mut("evaluationError") {
        *s = text_down(ctx, s);
    }
}

/// A `metav1.Status` (error bodies, watch ERROR events): messages and details un-prefixed,
/// other tenants' names scrubbed.
pub fn status_down(ctx: &TenantContext, o: &mut Map<String, Value>) {
    let t = &ctx.tenant;
    if let Some(Value::String(m)) = o.get_mut("message") {
        *m = text_down(ctx, m);
    }
    let Some(Value::Object(d)) = o.get_mut("details") else {
        return;
    };
    let group = d
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let kind = d
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if let Some(Value::String(n)) = d.get_mut("name") {
        let info = ctx.catalog.resolve_upstream_any_version(t, &group, &kind);
        let mapped = info
            .as_ref()
            .filter(|i| i.prefixes_name())
            .and_then(|i| name_down(t, i, n));
        *n = match mapped {
            Some(m) => m,
            // Namespaced objects' names are the tenant's own; anything else is scrubbed as text.
            None => text_down(ctx, n),
        };
    }
    if let Some(Value::String(g)) = d.get_mut("group")
        && let Some(s) = t.strip(g)
    {
        *g = s.to_owned();
    }
    if let Some(Value::Array(causes)) = d.get_mut("causes") {
        for c in causes {
            for f in ["message", "field"] {
                if let Some(Value::String(s)) = c.get_mut(f) {
                    *s = text_down(ctx, s);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Free text

/// What replaces another tenant's name in free text.
pub const REDACTED: &str = "<redacted>";

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
}

/// Free text (Status messages, Table cells, events' messages): replace "<tid>-x" by "x" and
/// the tenant's user prefix `paddock:<tid>:` by nothing; scrub other tenants' prefixed names.
///
/// A name starts where the previous byte cannot be part of a DNS label (start, space, quote,
/// `/`, `.`, `:` ...). Any other token of the tenant form `[a-z][a-z0-9]{5}-x` is replaced by
/// `<redacted>` up to the end of the name: paddock cannot tell another tenant's `barbar-db`
/// from a platform object `worker-1`, and a leak is worse than a redacted node name.
pub fn text_down(ctx: &TenantContext, s: &str) -> String {
    text_down_with(ctx, s, &|id| ctx.catalog.is_known_tenant(id))
}

/// [`text_down`] where `is_tenant(id)` says whether a 6-character id belongs to some tenant,
/// so that platform names of the same shape (`worker-1`) can be left alone.
pub fn text_down_with(ctx: &TenantContext, s: &str, is_tenant: &dyn Fn(&str) -> bool) -> String {
    // Nothing below can apply without a `-` (every upstream name rewritten here has one after
    // its id) or an identity prefix: most Table cells ("Running", "1/1", "5m").
    if !s.contains('-') && !s.contains("paddock:") {
        return s.to_owned();
    }
    let t = ctx.tenant.as_str();
    let user_prefix = format!("paddock:{t}:");
    // Shadow identities (subjects of ClusterRoleBindings) read as the identity they shadow.
    let s = s.replace(
        &format!("{}{t}:", crate::identity::CLUSTER_SHADOW_PREFIX),
        "",
    );
    let s = s.replace(&user_prefix, "");
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        let boundary = i == 0 || !is_name_byte(b[i - 1]);
        if boundary
            && b[i].is_ascii_lowercase()
            && i + TENANT_ID_LEN + 1 < b.len()
            && b[i + TENANT_ID_LEN] == b'-'
            && b[i..i + TENANT_ID_LEN]
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            && (is_name_byte(b[i + TENANT_ID_LEN + 1]) || b[i + TENANT_ID_LEN + 1] == b'.')
        {
            let id = &s[i..i + TENANT_ID_LEN];
            if id == t {
                out.push_str(&s[last..i]);
                i += TENANT_ID_LEN + 1;
                last = i;
                continue;
            }
            if is_tenant(id) {
                out.push_str(&s[last..i]);
                out.push_str(REDACTED);
                let mut j = i + TENANT_ID_LEN + 1;
                while j < b.len() && (is_name_byte(b[j]) || b[j] == b'.') {
                    j += 1;
                }
                i = j;
                last = j;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&s[last..]);
    out
}

#[cfg(test)]
#[path = "object_tests.rs"]
mod tests;
