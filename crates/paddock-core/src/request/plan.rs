//! Planning: the translated upstream request (path and query, how to treat the response).

use super::parse::{ApiPath, ParsedRequest, ResourcePath, Verb, query_flag};
use super::selectors::{KNOWN_QUERY, translate_query};
use crate::context::TenantContext;
use crate::names::name_up;

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

use crate::catalog::{Policy, ResourceInfo, Scope, subresource_forbidden};
use crate::error::TranslateError;
use crate::tenant::{NameKind, TenantId, check_prefixed_len};

/// How the server must treat the response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseKind {
    Object,
    List,
    Watch,
    Table,
    TableWatch,
    Discovery,
    OpenApi,
    Status,
    /// logs, exec, proxy, /version, health checks
    PassThrough,
}

/// The translated upstream request.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Already translated, percent-encoded.
    pub upstream_path_and_query: String,
    pub response: ResponseKind,
    /// watch, follow logs, exec/attach/portforward, proxy
    pub long_running: bool,
    /// exec/attach/portforward (101 expected)
    pub upgrade: bool,
    /// create/update/patch (and delete, whose DeleteOptions body is checked) with a body
    pub needs_body_translation: bool,
    pub resource: Option<ResourceInfo>,
    pub request: ParsedRequest,
    /// A namespaced kind listed across all namespaces (`get pods -A`): upstream answers for the
    /// whole cluster, the response side must drop other tenants' items.
    pub cluster_wide: bool,
    tenant: TenantId,
}

impl Plan {
    /// The tenant this plan was made for.
    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }
    /// The namespace in the URL, tenant view.
    pub fn namespace(&self) -> Option<&str> {
        match &self.request.path {
            ApiPath::Resource(r) => r.namespace.as_deref(),
            _ => None,
        }
    }
    /// The resource path, if this is a resource request.
    pub fn resource_path(&self) -> Option<&ResourcePath> {
        match &self.request.path {
            ApiPath::Resource(r) => Some(r),
            _ => None,
        }
    }
    /// The subresource in the URL, if any.
    pub fn subresource(&self) -> Option<&str> {
        self.resource_path().and_then(|r| r.subresource.as_deref())
    }
}

// ---------------------------------------------------------------------------------------------
// Planning

/// Path segments are encoded like Go's url.PathEscape would leave them readable.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'?')
    .add(b'<')
    .add(b'>')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']');

fn push_seg(out: &mut String, seg: &str) {
    out.push('/');
    out.extend(utf8_percent_encode(seg, SEGMENT));
}

/// Default deny: an unknown resource, a forbidden one, or a write to a shared one is an Err.
pub fn plan(ctx: &TenantContext, req: ParsedRequest) -> Result<Plan, TranslateError> {
    let t = &ctx.tenant;
    let cat = &ctx.catalog;
    let mut p = Plan {
        upstream_path_and_query: String::new(),
        response: ResponseKind::PassThrough,
        long_running: false,
        upgrade: false,
        needs_body_translation: false,
        resource: None,
        request: req,
        cluster_wide: false,
        tenant: t.clone(),
    };
    let group_up = |g: &str| -> Result<String, TranslateError> {
        if !cat.group_visible(t, g) {
            return Err(TranslateError::not_found(
                "the server could not find the requested resource",
            ));
        }
        cat.upstream_group(t, g).ok_or_else(|| {
            TranslateError::not_found("the server could not find the requested resource".to_owned())
        })
    };
    let mut path = String::new();
    let query: Vec<(String, String)>;
    match &p.request.path {
        ApiPath::Root => {
            path.push('/');
            p.response = ResponseKind::Discovery;
            query = check_plain_query(&p.request.query)?;
        }
        ApiPath::Version => {
            path.push_str("/version");
            query = check_plain_query(&p.request.query)?;
        }
        ApiPath::Healthz => {
            // Health of paddock's upstream is not the tenant's business beyond the summary.
            path.push_str("/readyz");
            query = Vec::new();
        }
        ApiPath::Api => {
            path.push_str("/api");
            p.response = ResponseKind::Discovery;
            query = check_plain_query(&p.request.query)?;
        }
        ApiPath::Apis => {
            path.push_str("/apis");
            p.response = ResponseKind::Discovery;
            query = check_plain_query(&p.request.query)?;
        }
        ApiPath::ApiGroup { group } => {
            path.push_str("/apis");
            push_seg(&mut path, &group_up(group)?);
            p.response = ResponseKind::Discovery;
            query = check_plain_query(&p.request.query)?;
        }
        ApiPath::ApiGroupVersion { group, version } => {
            let ug = group_up(group)?;
            if !cat.upstream_versions(&ug).iter().any(|v| v == version) {
                return Err(TranslateError::not_found(
                    "the server could not find the requested resource",
                ));
            }
            if group.is_empty() {
                path.push_str("/api");
            } else {
                path.push_str("/apis");
                push_seg(&mut path, &ug);
            }
            push_seg(&mut path, version);
            p.response = ResponseKind::Discovery;
            query = check_plain_query(&p.request.query)?;
        }
        ApiPath::OpenApiV2 => {
            path.push_str("/openapi/v2");
            p.response = ResponseKind::OpenApi;
            query = check_plain_query(&p.request.query)?;
        }
        ApiPath::OpenApiV3Root => {
            path.push_str("/openapi/v3");
            p.response = ResponseKind::OpenApi;
            query = check_plain_query(&p.request.query)?;
        }
        ApiPath::OpenApiV3 { group, version } => {
            let ug = group_up(group)?;
            path.push_str("/openapi/v3");
            if group.is_empty() {
                path.push_str("/api");
            } else {
                path.push_str("/apis");
                push_seg(&mut path, &ug);
            }
            push_seg(&mut path, version);
            p.response = ResponseKind::OpenApi;
            query = check_plain_query(&p.request.query)?;
        }
        ApiPath::Resource(r) => {
            let r = r.clone();
            let info = plan_resource(ctx, &mut p, &r, &mut path)?;
            query = translate_query(ctx, &info, &r, p.request.verb, &p.request.query)?;
            p.resource = Some(info);
        }
    }
    p.upstream_path_and_query = path;
    if !query.is_empty() {
        let mut ser = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &query {
            ser.append_pair(k, v);
        }
        p.upstream_path_and_query.push('?');
        p.upstream_path_and_query.push_str(&ser.finish());
    }
    Ok(p)
}

fn check_plain_query(q: &[(String, String)]) -> Result<Vec<(String, String)>, TranslateError> {
    for (k, _) in q {
        if !KNOWN_QUERY.contains(&k.as_str()) {
            return Err(TranslateError::bad(format!(
                "unknown query parameter {k:?}"
            )));
        }
    }
    Ok(q.to_vec())
}

fn plan_resource(
    ctx: &TenantContext,
    p: &mut Plan,
    r: &ResourcePath,
    path: &mut String,
) -> Result<ResourceInfo, TranslateError> {
    let t = &ctx.tenant;
    let verb = p.request.verb;
    let not_found =
        || TranslateError::not_found("the server could not find the requested resource");
    let info = ctx
        .catalog
        .resolve(t, &r.group, &r.version, &r.resource)
        .ok_or_else(not_found)?;
    let gr = if info.group.is_empty() {
        info.resource.clone()
    } else {
        format!("{}.{}", info.resource, info.group)
    };
    if info.policy == Policy::Forbidden {
        return Err(TranslateError::forbidden(format!(
            "{gr} is forbidden: this resource is not available to tenants of this cluster"
        )));
    }
    if let Some(sub) = &r.subresource {
        if !info.subresources.iter().any(|s| s == sub) {
            return Err(not_found());
        }
        if subresource_forbidden(&info.upstream_group, &info.resource, sub) {
            return Err(TranslateError::forbidden(format!(
                "{gr}/{sub} is forbidden: this subresource is not available to tenants of this cluster"
            )));
        }
    }
    if info.policy == Policy::SharedReadOnly && !verb.is_read() {
        return Err(TranslateError::forbidden(format!(
            "{gr} is forbidden: {} is not allowed, {gr} are shared read-only in this cluster",
            verb.as_str()
        )));
    }
    if r.subresource.is_none()
        && !info.verbs.is_empty()
        && !info.verbs.iter().any(|v| v == verb.as_str())
    {
        return Err(TranslateError::MethodNotAllowed(format!(
            "{gr} does not support {}",
            verb.as_str()
        )));
    }
    match (info.scope, &r.namespace) {
        (Scope::Cluster, Some(_)) => return Err(not_found()),
        (Scope::Namespaced, None) => {
            if r.name.is_some() {
                return Err(not_found());
            }
            match verb {
                // `get pods -A`: upstream lists cluster-wide (only as far as upstream RBAC lets
                // the tenant's identity), the response side drops other tenants' items.
                Verb::List | Verb::Watch => p.cluster_wide = true,
                Verb::DeleteCollection => {
                    return Err(TranslateError::forbidden(format!(
                        "{gr} is forbidden: deleting a collection across all namespaces is not allowed"
                    )));
                }
                _ => return Err(not_found()),
            }
        }
        _ => {}
    }

    // Path.
    if info.upstream_group.is_empty() {
        path.push_str("/api");
    } else {
        path.push_str("/apis");
        push_seg(path, &info.upstream_group);
    }
    push_seg(path, &info.version);
    if r.legacy_watch {
        path.push_str("/watch");
    }
    if let Some(ns) = &r.namespace {
        check_prefixed_len(NameKind::Namespace, ns)?;
        path.push_str("/namespaces");
        push_seg(path, &t.upstream_name(ns));
    }
    push_seg(path, &info.resource);
    if let Some(name) = &r.name {
        let up = if info.prefixes_name() {
            name_up(t, &info, name).map_err(|e| match e {
                // A name that cannot exist upstream: the object does not exist.
                TranslateError::Invalid(m) if verb.is_read() || verb == Verb::Delete => {
                    TranslateError::NotFound(m)
                }
                e => e,
            })?
        } else {
            name.clone()
        };
        push_seg(path, &up);
    }
    if let Some(sub) = &r.subresource {
        push_seg(path, sub);
    }
    if let Some(pp) = &r.proxy_path {
        // Raw, as the client encoded it: it addresses the backend, not the apiserver.
        path.push('/');
        path.push_str(pp);
    }

    // Response handling.
    let sub = r.subresource.as_deref();
    p.response = match verb {
        Verb::Connect => ResponseKind::PassThrough,
        Verb::Get if sub == Some("log") => ResponseKind::PassThrough,
        Verb::List | Verb::DeleteCollection => ResponseKind::List,
        Verb::Watch => ResponseKind::Watch,
        _ => ResponseKind::Object,
    };
    p.long_running = match verb {
        Verb::Watch | Verb::Connect => true,
        Verb::Get if sub == Some("log") => query_flag(&p.request.query, "follow"),
        _ => false,
    };
    p.upgrade = verb == Verb::Connect && matches!(sub, Some("exec" | "attach" | "portforward"));
    p.needs_body_translation = matches!(
        verb,
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
    );
    Ok(info)
}

/// Accept header to send upstream (protobuf and CBOR removed; Table and aggregated discovery
/// kept): paddock rewrites JSON only.
pub fn upstream_accept(client_accept: Option<&str>) -> String {
    let kept: Vec<&str> = client_accept
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .filter(|r| {
            let mt = r
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            !(mt.contains("protobuf") || mt.contains("cbor"))
        })
        .collect();
    if kept.is_empty() {
        "application/json".to_owned()
    } else {
        kept.join(",")
    }
}

/// How to treat the response, given the client's Accept: `as=Table` turns lists, objects and
/// watches into Tables; everything else is decided by the plan.
pub fn response_kind_for(plan: &Plan, accept: Option<&str>) -> ResponseKind {
    let wants_table = accept.is_some_and(|a| {
        a.split(',').any(|r| {
            let mut parts = r.split(';').map(str::trim);
            let mt = parts.next().unwrap_or("");
            (mt.contains("json") || mt == "*/*")
                && parts.any(|p| p.eq_ignore_ascii_case("as=Table"))
        })
    });
    match plan.response {
        ResponseKind::List | ResponseKind::Object if wants_table => ResponseKind::Table,
        ResponseKind::Watch if wants_table => ResponseKind::TableWatch,
        k => k,
    }
}
