//! Request side: parse what the tenant asked for (method + path + query), then plan the
//! upstream request (translated path and query, how to treat the response).

use std::sync::Arc;

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};

use crate::catalog::{
    Catalog, Policy, ResourceInfo, Scope, split_api_version, subresource_forbidden,
};
use crate::error::TranslateError;
use crate::tenant::{NAMESPACE_NAME_LABEL, NameKind, TENANT_LABEL, TenantId, check_prefixed_len};

/// What the tenant asked for, parsed from method + path + query (no translation yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiPath {
    /// `/`
    Root,
    /// `/version`
    Version,
    /// `/healthz`, `/livez`, `/readyz` (and their sub-checks)
    Healthz,
    /// `/api`
    Api,
    /// `/apis`
    Apis,
    /// `/apis/<g>`
    ApiGroup {
        group: String,
    },
    /// `/api/v1` (group ""), `/apis/<g>/<v>`
    ApiGroupVersion {
        group: String,
        version: String,
    },
    OpenApiV2,
    OpenApiV3Root,
    /// `/openapi/v3/apis/<g>/<v>`, `/openapi/v3/api/v1` (group "")
    OpenApiV3 {
        group: String,
        version: String,
    },
    Resource(ResourcePath),
}

/// A resource path in the tenant's view, every segment percent-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// `/api/v1/watch/...` form.
    pub legacy_watch: bool,
    /// For `.../proxy/<path>`: the remainder after `proxy/`, still percent-encoded as received
    /// (it belongs to the proxied backend, not to the apiserver).
    pub proxy_path: Option<String>,
}

/// The Kubernetes verb, from method and path shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
    Connect,
}

impl Verb {
    /// The RBAC / discovery name of the verb.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Connect => "connect",
        }
    }
    fn is_read(self) -> bool {
        matches!(self, Verb::Get | Verb::List | Verb::Watch)
    }
}

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedRequest {
    pub path: ApiPath,
    pub verb: Verb,
    /// Decoded query pairs, in order (repeated keys kept: exec's `command`).
    pub query: Vec<(String, String)>,
}

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

/// Everything the translation needs about the caller. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TenantContext {
    pub tenant: TenantId,
    pub catalog: Arc<Catalog>,
}

// ---------------------------------------------------------------------------------------------
// Parsing

const CONNECT_SUBRESOURCES: &[&str] = &["exec", "attach", "portforward", "proxy"];

fn decode_segment(seg: &str) -> Result<String, TranslateError> {
    let s = percent_decode_str(seg)
        .decode_utf8()
        .map_err(|_| TranslateError::bad(format!("path segment {seg:?} is not UTF-8")))?;
    Ok(s.into_owned())
}

/// A name in a URL: not empty, not `.`/`..`, no `/` or `%` (the apiserver's own rule).
fn check_path_name(s: &str, what: &str) -> Result<(), TranslateError> {
    if s.is_empty() || s == "." || s == ".." || s.contains('/') || s.contains('%') {
        return Err(TranslateError::bad(format!("invalid {what} {s:?} in path")));
    }
    Ok(())
}

/// DNS-1123 label: what namespaces must be.
pub(crate) fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn parse_bool(v: &str) -> bool {
    // Go's strconv.ParseBool, which the apiserver uses for `watch`, `follow`, ...
    matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True")
}

fn query_flag(query: &[(String, String)], key: &str) -> bool {
    query.iter().any(|(k, v)| k == key && parse_bool(v))
}

/// Parses method + path + raw query into the tenant's request. No catalog needed.
pub fn parse_request(
    method: &str,
    path: &str,
    query: Option<&str>,
) -> Result<ParsedRequest, TranslateError> {
    let query: Vec<(String, String)> = query
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let method = method.to_ascii_uppercase();
    let Some(rel) = path.strip_prefix('/') else {
        return Err(TranslateError::bad(format!(
            "path {path:?} must start with /"
        )));
    };
    let raw: Vec<&str> = if rel.is_empty() {
        Vec::new()
    } else {
        rel.split('/').collect()
    };

    let non_resource = |p: ApiPath| -> Result<ParsedRequest, TranslateError> {
        if method != "GET" && method != "HEAD" {
            return Err(TranslateError::MethodNotAllowed(format!(
                "{method} is not allowed on {path}"
            )));
        }
        Ok(ParsedRequest {
            path: p,
            verb: Verb::Get,
            query: query.clone(),
        })
    };

    // Everything up to a proxy remainder is decoded; a trailing slash is tolerated except
    // where it is part of a proxied path.
    let first = raw.first().copied().unwrap_or("");
    match first {
        "" if raw.len() <= 1 => return non_resource(ApiPath::Root),
        // The Python client asks `/version/`, which the apiserver answers too.
        "version" if raw.len() == 1 || (raw.len() == 2 && raw[1].is_empty()) => {
            return non_resource(ApiPath::Version);
        }
        "healthz" | "livez" | "readyz" => return non_resource(ApiPath::Healthz),
        "openapi" => {
            let segs: Vec<String> = raw[1..]
                .iter()
                .filter(|s| !s.is_empty())
                .map(|s| decode_segment(s))
                .collect::<Result<_, _>>()?;
            let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
            return match segs.as_slice() {
                ["v2"] => non_resource(ApiPath::OpenApiV2),
                ["v3"] => non_resource(ApiPath::OpenApiV3Root),
                ["v3", "api", v] => non_resource(ApiPath::OpenApiV3 {
                    group: String::new(),
                    version: (*v).to_owned(),
                }),
                ["v3", "apis", g, v] => non_resource(ApiPath::OpenApiV3 {
                    group: (*g).to_owned(),
                    version: (*v).to_owned(),
                }),
                _ => Err(TranslateError::not_found(format!(
                    "the server could not find {path}"
                ))),
            };
        }
        "api" | "apis" => {}
        _ => {
            return Err(TranslateError::not_found(format!(
                "the server could not find {path}"
            )));
        }
    }

    let core = first == "api";
    // Locate where the resource part starts.
    let (group, version, rest_start) = if core {
        match raw.get(1).copied() {
            None | Some("") if raw.len() <= 2 => return non_resource(ApiPath::Api),
            Some(v) => {
                let v = decode_segment(v)?;
                if raw.len() == 2 || (raw.len() == 3 && raw[2].is_empty()) {
                    return non_resource(ApiPath::ApiGroupVersion {
                        group: String::new(),
                        version: v,
                    });
                }
                (String::new(), v, 2)
            }
            None => return non_resource(ApiPath::Api),
        }
    } else {
        let g = match raw.get(1).copied() {
            None | Some("") if raw.len() <= 2 => return non_resource(ApiPath::Apis),
            Some(g) => decode_segment(g)?,
            None => return non_resource(ApiPath::Apis),
        };
        match raw.get(2).copied() {
            None => return non_resource(ApiPath::ApiGroup { group: g }),
            Some("") if raw.len() == 3 => return non_resource(ApiPath::ApiGroup { group: g }),
            Some(v) => {
                let v = decode_segment(v)?;
                if raw.len() == 3 || (raw.len() == 4 && raw[3].is_empty()) {
                    return non_resource(ApiPath::ApiGroupVersion {
                        group: g,
                        version: v,
                    });
                }
                (g, v, 3)
            }
        }
    };
    check_path_name(&group, "group").or_else(|e| if group.is_empty() { Ok(()) } else { Err(e) })?;
    check_path_name(&version, "version")?;

    let mut rest: &[&str] = &raw[rest_start..];
    let mut legacy_watch = false;
    if rest.first() == Some(&"watch") {
        legacy_watch = true;
        rest = &rest[1..];
    }
    // Find the proxy remainder first: it is kept raw.
    let decoded: Vec<String>;
    let (namespace, resource, name, subresource, tail) = {
        // Decode only the structural segments (at most 6); the remainder stays raw.
        let take = rest.len().min(6);
        decoded = rest[..take]
            .iter()
            .map(|s| decode_segment(s))
            .collect::<Result<_, _>>()?;
        let d: Vec<&str> = decoded.iter().map(String::as_str).collect();
        let ns_form = d.first() == Some(&"namespaces");
        let ns_subresources = ["status", "finalize"];
        if ns_form && (d.len() <= 2 || (d.len() == 3 && ns_subresources.contains(&d[2]))) {
            // /namespaces, /namespaces/<ns>, /namespaces/<ns>/(status|finalize)
            (None, "namespaces", d.get(1).copied(), d.get(2).copied(), 3)
        } else if ns_form {
            // /namespaces/<ns>/<resource>[/<name>[/<sub>[/<proxy path>]]]
            (Some(d[1]), d[2], d.get(3).copied(), d.get(4).copied(), 5)
        } else {
            (
                None,
                d.first().copied().unwrap_or(""),
                d.get(1).copied(),
                d.get(2).copied(),
                3,
            )
        }
    };
    let proxy_path = if rest.len() > tail {
        Some(rest[tail..].join("/"))
    } else {
        None
    };
    if resource.is_empty() {
        return Err(TranslateError::not_found(format!(
            "the server could not find {path}"
        )));
    }
    check_path_name(resource, "resource")?;
    if let Some(ns) = namespace
        && !is_dns_label(ns)
    {
        return Err(TranslateError::bad(format!(
            "invalid namespace {ns:?} in path"
        )));
    }
    if let Some(n) = name {
        check_path_name(n, "name")?;
    }
    if let Some(s) = subresource {
        check_path_name(s, "subresource")?;
    }
    if proxy_path.is_some() && subresource != Some("proxy") {
        return Err(TranslateError::not_found(format!(
            "the server could not find {path}"
        )));
    }
    if subresource.is_some() && name.is_none() {
        return Err(TranslateError::not_found(format!(
            "the server could not find {path}"
        )));
    }
    // A proxy path with a trailing slash `pods/x/proxy/` keeps an empty remainder.
    let proxy_path = match proxy_path {
        Some(p) => Some(p),
        None if subresource == Some("proxy") && rest.len() == tail && path.ends_with('/') => {
            Some(String::new())
        }
        None => None,
    };

    let watch = legacy_watch || query_flag(&query, "watch");
    let connect = subresource.is_some_and(|s| CONNECT_SUBRESOURCES.contains(&s));
    let named = name.is_some();
    let not_allowed =
        || TranslateError::MethodNotAllowed(format!("{method} is not allowed on {path}"));
    let verb = if connect {
        Verb::Connect
    } else {
        match method.as_str() {
            "GET" | "HEAD" => {
                if watch {
                    Verb::Watch
                } else if named {
                    Verb::Get
                } else {
                    Verb::List
                }
            }
            "POST" => {
                if named && subresource.is_none() {
                    return Err(not_allowed());
                }
                Verb::Create
            }
            "PUT" if named => Verb::Update,
            "PATCH" if named => Verb::Patch,
            "DELETE" => {
                if named {
                    Verb::Delete
                } else {
                    Verb::DeleteCollection
                }
            }
            _ => return Err(not_allowed()),
        }
    };
    if legacy_watch && verb != Verb::Watch {
        return Err(not_allowed());
    }
    Ok(ParsedRequest {
        path: ApiPath::Resource(ResourcePath {
            group,
            version,
            resource: resource.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.map(str::to_owned),
            subresource: subresource.map(str::to_owned),
            legacy_watch,
            proxy_path,
        }),
        verb,
        query,
    })
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

/// Query parameters the apiserver documents (meta/v1 ListOptions, GetOptions, DeleteOptions,
/// CreateOptions, PatchOptions, UpdateOptions, pod log/exec/attach/portforward options,
/// `timeout` from client-go, `hash` from OpenAPI v3). Anything else is refused: a parameter we
/// do not know might carry a name we would forward untranslated.
const KNOWN_QUERY: &[&str] = &[
    "pretty",
    "watch",
    "labelSelector",
    "fieldSelector",
    "resourceVersion",
    "resourceVersionMatch",
    "limit",
    "continue",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "force",
    "propagationPolicy",
    "gracePeriodSeconds",
    "orphanDependents",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "includeObject",
    "timeout",
    "container",
    "follow",
    "previous",
    "sinceSeconds",
    "sinceTime",
    "timestamps",
    "tailLines",
    "limitBytes",
    "insecureSkipTLSVerifyBackend",
    "stream",
    "stdin",
    "stdout",
    "stderr",
    "tty",
    "command",
    "ports",
    "hash",
];

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

/// A cluster-scoped name the tenant wrote -> upstream. CRDs: `<plural>.<g>` ->
/// `<plural>.<tid>-<g>`; every other prefixed kind: `<tid>-<name>`.
pub fn name_up(t: &TenantId, info: &ResourceInfo, name: &str) -> Result<String, TranslateError> {
    if info.is_crd() {
        let (plural, group) = name.split_once('.').ok_or_else(|| {
            TranslateError::invalid(format!(
                "custom resource definition name {name:?} must be <plural>.<group>"
            ))
        })?;
        check_crd_group(group)?;
        check_prefixed_len(NameKind::DnsSubdomain, name)?;
        return Ok(format!("{plural}.{}", t.upstream_name(group)));
    }
    let kind = if info.upstream_group.is_empty() && info.resource == "namespaces" {
        NameKind::Namespace
    } else {
        NameKind::DnsSubdomain
    };
    check_prefixed_len(kind, name)?;
    Ok(t.upstream_name(name))
}

/// Inverse of [`name_up`]; None when the upstream name is not the tenant's.
pub fn name_down(t: &TenantId, info: &ResourceInfo, upstream: &str) -> Option<String> {
    if info.is_crd() {
        let (plural, group) = upstream.split_once('.')?;
        return Some(format!("{plural}.{}", t.strip(group)?));
    }
    t.strip(upstream).map(str::to_owned)
}

/// A tenant may not create a CRD in a built-in group (it would shadow or be shadowed by it).
pub(crate) fn check_crd_group(group: &str) -> Result<(), TranslateError> {
    if group.is_empty() || !group.contains('.') {
        return Err(TranslateError::invalid(format!(
            "custom resource group {group:?} must be a DNS subdomain with at least one dot"
        )));
    }
    if crate::catalog::is_builtin_group(group) {
        return Err(TranslateError::invalid(format!(
            "custom resource group {group:?} is a built-in API group"
        )));
    }
    check_prefixed_len(NameKind::DnsSubdomain, group)
}

fn translate_query(
    ctx: &TenantContext,
    info: &ResourceInfo,
    r: &ResourcePath,
    verb: Verb,
    q: &[(String, String)],
) -> Result<Vec<(String, String)>, TranslateError> {
    // Proxied requests carry the backend's own query: forward it as it is.
    if r.subresource.as_deref() == Some("proxy") {
        return Ok(q.to_vec());
    }
    let mut out = Vec::with_capacity(q.len() + 1);
    let mut saw_label = false;
    // The term every list of this resource must carry upstream: the tenant's own label on
    // what it owns; on shared read-only kinds, the absence of any tenant label, so that
    // paddock's per-tenant objects among them (each tenant's FlowSchema) stay out of every
    // answer, including Tables without objects, where the down rules could not see the label.
    let tenant_term = if !matches!(verb, Verb::List | Verb::Watch | Verb::DeleteCollection) {
        None
    } else if info.stamps_label() {
        Some(ctx.tenant.tenant_label_selector())
    } else if info.policy == Policy::SharedReadOnly {
        Some(format!("!{TENANT_LABEL}"))
    } else {
        None
    };
    // Repeated selectors are refused: which one the apiserver honours is not ours to guess,
    // and the tenant term must be in the one it does.
    for key in ["labelSelector", "fieldSelector"] {
        if q.iter().filter(|(k, _)| k == key).count() > 1 {
            return Err(TranslateError::bad(format!(
                "query parameter {key} may appear only once"
            )));
        }
    }
    for (k, v) in q {
        match k.as_str() {
            "labelSelector" => {
                let mut sel = translate_label_selector(ctx, info, v)?;
                if let Some(term) = tenant_term.as_deref().filter(|_| !saw_label) {
                    push_term(&mut sel, term);
                }
                saw_label = true;
                out.push((k.clone(), sel));
            }
            "fieldSelector" => out.push((k.clone(), translate_field_selector(ctx, info, v)?)),
            k2 if KNOWN_QUERY.contains(&k2) => out.push((k.clone(), v.clone())),
            _ => {
                return Err(TranslateError::bad(format!(
                    "unknown query parameter {k:?}"
                )));
            }
        }
    }
    if let Some(term) = tenant_term.filter(|_| !saw_label) {
        out.push(("labelSelector".to_owned(), term));
    }
    Ok(out)
}

fn push_term(sel: &mut String, term: &str) {
    if !sel.trim().is_empty() {
        sel.push(',');
    }
    sel.push_str(term);
}

/// Splits at commas outside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Rewrites a label selector: refuses terms on the tenant label, maps the values of
/// `kubernetes.io/metadata.name` when listing namespaces. Terms it does not change are kept
/// byte for byte.
pub fn translate_label_selector(
    ctx: &TenantContext,
    info: &ResourceInfo,
    sel: &str,
) -> Result<String, TranslateError> {
    if sel.trim().is_empty() {
        return Ok(String::new());
    }
    let map_ns_label = info.upstream_group.is_empty() && info.resource == "namespaces";
    let mut terms = Vec::new();
    for raw in split_top_level(sel) {
        let term = raw.trim();
        if term.is_empty() {
            return Err(TranslateError::bad(format!(
                "invalid label selector {sel:?}: empty term"
            )));
        }
        let parsed = parse_label_term(term)
            .ok_or_else(|| TranslateError::bad(format!("invalid label selector term {term:?}")))?;
        if parsed.key == TENANT_LABEL {
            return Err(TranslateError::forbidden(format!(
                "label selector on {TENANT_LABEL} is not allowed: the label is reserved"
            )));
        }
        if map_ns_label && parsed.key == NAMESPACE_NAME_LABEL && !parsed.values.is_empty() {
            let vals = parsed
                .values
                .iter()
                .map(|v| {
                    if v.is_empty() {
                        return Ok(String::new());
                    }
                    check_prefixed_len(NameKind::LabelValue, v)?;
                    Ok(ctx.tenant.upstream_name(v))
                })
                .collect::<Result<Vec<_>, TranslateError>>()?;
            terms.push(parsed.render(&vals));
        } else {
            terms.push(term.to_owned());
        }
    }
    Ok(terms.join(","))
}

struct LabelTerm<'a> {
    key: &'a str,
    /// "", "!", "=", "==", "!=", "in", "notin", ">", "<"
    op: &'a str,
    values: Vec<&'a str>,
}

impl LabelTerm<'_> {
    fn render(&self, vals: &[String]) -> String {
        match self.op {
            "in" | "notin" => format!("{} {} ({})", self.key, self.op, vals.join(",")),
            op => format!(
                "{}{}{}",
                self.key,
                op,
                vals.first().map(String::as_str).unwrap_or("")
            ),
        }
    }
}

fn parse_label_term(term: &str) -> Option<LabelTerm<'_>> {
    if let Some(open) = term.find('(') {
        let close = term.rfind(')')?;
        if close != term.len() - 1 || close < open {
            return None;
        }
        let head: Vec<&str> = term[..open].split_whitespace().collect();
        let [key, op] = head.as_slice() else {
            return None;
        };
        if *op != "in" && *op != "notin" {
            return None;
        }
        let values = term[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .collect();
        return Some(LabelTerm { key, op, values });
    }
    for op in ["!=", "==", "=", ">", "<"] {
        if let Some((k, v)) = term.split_once(op) {
            return Some(LabelTerm {
                key: k.trim(),
                op,
                values: vec![v.trim()],
            });
        }
    }
    if let Some(k) = term.strip_prefix('!') {
        return Some(LabelTerm {
            key: k.trim(),
            op: "!",
            values: vec![],
        });
    }
    if term.contains(char::is_whitespace) {
        return None;
    }
    Some(LabelTerm {
        key: term,
        op: "",
        values: vec![],
    })
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut esc = false;
    for c in s.chars() {
        if esc {
            cur.push('\\');
            cur.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if esc {
        cur.push('\\');
    }
    out.push(cur);
    out
}

fn unescape_field(v: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in v.chars() {
        if esc {
            out.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    out
}

fn escape_field(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// Rewrites a field selector: `metadata.name` of cluster-scoped kinds, `metadata.namespace`,
/// and the namespace, name (for cluster-scoped kinds) and apiVersion (tenant CRD groups) of
/// the rule table's object-reference fields (`involvedObject.*`, `regarding.*`, `related.*`).
/// Other keys (`spec.nodeName`, `status.phase`, ...) pass.
pub fn translate_field_selector(
    ctx: &TenantContext,
    info: &ResourceInfo,
    sel: &str,
) -> Result<String, TranslateError> {
    if sel.trim().is_empty() {
        return Ok(sel.to_owned());
    }
    let t = &ctx.tenant;
    struct Term {
        key: String,
        op: &'static str,
        value: String,
    }
    let mut terms = Vec::new();
    for raw in split_unescaped(sel, ',') {
        let (op, idx) = ["!=", "==", "="]
            .iter()
            .find_map(|op| find_unescaped(&raw, op).map(|i| (*op, i)))
            .ok_or_else(|| TranslateError::bad(format!("invalid field selector term {raw:?}")))?;
        terms.push(Term {
            key: raw[..idx].trim().to_owned(),
            op,
            value: unescape_field(&raw[idx + op.len()..]),
        });
    }
    // Fields that hold an object reference come from the rule table (`involvedObject`,
    // `regarding`, `related`); the kind of the referenced object decides whether its name is
    // prefixed.
    let ref_info = |field: &str| -> Option<ResourceInfo> {
        let kind = terms
            .iter()
            .find(|x| x.key == format!("{field}.kind"))?
            .value
            .clone();
        let av = terms
            .iter()
            .find(|x| x.key == format!("{field}.apiVersion"))
            .map(|x| x.value.clone());
        resolve_ref_kind(ctx, av.as_deref(), &kind)
    };
    let mut out = Vec::new();
    for term in &terms {
        let v = &term.value;
        let reference = term.key.split_once('.').filter(|(field, _)| {
            crate::rules::table::reference_field_selectors().any(|f| f == *field)
        });
        let new = if v.is_empty() {
            v.clone()
        } else {
            match (term.key.as_str(), reference) {
                ("metadata.name", _) if info.prefixes_name() => name_up(t, info, v)?,
                ("metadata.namespace", _) | (_, Some((_, "namespace"))) => {
                    check_prefixed_len(NameKind::Namespace, v)?;
                    t.upstream_name(v)
                }
                (_, Some((field, "name"))) => match ref_info(field) {
                    Some(i) if i.prefixes_name() => name_up(t, &i, v)?,
                    _ => v.clone(),
                },
                (_, Some((_, "apiVersion"))) => api_version_up(ctx, v),
                _ => v.clone(),
            }
        };
        out.push(format!("{}{}{}", term.key, term.op, escape_field(&new)));
    }
    Ok(out.join(","))
}

fn find_unescaped(s: &str, pat: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        // Bytes, not `&s[i..]`: after an escape `i` may sit inside a multi-byte character
        // (found by the path_parser fuzz target). A match starts at an ASCII byte, which is
        // always a character boundary.
        if b[i..].starts_with(pat.as_bytes()) {
            // `!=` must not be found as `=` after a `!`.
            if pat == "=" && i > 0 && b[i - 1] == b'!' {
                i += 1;
                continue;
            }
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Resolve a referenced kind (`involvedObject`, ownerReferences, roleRef ...) by apiVersion (if
/// given) and kind, in the tenant's view.
pub(crate) fn resolve_ref_kind(
    ctx: &TenantContext,
    api_version: Option<&str>,
    kind: &str,
) -> Option<ResourceInfo> {
    match api_version {
        Some(av) => ctx.catalog.resolve_kind(&ctx.tenant, av, kind),
        None => ["v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1"]
            .iter()
            .find_map(|av| ctx.catalog.resolve_kind(&ctx.tenant, av, kind)),
    }
}

/// A tenant-written apiVersion -> upstream (tenant CRD groups prefixed; others unchanged).
pub(crate) fn api_version_up(ctx: &TenantContext, av: &str) -> String {
    let (g, v) = split_api_version(av);
    if g.is_empty() || crate::catalog::is_builtin_group(g) {
        return av.to_owned();
    }
    match ctx.catalog.upstream_group(&ctx.tenant, g) {
        Some(ug) => format!("{ug}/{v}"),
        // Unknown group: it can only be one of the tenant's own (perhaps not yet created) CRDs.
        None => format!("{}/{v}", ctx.tenant.upstream_name(g)),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::tests::catalog;

    fn ctx() -> TenantContext {
        TenantContext {
            tenant: TenantId::parse("foofoo").unwrap(),
            catalog: Arc::new(catalog()),
        }
    }

    fn pr(method: &str, path: &str, q: Option<&str>) -> ParsedRequest {
        parse_request(method, path, q).unwrap()
    }

    fn up(method: &str, path: &str, q: Option<&str>) -> Result<Plan, TranslateError> {
        plan(&ctx(), parse_request(method, path, q)?)
    }

    fn up_path(method: &str, path: &str, q: Option<&str>) -> String {
        up(method, path, q).unwrap().upstream_path_and_query
    }

    fn res(p: &ParsedRequest) -> &ResourcePath {
        match &p.path {
            ApiPath::Resource(r) => r,
            other => panic!("not a resource: {other:?}"),
        }
    }

    #[test]
    fn parse_non_resource_paths() {
        assert_eq!(pr("GET", "/", None).path, ApiPath::Root);
        assert_eq!(pr("GET", "/version", None).path, ApiPath::Version);
        assert_eq!(pr("GET", "/healthz", None).path, ApiPath::Healthz);
        assert_eq!(pr("GET", "/livez", None).path, ApiPath::Healthz);
        assert_eq!(pr("GET", "/readyz", None).path, ApiPath::Healthz);
        assert_eq!(pr("GET", "/api", None).path, ApiPath::Api);
        assert_eq!(pr("GET", "/apis", None).path, ApiPath::Apis);
        assert_eq!(
            pr("GET", "/api/v1", None).path,
            ApiPath::ApiGroupVersion {
                group: "".into(),
                version: "v1".into()
            }
        );
        assert_eq!(
            pr("GET", "/apis/apps", None).path,
            ApiPath::ApiGroup {
                group: "apps".into()
            }
        );
        assert_eq!(
            pr("GET", "/apis/apps/v1", None).path,
            ApiPath::ApiGroupVersion {
                group: "apps".into(),
                version: "v1".into()
            }
        );
        assert_eq!(pr("GET", "/openapi/v2", None).path, ApiPath::OpenApiV2);
        assert_eq!(pr("GET", "/version/", None).path, ApiPath::Version);
        assert_eq!(pr("GET", "/openapi/v3", None).path, ApiPath::OpenApiV3Root);
        assert_eq!(
            pr("GET", "/openapi/v3/apis/apps/v1", None).path,
            ApiPath::OpenApiV3 {
                group: "apps".into(),
                version: "v1".into()
            }
        );
        assert_eq!(
            pr("GET", "/openapi/v3/api/v1", None).path,
            ApiPath::OpenApiV3 {
                group: "".into(),
                version: "v1".into()
            }
        );
        assert_eq!(
            parse_request("POST", "/apis", None)
                .unwrap_err()
                .http_code(),
            405
        );
        assert_eq!(
            parse_request("GET", "/metrics", None)
                .unwrap_err()
                .http_code(),
            404
        );
        assert_eq!(
            parse_request("GET", "/debug/pprof", None)
                .unwrap_err()
                .http_code(),
            404
        );
    }

    #[test]
    fn parse_resource_shapes_and_verbs() {
        let p = pr("GET", "/api/v1/pods", None);
        assert_eq!(p.verb, Verb::List);
        assert_eq!(res(&p).namespace, None);
        let p = pr("GET", "/api/v1/namespaces/default/pods", Some("watch=true"));
        assert_eq!(p.verb, Verb::Watch);
        assert_eq!(res(&p).namespace.as_deref(), Some("default"));
        let p = pr("GET", "/api/v1/namespaces/default/pods/web", None);
        assert_eq!(p.verb, Verb::Get);
        assert_eq!(res(&p).name.as_deref(), Some("web"));
        assert_eq!(
            pr("POST", "/api/v1/namespaces/default/pods", None).verb,
            Verb::Create
        );
        assert_eq!(
            pr("PUT", "/api/v1/namespaces/default/pods/web", None).verb,
            Verb::Update
        );
        assert_eq!(
            pr("PATCH", "/api/v1/namespaces/default/pods/web", None).verb,
            Verb::Patch
        );
        assert_eq!(
            pr("DELETE", "/api/v1/namespaces/default/pods/web", None).verb,
            Verb::Delete
        );
        assert_eq!(
            pr("DELETE", "/api/v1/namespaces/default/pods", None).verb,
            Verb::DeleteCollection
        );
        assert_eq!(
            parse_request("POST", "/api/v1/namespaces/default/pods/web", None)
                .unwrap_err()
                .http_code(),
            405
        );
        assert_eq!(
            parse_request("PUT", "/api/v1/namespaces/default/pods", None)
                .unwrap_err()
                .http_code(),
            405
        );
        // namespaces are cluster-scoped
        let p = pr("GET", "/api/v1/namespaces/default", None);
        let r = res(&p);
        assert_eq!(
            (
                r.resource.as_str(),
                r.name.as_deref(),
                r.namespace.as_deref()
            ),
            ("namespaces", Some("default"), None)
        );
        let p = pr("PUT", "/api/v1/namespaces/default/finalize", None);
        assert_eq!(res(&p).subresource.as_deref(), Some("finalize"));
        assert_eq!(res(&p).resource, "namespaces");
        let p = pr("GET", "/api/v1/namespaces/default/status", None);
        assert_eq!(res(&p).subresource.as_deref(), Some("status"));
        // group resources and subresources
        let p = pr(
            "GET",
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            None,
        );
        assert_eq!(res(&p).subresource.as_deref(), Some("scale"));
        assert_eq!(res(&p).group, "apps");
        let p = pr(
            "GET",
            "/api/v1/namespaces/default/pods/web/log",
            Some("follow=true&container=c"),
        );
        assert_eq!(p.verb, Verb::Get);
        for sub in ["exec", "attach", "portforward", "proxy"] {
            let p = pr(
                "POST",
                &format!("/api/v1/namespaces/default/pods/web/{sub}"),
                None,
            );
            assert_eq!(p.verb, Verb::Connect, "{sub}");
        }
        let p = pr(
            "GET",
            "/api/v1/namespaces/default/services/web:80/proxy/a/b%20c",
            Some("x=1"),
        );
        assert_eq!(p.verb, Verb::Connect);
        assert_eq!(res(&p).proxy_path.as_deref(), Some("a/b%20c"));
        assert_eq!(res(&p).name.as_deref(), Some("web:80"));
        // legacy watch
        let p = pr("GET", "/api/v1/watch/namespaces/default/pods", None);
        assert_eq!(p.verb, Verb::Watch);
        assert!(res(&p).legacy_watch);
        let p = pr("GET", "/api/v1/watch/namespaces", None);
        assert_eq!(res(&p).resource, "namespaces");
        assert!(parse_request("GET", "/api/v1/namespaces/default/pods/a/b/c", None).is_err());
        assert!(parse_request("GET", "/api/v1/namespaces/Bad_NS/pods", None).is_err());
        assert!(parse_request("GET", "/api/v1/namespaces/default/pods/..", None).is_err());
        assert!(parse_request("GET", "/api/v1/namespaces/default/pods/a%2Fb", None).is_err());
    }

    #[test]
    fn plan_namespaced_paths() {
        assert_eq!(
            up_path("GET", "/api/v1/namespaces/default/pods/web", None),
            "/api/v1/namespaces/foofoo-default/pods/web"
        );
        assert_eq!(
            up_path(
                "GET",
                "/apis/apps/v1/namespaces/kube-system/deployments",
                Some("limit=500")
            ),
            "/apis/apps/v1/namespaces/foofoo-kube-system/deployments?limit=500"
        );
        assert_eq!(
            up_path("GET", "/api/v1/watch/namespaces/default/pods", None),
            "/api/v1/watch/namespaces/foofoo-default/pods"
        );
        let p = up(
            "GET",
            "/api/v1/namespaces/default/pods/web/log",
            Some("follow=true"),
        )
        .unwrap();
        assert!(p.long_running);
        assert_eq!(p.response, ResponseKind::PassThrough);
        let p = up(
            "POST",
            "/api/v1/namespaces/default/pods/web/exec",
            Some("command=sh&command=-c&stdin=true&tty=true"),
        )
        .unwrap();
        assert!(p.upgrade && p.long_running);
        assert_eq!(
            p.upstream_path_and_query,
            "/api/v1/namespaces/foofoo-default/pods/web/exec?command=sh&command=-c&stdin=true&tty=true"
        );
        let p = up(
            "GET",
            "/api/v1/namespaces/default/services/web:80/proxy/x/y",
            Some("anything=1"),
        )
        .unwrap();
        assert_eq!(
            p.upstream_path_and_query,
            "/api/v1/namespaces/foofoo-default/services/web:80/proxy/x/y?anything=1"
        );
        assert!(!p.upgrade && p.long_running);
    }

    #[test]
    fn plan_namespace_name_length() {
        let ns = "a".repeat(57);
        let e = up("GET", &format!("/api/v1/namespaces/{ns}/pods"), None).unwrap_err();
        assert!(e.message().contains("56"));
        let e = up("POST", "/api/v1/namespaces", None).map(|_| ()).err();
        assert!(e.is_none());
    }

    #[test]
    fn plan_cluster_scoped_names() {
        assert_eq!(
            up_path("GET", "/api/v1/namespaces/default", None),
            "/api/v1/namespaces/foofoo-default"
        );
        assert_eq!(
            up_path("PUT", "/api/v1/namespaces/default/finalize", None),
            "/api/v1/namespaces/foofoo-default/finalize"
        );
        assert_eq!(
            up_path(
                "GET",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/reader",
                None
            ),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/foofoo-reader"
        );
        assert_eq!(
            up_path(
                "GET",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
                None
            ),
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.foofoo-example.com"
        );
        assert_eq!(
            up_path(
                "GET",
                "/apis/example.com/v1/namespaces/default/widgets/w1",
                None
            ),
            "/apis/foofoo-example.com/v1/namespaces/foofoo-default/widgets/w1"
        );
        assert_eq!(
            up_path("GET", "/apis/example.com/v1/gadgets/g1", None),
            "/apis/foofoo-example.com/v1/gadgets/foofoo-g1"
        );
        assert_eq!(
            up_path("GET", "/api/v1/persistentvolumes/pv1", None),
            "/api/v1/persistentvolumes/foofoo-pv1"
        );
        // shared: names untouched
        assert_eq!(
            up_path("GET", "/api/v1/nodes/node-1", None),
            "/api/v1/nodes/node-1"
        );
        assert_eq!(
            up_path(
                "GET",
                "/apis/storage.k8s.io/v1/storageclasses/standard",
                None
            ),
            "/apis/storage.k8s.io/v1/storageclasses/standard"
        );
        // RBAC names with colons survive
        assert_eq!(
            up_path(
                "GET",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:thing",
                None
            ),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/foofoo-system:thing"
        );
    }

    #[test]
    fn plan_tenant_label_on_cluster_scoped_collections() {
        assert_eq!(
            up_path("GET", "/api/v1/namespaces", None),
            "/api/v1/namespaces?labelSelector=paddock.io%2Ftenant%3Dfoofoo"
        );
        assert_eq!(
            up_path(
                "GET",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                Some("labelSelector=app%3Dx&watch=true")
            ),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles?labelSelector=app%3Dx%2Cpaddock.io%2Ftenant%3Dfoofoo&watch=true"
        );
        assert_eq!(
            up_path("DELETE", "/apis/example.com/v1/gadgets", None),
            "/apis/foofoo-example.com/v1/gadgets?labelSelector=paddock.io%2Ftenant%3Dfoofoo"
        );
        // not for namespaced kinds, shared kinds, or gets
        // Shared read-only lists leave out paddock's per-tenant objects (tenant-labelled).
        assert_eq!(
            up_path("GET", "/api/v1/nodes", None),
            "/api/v1/nodes?labelSelector=%21paddock.io%2Ftenant"
        );
        assert_eq!(
            up_path(
                "GET",
                "/api/v1/nodes",
                Some("labelSelector=role%3Dgpu&watch=true")
            ),
            "/api/v1/nodes?labelSelector=role%3Dgpu%2C%21paddock.io%2Ftenant&watch=true"
        );
        assert_eq!(
            up_path("GET", "/api/v1/namespaces/default/pods", None),
            "/api/v1/namespaces/foofoo-default/pods"
        );
        let e = up(
            "GET",
            "/api/v1/namespaces",
            Some("labelSelector=paddock.io%2Ftenant%3Dbarbar"),
        )
        .unwrap_err();
        assert_eq!(e.http_code(), 403);
        let e = up(
            "GET",
            "/api/v1/pods",
            Some("labelSelector=!paddock.io%2Ftenant"),
        )
        .unwrap_err();
        assert_eq!(e.http_code(), 403);
        // a second selector could hide the tenant term
        let e = up(
            "GET",
            "/api/v1/namespaces",
            Some("labelSelector=a%3Db&labelSelector="),
        )
        .unwrap_err();
        assert_eq!(e.http_code(), 400);
    }

    #[test]
    fn plan_policy_errors() {
        assert_eq!(
            up("GET", "/apis/apiregistration.k8s.io/v1/apiservices", None)
                .unwrap_err()
                .http_code(),
            403
        );
        assert_eq!(
            up(
                "POST",
                "/apis/certificates.k8s.io/v1/certificatesigningrequests",
                None
            )
            .unwrap_err()
            .http_code(),
            403
        );
        assert_eq!(
            up("POST", "/apis/authentication.k8s.io/v1/tokenreviews", None)
                .unwrap_err()
                .http_code(),
            403
        );
        assert_eq!(
            up(
                "GET",
                "/apis/cert-manager.io/v1/namespaces/default/certificates",
                None
            )
            .unwrap_err()
            .http_code(),
            403
        );
        assert_eq!(
            up("GET", "/api/v1/nodes/n1/proxy/metrics", None)
                .unwrap_err()
                .http_code(),
            403
        );
        assert_eq!(
            up("DELETE", "/api/v1/nodes/n1", None)
                .unwrap_err()
                .http_code(),
            403
        );
        assert_eq!(
            up("PATCH", "/api/v1/nodes/n1", None)
                .unwrap_err()
                .http_code(),
            403
        );
        assert_eq!(
            up("POST", "/apis/storage.k8s.io/v1/storageclasses", None)
                .unwrap_err()
                .http_code(),
            403
        );
        assert_eq!(
            up("GET", "/api/v1/nosuch", None).unwrap_err().http_code(),
            404
        );
        assert_eq!(
            up(
                "GET",
                "/apis/barbar-example.com/v1/namespaces/default/widgets",
                None
            )
            .unwrap_err()
            .http_code(),
            404
        );
        assert_eq!(
            up("GET", "/apis/nosuch.io/v1/things", None)
                .unwrap_err()
                .http_code(),
            404
        );
        assert_eq!(
            up("GET", "/api/v1/namespaces/default/pods/web/nosub", None)
                .unwrap_err()
                .http_code(),
            404
        );
        assert_eq!(
            up("GET", "/api/v1/namespaces/default/nodes", None)
                .unwrap_err()
                .http_code(),
            404
        );
        assert_eq!(
            up("DELETE", "/api/v1/pods", None).unwrap_err().http_code(),
            403
        );
        assert_eq!(
            up(
                "GET",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                None
            )
            .unwrap_err()
            .http_code(),
            405
        );
        assert_eq!(
            up("GET", "/api/v1/namespaces/default/pods", Some("bogus=1"))
                .unwrap_err()
                .http_code(),
            400
        );
        // nodes status can be read
        assert_eq!(
            up_path("GET", "/api/v1/nodes/n1/status", None),
            "/api/v1/nodes/n1/status"
        );
    }

    #[test]
    fn plan_cluster_wide_list_of_namespaced_kind() {
        let p = up(
            "GET",
            "/api/v1/pods",
            Some("fieldSelector=metadata.namespace%3Ddefault"),
        )
        .unwrap();
        assert!(p.cluster_wide);
        assert_eq!(p.response, ResponseKind::List);
        assert_eq!(
            p.upstream_path_and_query,
            "/api/v1/pods?fieldSelector=metadata.namespace%3Dfoofoo-default"
        );
        let p = up("GET", "/api/v1/pods", Some("watch=1")).unwrap();
        assert_eq!(p.response, ResponseKind::Watch);
        assert!(p.cluster_wide && p.long_running);
    }

    #[test]
    fn field_selectors() {
        let c = ctx();
        let ns = c
            .catalog
            .resolve(&c.tenant, "", "v1", "namespaces")
            .unwrap();
        let pods = c.catalog.resolve(&c.tenant, "", "v1", "pods").unwrap();
        let events = c.catalog.resolve(&c.tenant, "", "v1", "events").unwrap();
        let crds = c
            .catalog
            .resolve(
                &c.tenant,
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
            )
            .unwrap();
        let f = |i: &ResourceInfo, s: &str| translate_field_selector(&c, i, s).unwrap();
        assert_eq!(f(&ns, "metadata.name=foo"), "metadata.name=foofoo-foo");
        assert_eq!(f(&pods, "metadata.name=foo"), "metadata.name=foo");
        assert_eq!(
            f(&pods, "metadata.namespace!=default,spec.nodeName=n1"),
            "metadata.namespace!=foofoo-default,spec.nodeName=n1"
        );
        assert_eq!(f(&pods, "status.phase==Running"), "status.phase==Running");
        assert_eq!(
            f(&crds, "metadata.name=widgets.example.com"),
            "metadata.name=widgets.foofoo-example.com"
        );
        assert_eq!(
            f(
                &events,
                "involvedObject.name=foo,involvedObject.namespace=,involvedObject.kind=Namespace,involvedObject.uid=u1"
            ),
            "involvedObject.name=foofoo-foo,involvedObject.namespace=,involvedObject.kind=Namespace,involvedObject.uid=u1"
        );
        assert_eq!(
            f(
                &events,
                "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Pod"
            ),
            "involvedObject.name=web,involvedObject.namespace=foofoo-default,involvedObject.kind=Pod"
        );
        assert_eq!(
            f(&events, "involvedObject.name=n1,involvedObject.kind=Node"),
            "involvedObject.name=n1,involvedObject.kind=Node"
        );
        assert_eq!(
            f(
                &events,
                "regarding.name=g1,regarding.kind=Gadget,regarding.apiVersion=example.com/v1"
            ),
            "regarding.name=foofoo-g1,regarding.kind=Gadget,regarding.apiVersion=foofoo-example.com/v1"
        );
        assert_eq!(
            f(&events, "regarding.namespace=x"),
            "regarding.namespace=foofoo-x"
        );
        assert!(translate_field_selector(&c, &pods, "nonsense").is_err());
    }

    #[test]
    fn label_selectors_for_namespace_names() {
        let c = ctx();
        let ns = c
            .catalog
            .resolve(&c.tenant, "", "v1", "namespaces")
            .unwrap();
        let pods = c.catalog.resolve(&c.tenant, "", "v1", "pods").unwrap();
        let l = |i: &ResourceInfo, s: &str| translate_label_selector(&c, i, s).unwrap();
        assert_eq!(
            l(&ns, "kubernetes.io/metadata.name=default"),
            "kubernetes.io/metadata.name=foofoo-default"
        );
        assert_eq!(
            l(&ns, "kubernetes.io/metadata.name==a"),
            "kubernetes.io/metadata.name==foofoo-a"
        );
        assert_eq!(
            l(&ns, "kubernetes.io/metadata.name!=a"),
            "kubernetes.io/metadata.name!=foofoo-a"
        );
        assert_eq!(
            l(&ns, "kubernetes.io/metadata.name in (a, b),env notin (x,y)"),
            "kubernetes.io/metadata.name in (foofoo-a,foofoo-b),env notin (x,y)"
        );
        assert_eq!(
            l(&ns, "kubernetes.io/metadata.name notin (a)"),
            "kubernetes.io/metadata.name notin (foofoo-a)"
        );
        assert_eq!(
            l(&ns, "kubernetes.io/metadata.name,!x,y>3"),
            "kubernetes.io/metadata.name,!x,y>3"
        );
        assert_eq!(
            l(&pods, "kubernetes.io/metadata.name=a"),
            "kubernetes.io/metadata.name=a"
        );
        assert!(
            translate_label_selector(
                &c,
                &ns,
                &format!("kubernetes.io/metadata.name={}", "a".repeat(57))
            )
            .is_err()
        );
        assert!(translate_label_selector(&c, &ns, "a,,b").is_err());
    }

    #[test]
    fn query_parameters_kept_in_order() {
        let q = "resourceVersion=5&resourceVersionMatch=NotOlderThan&limit=10&continue=abc%3D&timeoutSeconds=30&allowWatchBookmarks=true&sendInitialEvents=true&watch=true";
        assert_eq!(
            up_path("GET", "/api/v1/namespaces/default/pods", Some(q)),
            format!("/api/v1/namespaces/foofoo-default/pods?{q}")
        );
        let q = "dryRun=All&fieldManager=kubectl&fieldValidation=Strict&force=true";
        assert_eq!(
            up_path("PATCH", "/api/v1/namespaces/default/pods/x", Some(q)),
            format!("/api/v1/namespaces/foofoo-default/pods/x?{q}")
        );
        let q = "propagationPolicy=Foreground&gracePeriodSeconds=0";
        assert_eq!(
            up_path("DELETE", "/api/v1/namespaces/default/pods/x", Some(q)),
            format!("/api/v1/namespaces/foofoo-default/pods/x?{q}")
        );
    }

    #[test]
    fn plan_discovery_and_openapi() {
        let p = up("GET", "/apis/example.com/v1", None).unwrap();
        assert_eq!(p.upstream_path_and_query, "/apis/foofoo-example.com/v1");
        assert_eq!(p.response, ResponseKind::Discovery);
        assert_eq!(
            up_path("GET", "/apis/example.com", None),
            "/apis/foofoo-example.com"
        );
        assert_eq!(up_path("GET", "/api/v1", None), "/api/v1");
        assert_eq!(up_path("GET", "/apis", None), "/apis");
        assert_eq!(
            up("GET", "/apis/barbar-example.com", None)
                .unwrap_err()
                .http_code(),
            404
        );
        assert_eq!(
            up("GET", "/apis/apps/v7", None).unwrap_err().http_code(),
            404
        );
        for p in [
            "/apis/cert-manager.io",
            "/apis/cert-manager.io/v1",
            "/openapi/v3/apis/cert-manager.io/v1",
        ] {
            assert_eq!(up("GET", p, None).unwrap_err().http_code(), 404, "{p}");
        }
        let p = up("GET", "/openapi/v3/apis/example.com/v1", Some("hash=ABC")).unwrap();
        assert_eq!(
            p.upstream_path_and_query,
            "/openapi/v3/apis/foofoo-example.com/v1?hash=ABC"
        );
        assert_eq!(p.response, ResponseKind::OpenApi);
        assert_eq!(
            up_path("GET", "/openapi/v3/api/v1", None),
            "/openapi/v3/api/v1"
        );
        assert_eq!(up_path("GET", "/openapi/v2", None), "/openapi/v2");
        assert_eq!(
            up("GET", "/version", None).unwrap().response,
            ResponseKind::PassThrough
        );
    }

    #[test]
    fn accept_negotiation() {
        assert_eq!(upstream_accept(None), "application/json");
        assert_eq!(
            upstream_accept(Some("application/vnd.kubernetes.protobuf,application/json")),
            "application/json"
        );
        assert_eq!(
            upstream_accept(Some("application/vnd.kubernetes.protobuf")),
            "application/json"
        );
        assert_eq!(
            upstream_accept(Some("application/cbor")),
            "application/json"
        );
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(upstream_accept(Some(table)), table);
        let disc =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(upstream_accept(Some(disc)), disc);
        assert_eq!(
            upstream_accept(Some(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            )),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
        );
        assert_eq!(
            upstream_accept(Some(
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
            )),
            "application/json"
        );
    }

    #[test]
    fn response_kinds() {
        let table = Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
        let p = up("GET", "/api/v1/namespaces/default/pods", None).unwrap();
        assert_eq!(response_kind_for(&p, None), ResponseKind::List);
        assert_eq!(response_kind_for(&p, table), ResponseKind::Table);
        let p = up("GET", "/api/v1/namespaces/default/pods", Some("watch=true")).unwrap();
        assert_eq!(response_kind_for(&p, table), ResponseKind::TableWatch);
        assert_eq!(
            response_kind_for(&p, Some("application/json")),
            ResponseKind::Watch
        );
        let p = up("GET", "/api/v1/namespaces/default/pods/x", None).unwrap();
        assert_eq!(response_kind_for(&p, table), ResponseKind::Table);
        assert_eq!(response_kind_for(&p, None), ResponseKind::Object);
        let p = up("GET", "/apis", None).unwrap();
        assert_eq!(response_kind_for(&p, table), ResponseKind::Discovery);
        let p = up(
            "POST",
            "/api/v1/namespaces/default/pods/x/portforward",
            None,
        )
        .unwrap();
        assert_eq!(response_kind_for(&p, None), ResponseKind::PassThrough);
    }
}

#[cfg(test)]
mod fuzz_regressions {
    /// An escape before a multi-byte character in a field selector used to panic on a char
    /// boundary while the selector was rewritten (found by the path_parser fuzz target).
    #[test]
    fn escaped_multibyte_in_field_selector() {
        let mut input = vec![0u8];
        input.extend_from_slice(
            "/api/v1/pods?watch=true&fieldSelector=metadata.name%3Dx\\\u{e9}b".as_bytes(),
        );
        assert_eq!(crate::fuzzing::path_parser(&input), Ok(()));
    }
}
