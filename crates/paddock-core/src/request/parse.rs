//! Parsing: what the tenant asked for (method + path + query), before any translation.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;
use smallvec::SmallVec;

use crate::error::TranslateError;
use crate::identity::names::is_dns_label;

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

/// A path segment as parsed: inline up to 24 bytes (every name, namespace, version and
/// resource of a request path in practice), so parsing a request allocates nothing for it.
pub type Segment = compact_str::CompactString;

/// A resource path in the tenant's view, every segment percent-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: Segment,
    pub version: Segment,
    pub resource: Segment,
    pub namespace: Option<Segment>,
    pub name: Option<Segment>,
    pub subresource: Option<Segment>,
    /// `/api/v1/watch/...` form.
    pub legacy_watch: bool,
    /// For `.../proxy/<path>`: the remainder after `proxy/`, still percent-encoded as received
    /// (it belongs to the proxied backend, not to the apiserver).
    pub proxy_path: Option<Segment>,
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
    pub(crate) fn is_read(self) -> bool {
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

// ---------------------------------------------------------------------------------------------
// Parsing

const CONNECT_SUBRESOURCES: &[&str] = &["exec", "attach", "portforward", "proxy"];

/// A path segment percent-decoded; borrowed unless it had an escape in it (the common case
/// allocates nothing).
fn decode_segment(seg: &str) -> Result<Cow<'_, str>, TranslateError> {
    percent_decode_str(seg)
        .decode_utf8()
        .map_err(|_| TranslateError::bad(format!("path segment {seg:?} is not UTF-8")))
}

/// The segments of a path, split at `/`. A resource path has at most nine structural
/// segments (`/apis/g/v/watch/namespaces/ns/r/name/sub`); a proxy remainder may add more.
type RawSegments<'a> = SmallVec<[&'a str; 10]>;

/// A name in a URL: not empty, not `.`/`..`, no `/` or `%` (the apiserver's own rule).
fn check_path_name(s: &str, what: &str) -> Result<(), TranslateError> {
    if s.is_empty() || s == "." || s == ".." || s.contains('/') || s.contains('%') {
        return Err(TranslateError::bad(format!("invalid {what} {s:?} in path")));
    }
    Ok(())
}

fn parse_bool(v: &str) -> bool {
    // Go's strconv.ParseBool, which the apiserver uses for `watch`, `follow`, ...
    matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True")
}

pub(super) fn query_flag(query: &[(String, String)], key: &str) -> bool {
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
    // Methods arrive upper-case from every client; a lower-case one is rare enough to copy.
    let method: Cow<'_, str> = if method.bytes().any(|b| b.is_ascii_lowercase()) {
        Cow::Owned(method.to_ascii_uppercase())
    } else {
        Cow::Borrowed(method)
    };
    let Some(rel) = path.strip_prefix('/') else {
        return Err(TranslateError::bad(format!(
            "path {path:?} must start with /"
        )));
    };
    let raw: RawSegments<'_> = if rel.is_empty() {
        SmallVec::new()
    } else {
        rel.split('/').collect()
    };
    let (group, version, rest_start) = match top_level(&raw, path)? {
        Top::NonResource(p) => {
            if method != "GET" && method != "HEAD" {
                return Err(TranslateError::MethodNotAllowed(format!(
                    "{method} is not allowed on {path}"
                )));
            }
            return Ok(ParsedRequest {
                path: p,
                verb: Verb::Get,
                query,
            });
        }
        Top::Resource {
            group,
            version,
            rest_start,
        } => (group, version, rest_start),
    };
    check_path_name(&group, "group").or_else(|e| if group.is_empty() { Ok(()) } else { Err(e) })?;
    check_path_name(&version, "version")?;
    let segs = resource_segments(&raw[rest_start..], path)?;
    let verb = verb_for(&method, path, &segs, &query)?;
    Ok(ParsedRequest {
        path: ApiPath::Resource(ResourcePath {
            group,
            version,
            resource: segs.resource,
            namespace: segs.namespace,
            name: segs.name,
            subresource: segs.subresource,
            legacy_watch: segs.legacy_watch,
            proxy_path: segs.proxy_path,
        }),
        verb,
        query,
    })
}

/// What the first segments of a path address: a document of the server, or the group and
/// version under which a resource path starts (at segment `rest_start`).
enum Top {
    NonResource(ApiPath),
    Resource {
        group: Segment,
        version: Segment,
        rest_start: usize,
    },
}

fn not_found_path(path: &str) -> TranslateError {
    TranslateError::not_found(format!("the server could not find {path}"))
}

/// Everything up to a proxy remainder is decoded; a trailing slash is tolerated except where
/// it is part of a proxied path.
fn top_level(raw: &[&str], path: &str) -> Result<Top, TranslateError> {
    let first = raw.first().copied().unwrap_or("");
    let top = match first {
        "" if raw.len() <= 1 => Top::NonResource(ApiPath::Root),
        // The Python client asks `/version/`, which the apiserver answers too.
        "version" if raw.len() == 1 || (raw.len() == 2 && raw[1].is_empty()) => {
            Top::NonResource(ApiPath::Version)
        }
        "healthz" | "livez" | "readyz" => Top::NonResource(ApiPath::Healthz),
        "openapi" => Top::NonResource(openapi_path(&raw[1..], path)?),
        "api" => core_group_version(raw)?,
        "apis" => named_group_version(raw)?,
        _ => return Err(not_found_path(path)),
    };
    Ok(top)
}

/// `/openapi/...`: the v2 document, the v3 index, or one group version's v3 document.
fn openapi_path(rest: &[&str], path: &str) -> Result<ApiPath, TranslateError> {
    let segs: SmallVec<[Cow<'_, str>; 4]> = rest
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| decode_segment(s))
        .collect::<Result<_, _>>()?;
    let segs: SmallVec<[&str; 4]> = segs.iter().map(|s| &**s).collect();
    match segs.as_slice() {
        ["v2"] => Ok(ApiPath::OpenApiV2),
        ["v3"] => Ok(ApiPath::OpenApiV3Root),
        ["v3", "api", v] => Ok(ApiPath::OpenApiV3 {
            group: String::new(),
            version: (*v).to_owned(),
        }),
        ["v3", "apis", g, v] => Ok(ApiPath::OpenApiV3 {
            group: (*g).to_owned(),
            version: (*v).to_owned(),
        }),
        _ => Err(not_found_path(path)),
    }
}

/// `/api`, `/api/<v>`, or the start of a core resource path `/api/<v>/...`.
fn core_group_version(raw: &[&str]) -> Result<Top, TranslateError> {
    match raw.get(1).copied() {
        None | Some("") if raw.len() <= 2 => Ok(Top::NonResource(ApiPath::Api)),
        Some(v) => {
            let version = decode_segment(v)?;
            if raw.len() == 2 || (raw.len() == 3 && raw[2].is_empty()) {
                return Ok(Top::NonResource(ApiPath::ApiGroupVersion {
                    group: String::new(),
                    version: version.into_owned(),
                }));
            }
            Ok(Top::Resource {
                group: Segment::default(),
                version: Segment::from(&*version),
                rest_start: 2,
            })
        }
        None => Ok(Top::NonResource(ApiPath::Api)),
    }
}

/// `/apis`, `/apis/<g>`, `/apis/<g>/<v>`, or the start of a resource path `/apis/<g>/<v>/...`.
fn named_group_version(raw: &[&str]) -> Result<Top, TranslateError> {
    let group = match raw.get(1).copied() {
        None | Some("") if raw.len() <= 2 => return Ok(Top::NonResource(ApiPath::Apis)),
        Some(g) => decode_segment(g)?,
        None => return Ok(Top::NonResource(ApiPath::Apis)),
    };
    match raw.get(2).copied() {
        None => Ok(Top::NonResource(ApiPath::ApiGroup {
            group: group.into_owned(),
        })),
        Some("") if raw.len() == 3 => Ok(Top::NonResource(ApiPath::ApiGroup {
            group: group.into_owned(),
        })),
        Some(v) => {
            let version = decode_segment(v)?;
            if raw.len() == 3 || (raw.len() == 4 && raw[3].is_empty()) {
                return Ok(Top::NonResource(ApiPath::ApiGroupVersion {
                    group: group.into_owned(),
                    version: version.into_owned(),
                }));
            }
            Ok(Top::Resource {
                group: Segment::from(&*group),
                version: Segment::from(&*version),
                rest_start: 3,
            })
        }
    }
}

/// The segments of a resource path after its group and version, checked.
struct Segments {
    namespace: Option<Segment>,
    resource: Segment,
    name: Option<Segment>,
    subresource: Option<Segment>,
    legacy_watch: bool,
    proxy_path: Option<Segment>,
}

fn resource_segments(rest: &[&str], path: &str) -> Result<Segments, TranslateError> {
    let mut rest = rest;
    let mut legacy_watch = false;
    if rest.first() == Some(&"watch") {
        legacy_watch = true;
        rest = &rest[1..];
    }
    // Decode only the structural segments (at most 6); a proxy remainder stays raw.
    let take = rest.len().min(6);
    let decoded: SmallVec<[Cow<'_, str>; 6]> = rest[..take]
        .iter()
        .map(|s| decode_segment(s))
        .collect::<Result<_, _>>()?;
    let d: SmallVec<[&str; 6]> = decoded.iter().map(|s| &**s).collect();
    let ns_form = d.first() == Some(&"namespaces");
    let ns_subresources = ["status", "finalize"];
    let (namespace, resource, name, subresource, tail) =
        if ns_form && (d.len() <= 2 || (d.len() == 3 && ns_subresources.contains(&d[2]))) {
            // /namespaces, /namespaces/<ns>, /namespaces/<ns>/(status|finalize)
            (None, "namespaces", d.get(1).copied(), d.get(2).copied(), 3)
        } else if ns_form {
            // /namespaces/<ns>/<resource>[/<name>[/<sub>[/<proxy path>]]]
            (Some(d[1]), d[2], d.get(3).copied(), d.get(4).copied(), 5)
        } else {
            let resource = d.first().copied().unwrap_or("");
            (None, resource, d.get(1).copied(), d.get(2).copied(), 3)
        };
    let proxy_path = (rest.len() > tail).then(|| Segment::from(rest[tail..].join("/")));
    if resource.is_empty() {
        return Err(not_found_path(path));
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
    if (proxy_path.is_some() && subresource != Some("proxy"))
        || (subresource.is_some() && name.is_none())
    {
        return Err(not_found_path(path));
    }
    // A proxy path with a trailing slash `pods/x/proxy/` keeps an empty remainder.
    let proxy_path = match proxy_path {
        Some(p) => Some(p),
        None if subresource == Some("proxy") && rest.len() == tail && path.ends_with('/') => {
            Some(Segment::default())
        }
        None => None,
    };
    Ok(Segments {
        namespace: namespace.map(Segment::from),
        resource: Segment::from(resource),
        name: name.map(Segment::from),
        subresource: subresource.map(Segment::from),
        legacy_watch,
        proxy_path,
    })
}

/// The verb of a resource request, from its method and the path's shape.
fn verb_for(
    method: &str,
    path: &str,
    segs: &Segments,
    query: &[(String, String)],
) -> Result<Verb, TranslateError> {
    let subresource = segs.subresource.as_deref();
    let watch = segs.legacy_watch || query_flag(query, "watch");
    let connect = subresource.is_some_and(|s| CONNECT_SUBRESOURCES.contains(&s));
    let named = segs.name.is_some();
    let not_allowed =
        || TranslateError::MethodNotAllowed(format!("{method} is not allowed on {path}"));
    let verb = if connect {
        Verb::Connect
    } else {
        match method {
            "GET" | "HEAD" if watch => Verb::Watch,
            "GET" | "HEAD" if named => Verb::Get,
            "GET" | "HEAD" => Verb::List,
            "POST" if named && subresource.is_none() => return Err(not_allowed()),
            "POST" => Verb::Create,
            "PUT" if named => Verb::Update,
            "PATCH" if named => Verb::Patch,
            "DELETE" if named => Verb::Delete,
            "DELETE" => Verb::DeleteCollection,
            _ => return Err(not_allowed()),
        }
    };
    if segs.legacy_watch && verb != Verb::Watch {
        return Err(not_allowed());
    }
    Ok(verb)
}
