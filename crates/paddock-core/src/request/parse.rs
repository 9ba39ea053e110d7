//! Parsing: what the tenant asked for (method + path + query), before any translation.

// XX

use percent_encoding::percent_decode_str;

use crate::error::TranslateError;
use crate::names::is_dns_label;

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
