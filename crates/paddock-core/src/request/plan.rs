//! Planning: the translated upstream request (path and query, how to treat the response).

use std::borrow::Cow;
use std::sync::Arc;

use super::actions::{Actions, Identity, Route};
use super::parse::{ApiPath, ParsedRequest, ResourcePath, Verb, query_flag};
use super::selectors::{KNOWN_QUERY, translate_query};
use crate::catalog::context::TenantContext;
use crate::identity::names::{check_plain_name_up, name_up};

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

use crate::catalog::{Policy, ResourceInfo, Scope, subresource_forbidden};
use crate::error::TranslateError;
use crate::identity::As;
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
    pub resource: Option<Arc<ResourceInfo>>,
    pub request: ParsedRequest,
    /// A namespaced kind listed across all namespaces (`get pods -A`): upstream answers for the
    /// whole cluster, the response side must drop other tenants' items.
    pub cluster_wide: bool,
    /// The pool of upstream connections the request takes.
    pub route: Route,
    /// The upstream identity the request carries (see [`Identity::resolve`]).
    pub identity: Identity,
    /// What the server does before and after sending.
    pub actions: Actions,
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

/// The upstream identity of a planned request, given its translated body (if any).
pub fn identity_for(plan: &Plan, translated_body: Option<&[u8]>) -> As {
    plan.identity.resolve(translated_body)
}

/// Does a successful request change what the RBAC sync derives (a ClusterRoleBinding or a
/// CRD written)?
pub fn needs_sync(plan: &Plan) -> bool {
    plan.actions.sync_rbac
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

/// `/<tid>-<seg>`, encoded as [`push_seg`] would encode the prefixed name (the id needs no
/// escaping), without making that name first.
fn push_prefixed_seg(out: &mut String, t: &TenantId, seg: &str) {
    out.push('/');
    out.push_str(t.as_str());
    out.push('-');
    out.extend(utf8_percent_encode(seg, SEGMENT));
}

/// Default deny: an unknown resource, a forbidden one, or a write to a shared one is an Err.
pub fn plan(ctx: &TenantContext, req: ParsedRequest) -> Result<Plan, TranslateError> {
    let mut p = Plan {
        upstream_path_and_query: String::new(),
        response: ResponseKind::PassThrough,
        long_running: false,
        upgrade: false,
        needs_body_translation: false,
        resource: None,
        // Put back below: the request is read while the plan is written.
        request: ParsedRequest {
            path: ApiPath::Root,
            verb: req.verb,
            query: Vec::new(),
        },
        cluster_wide: false,
        route: Route::Short,
        identity: Identity::Real,
        actions: Actions::default(),
        tenant: ctx.tenant.clone(),
    };
    // Sized for a typical translated path, so that it is allocated once.
    let mut path = String::with_capacity(96);
    let query = match &req.path {
        ApiPath::Resource(r) => {
            let info = plan_resource(ctx, &mut p, &req, r, &mut path)?;
            let query = translate_query(ctx, &info, r, req.verb, &req.query)?;
            p.actions = Actions::decide(&req, &info, p.cluster_wide);
            p.resource = Some(info);
            query
        }
        // Health of paddock's upstream is not the tenant's business beyond the summary.
        ApiPath::Healthz => {
            path.push_str("/readyz");
            Vec::new()
        }
        other => {
            p.response = document_path(ctx, other, &mut path)?;
            check_plain_query(&req.query)?
        }
    };
    p.request = req;
    p.upstream_path_and_query = path;
    if !query.is_empty() {
        p.upstream_path_and_query.push('?');
        let start = p.upstream_path_and_query.len();
        let mut ser =
            form_urlencoded::Serializer::for_suffix(&mut p.upstream_path_and_query, start);
        for (k, v) in &query {
            ser.append_pair(k, v);
        }
        ser.finish();
    }
    p.route = Route::of(p.request.verb, p.long_running, p.upgrade);
    p.identity = Identity::decide(p.resource.as_deref(), &p.upstream_path_and_query);
    Ok(p)
}

fn not_found_resource() -> TranslateError {
    TranslateError::not_found("the server could not find the requested resource")
}

/// The upstream path of a server document (discovery, OpenAPI, /version), and how its answer
/// is treated. A group the tenant cannot see is not found.
fn document_path(
    ctx: &TenantContext,
    doc: &ApiPath,
    path: &mut String,
) -> Result<ResponseKind, TranslateError> {
    let (t, cat) = (&ctx.tenant, &ctx.catalog);
    let group_up = |g: &str| -> Result<String, TranslateError> {
        if !cat.group_visible(t, g) {
            return Err(not_found_resource());
        }
        cat.upstream_group(t, g).ok_or_else(not_found_resource)
    };
    let kind = match doc {
        ApiPath::Root => {
            path.push('/');
            ResponseKind::Discovery
        }
        ApiPath::Version => {
            path.push_str("/version");
            ResponseKind::PassThrough
        }
        ApiPath::Api | ApiPath::Apis => {
            path.push_str(if *doc == ApiPath::Api {
                "/api"
            } else {
                "/apis"
            });
            ResponseKind::Discovery
        }
        ApiPath::ApiGroup { group } => {
            path.push_str("/apis");
            push_seg(path, &group_up(group)?);
            ResponseKind::Discovery
        }
        ApiPath::ApiGroupVersion { group, version } => {
            let ug = group_up(group)?;
            if !cat.upstream_versions(&ug).iter().any(|v| v == version) {
                return Err(not_found_resource());
            }
            push_group_version(path, group, &ug, version);
            ResponseKind::Discovery
        }
        ApiPath::OpenApiV2 | ApiPath::OpenApiV3Root => {
            let v2 = *doc == ApiPath::OpenApiV2;
            path.push_str(if v2 { "/openapi/v2" } else { "/openapi/v3" });
            ResponseKind::OpenApi
        }
        ApiPath::OpenApiV3 { group, version } => {
            let ug = group_up(group)?;
            path.push_str("/openapi/v3");
            push_group_version(path, group, &ug, version);
            ResponseKind::OpenApi
        }
        ApiPath::Healthz | ApiPath::Resource(_) => {
            return Err(TranslateError::Internal("not a server document".to_owned()));
        }
    };
    Ok(kind)
}

/// `/api/<v>` for the core group, `/apis/<upstream group>/<v>` for any other.
fn push_group_version(path: &mut String, group: &str, upstream_group: &str, version: &str) {
    if group.is_empty() {
        path.push_str("/api");
    } else {
        path.push_str("/apis");
        push_seg(path, upstream_group);
    }
    push_seg(path, version);
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
    req: &ParsedRequest,
    r: &ResourcePath,
    path: &mut String,
) -> Result<Arc<ResourceInfo>, TranslateError> {
    let t = &ctx.tenant;
    let verb = req.verb;
    let info = ctx
        .catalog
        .resolve_shared(t, &r.group, &r.version, &r.resource)
        .ok_or_else(not_found_resource)?;
    check_access(&info, r, verb)?;
    p.cluster_wide = check_scope(&info, r, verb)?;
    push_group_version(
        path,
        &info.upstream_group,
        &info.upstream_group,
        &info.version,
    );
    if r.legacy_watch {
        path.push_str("/watch");
    }
    if let Some(ns) = &r.namespace {
        check_prefixed_len(NameKind::Namespace, ns)?;
        path.push_str("/namespaces");
        push_prefixed_seg(path, t, ns);
    }
    push_seg(path, &info.resource);
    if let Some(name) = &r.name {
        // A name that cannot exist upstream: for a read or a delete the object does not exist.
        let absent = |e| match e {
            TranslateError::Invalid(m) if verb.is_read() || verb == Verb::Delete => {
                TranslateError::NotFound(m)
            }
            e => e,
        };
        if let Some(up) = crate::rules::apiservice::object_name_up(ctx, &info, name) {
            // A name the kind's rule maps (an APIService's group part).
            push_seg(path, &up);
        } else if !info.prefixes_name() {
            push_seg(path, name);
        } else if info.is_crd() {
            push_seg(path, &name_up(t, &info, name).map_err(absent)?);
        } else {
            check_plain_name_up(&info, name).map_err(absent)?;
            push_prefixed_seg(path, t, name);
        }
    }
    if let Some(sub) = &r.subresource {
        push_seg(path, sub);
    }
    if let Some(pp) = &r.proxy_path {
        // Raw, as the client encoded it: it addresses the backend, not the apiserver.
        path.push('/');
        path.push_str(pp);
    }
    set_handling(p, req, r.subresource.as_deref());
    Ok(info)
}

/// The resource's policy, subresource and verbs: forbidden, shared read-only, unknown
/// subresource, unsupported verb.
fn check_access(info: &ResourceInfo, r: &ResourcePath, verb: Verb) -> Result<(), TranslateError> {
    // Only a refusal names the resource: made then, not for every request.
    let gr = || group_resource(info);
    if info.policy == Policy::Forbidden {
        return Err(TranslateError::forbidden(format!(
            "{} is forbidden: this resource is not available to tenants of this cluster",
            gr()
        )));
    }
    if let Some(sub) = &r.subresource {
        if !info.subresources.iter().any(|s| s == sub) {
            return Err(not_found_resource());
        }
        if subresource_forbidden(&info.upstream_group, &info.resource, sub) {
            return Err(TranslateError::forbidden(format!(
                "{}/{sub} is forbidden: this subresource is not available to tenants of this cluster",
                gr()
            )));
        }
    }
    if info.policy == Policy::SharedReadOnly && !verb.is_read() {
        return Err(TranslateError::forbidden(format!(
            "{gr} is forbidden: {} is not allowed, {gr} are shared read-only in this cluster",
            verb.as_str(),
            gr = gr()
        )));
    }
    if r.subresource.is_none()
        && !info.verbs.is_empty()
        && !info.verbs.iter().any(|v| v == verb.as_str())
    {
        return Err(TranslateError::MethodNotAllowed(format!(
            "{} does not support {}",
            gr(),
            verb.as_str()
        )));
    }
    Ok(())
}

fn group_resource(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.resource.clone()
    } else {
        format!("{}.{}", info.resource, info.group)
    }
}

/// Scope against the path: `Ok(true)` for a namespaced kind read across all namespaces.
fn check_scope(info: &ResourceInfo, r: &ResourcePath, verb: Verb) -> Result<bool, TranslateError> {
    match (info.scope, &r.namespace) {
        (Scope::Cluster, Some(_)) => Err(not_found_resource()),
        (Scope::Namespaced, None) if r.name.is_some() => Err(not_found_resource()),
        (Scope::Namespaced, None) => match verb {
            // `get pods -A`: upstream lists cluster-wide (only as far as upstream RBAC lets
            // the tenant's identity), the response side drops other tenants' items.
            Verb::List | Verb::Watch => Ok(true),
            Verb::DeleteCollection => Err(TranslateError::forbidden(format!(
                "{} is forbidden: deleting a collection across all namespaces is not allowed",
                group_resource(info)
            ))),
            _ => Err(not_found_resource()),
        },
        _ => Ok(false),
    }
}

/// How the response is treated, whether the request is long-running or an upgrade, and
/// whether its body is translated.
fn set_handling(p: &mut Plan, req: &ParsedRequest, sub: Option<&str>) {
    let verb = req.verb;
    p.response = match verb {
        Verb::Connect => ResponseKind::PassThrough,
        Verb::Get if sub == Some("log") => ResponseKind::PassThrough,
        Verb::List | Verb::DeleteCollection => ResponseKind::List,
        Verb::Watch => ResponseKind::Watch,
        _ => ResponseKind::Object,
    };
    p.long_running = match verb {
        Verb::Watch | Verb::Connect => true,
        Verb::Get if sub == Some("log") => query_flag(&req.query, "follow"),
        _ => false,
    };
    p.upgrade = verb == Verb::Connect && matches!(sub, Some("exec" | "attach" | "portforward"));
    p.needs_body_translation = matches!(
        verb,
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
    );
}

/// Accept header to send upstream (protobuf and CBOR removed; Table and aggregated discovery
/// kept): paddock rewrites JSON only. The client's own header when it asks for neither (the
/// common case, which then copies nothing).
pub fn upstream_accept(client_accept: Option<&str>) -> Cow<'_, str> {
    let accept = client_accept.unwrap_or("");
    let kept = |r: &&str| !r.is_empty() && !is_binary_media_range(r);
    if !accept.is_empty() && accept.split(',').all(|r| r.trim() == r && kept(&r)) {
        return Cow::Borrowed(accept);
    }
    let kept: Vec<&str> = accept.split(',').map(str::trim).filter(kept).collect();
    if kept.is_empty() {
        Cow::Borrowed("application/json")
    } else {
        Cow::Owned(kept.join(","))
    }
}

/// A media range whose type names protobuf or CBOR (any case).
fn is_binary_media_range(range: &str) -> bool {
    let media_type = range.split(';').next().unwrap_or("").trim().as_bytes();
    let names = |word: &[u8]| {
        media_type
            .windows(word.len())
            .any(|w| w.eq_ignore_ascii_case(word))
    };
    names(b"protobuf") || names(b"cbor")
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

impl Plan {
    /// Does this request, by a caller with these (tenant-view) groups, carry the tenant's
    /// platform grant group (`platform_grant::grant_group`)? Only for a kind the platform
    /// granted the tenant, and only for the tenant's admins.
    pub fn asserts_platform_grant(&self, groups: &[String]) -> bool {
        self.resource
            .as_ref()
            .is_some_and(|i| i.policy == crate::catalog::Policy::PlatformGranted)
            && groups
                .iter()
                .any(|g| g == crate::identity::TENANT_ADMIN_GROUP)
    }
}
