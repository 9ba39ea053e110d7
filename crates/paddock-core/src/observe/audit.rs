//! The tenant audit trail's pure part: kube-apiserver's audit `Policy` (audit.k8s.io/v1), the
//! level it gives a request, and the `audit.k8s.io/v1` `Event` written for it — in the
//! tenant's view (names as the tenant sees them), with the tenant id. The server writes the
//! events (docs/audit.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How much of a request is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
pub enum Level {
    #[default]
    None,
    Metadata,
    Request,
    RequestResponse,
}

/// kube-apiserver's audit `Policy` (the fields paddock evaluates; the rest are refused so that
/// a policy never means less than it says).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
    /// Stages never recorded; paddock writes one event per request, at `ResponseComplete`
    /// (or `Panic`), so omitting `ResponseComplete` omits everything.
    #[serde(default)]
    pub omit_stages: Vec<String>,
    #[serde(default)]
    pub omit_managed_fields: bool,
}

/// One rule; the first rule that matches gives the level.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyRule {
    pub level: Level,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub user_groups: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    #[serde(default)]
    pub omit_stages: Vec<String>,
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// Resources of one API group; `resources` may name `pods/log`, `*/status`, `pods/*`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupResources {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// What the policy sees of a request, all in the tenant's view.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attributes {
    pub user: String,
    pub groups: Vec<String>,
    /// Kubernetes verb (`get`, `list`, `watch`, `create`, ...), or the lowercase HTTP method
    /// of a non-resource request.
    pub verb: String,
    /// None for a non-resource request (`/version`, `/apis`).
    pub resource: Option<ResourceRef>,
    /// The request path (non-resource rules match it).
    pub path: String,
}

/// The object a resource request addresses, as the tenant names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceRef {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl Policy {
    /// Parses a policy file (YAML or JSON, like kube-apiserver's `--audit-policy-file`).
    pub fn parse(text: &str) -> Result<Policy, String> {
        let p: Policy = serde_norway::from_str(text).map_err(|e| e.to_string())?;
        if let Some(k) = &p.kind
            && k != "Policy"
        {
            return Err(format!("kind is {k:?}, not Policy"));
        }
        if let Some(v) = &p.api_version
            && v != "audit.k8s.io/v1"
        {
            return Err(format!("apiVersion is {v:?}, not audit.k8s.io/v1"));
        }
        Ok(p)
    }

    /// The level of a request: the first matching rule's, None when no rule matches.
    pub fn level(&self, a: &Attributes) -> Level {
        if self.omits_response_complete(None) {
            return Level::None;
        }
        self.rules
            .iter()
            .find(|r| r.matches(a))
            .filter(|r| !self.omits_response_complete(Some(*r)))
            .map_or(Level::None, |r| r.level)
    }

    fn omits_response_complete(&self, rule: Option<&PolicyRule>) -> bool {
        let omitted = |s: &[String]| s.iter().any(|x| x == "ResponseComplete");
        omitted(&self.omit_stages) || rule.is_some_and(|r| omitted(&r.omit_stages))
    }
}

fn any_or(list: &[String], f: impl Fn(&str) -> bool) -> bool {
    list.is_empty() || list.iter().any(|x| f(x))
}

impl PolicyRule {
    fn matches(&self, a: &Attributes) -> bool {
        if !any_or(&self.users, |u| u == a.user) {
            return false;
        }
        if !any_or(&self.user_groups, |g| a.groups.iter().any(|x| x == g)) {
            return false;
        }
        if !any_or(&self.verbs, |v| v == a.verb) {
            return false;
        }
        match &a.resource {
            Some(r) => {
                // A rule that names non-resource URLs only matches non-resource requests.
                if !self.non_resource_urls.is_empty() {
                    return false;
                }
                if !any_or(&self.namespaces, |n| n == r.namespace) {
                    return false;
                }
                self.resources.is_empty() || self.resources.iter().any(|g| g.matches(r))
            }
            None => {
                if !self.resources.is_empty() || !self.namespaces.is_empty() {
                    return false;
                }
                any_or(&self.non_resource_urls, |u| match u.strip_suffix('*') {
                    Some(prefix) => a.path.starts_with(prefix),
                    None => u == a.path,
                })
            }
        }
    }
}

impl GroupResources {
    fn matches(&self, r: &ResourceRef) -> bool {
        if self.group != r.group {
            return false;
        }
        let full = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        let res_ok = any_or(&self.resources, |x| {
            x == "*"
                || x == full
                || (x == format!("{}/*", r.resource) && !r.subresource.is_empty())
                || (x == format!("*/{}", r.subresource) && !r.subresource.is_empty())
        });
        res_ok && any_or(&self.resource_names, |n| n == r.name)
    }
}

/// Resources whose contents never enter the audit trail, at any level: their request and
/// response bodies are recorded as absent (kube-apiserver's recommended policies keep these at
/// Metadata; paddock enforces it whatever the policy says).
pub fn never_log_contents(r: Option<&ResourceRef>) -> bool {
    r.is_some_and(|r| {
        (r.group.is_empty() && r.resource == "secrets")
            || (r.group == "authentication.k8s.io" && r.resource == "tokenreviews")
            || (r.resource == "serviceaccounts" && r.subresource == "token")
    })
}

/// The level a request is recorded at: the policy's, lowered to Metadata for resources whose
/// contents are never logged.
pub fn effective_level(policy: &Policy, a: &Attributes) -> Level {
    let l = policy.level(a);
    if l > Level::Metadata && never_log_contents(a.resource.as_ref()) {
        Level::Metadata
    } else {
        l
    }
}

/// `audit.k8s.io/v1` `ObjectReference`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// `authentication.k8s.io/v1` `UserInfo`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct UserInfo {
    pub username: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// `meta/v1` `Status`, as the audit event's `responseStatus`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ResponseStatus {
    pub metadata: serde_json::Value,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    pub code: u16,
}

/// An `audit.k8s.io/v1` `Event`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub level: Level,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub stage: &'static str,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    pub verb: String,
    pub user: UserInfo,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectRef>,
    pub response_status: ResponseStatus,
    pub request_received_timestamp: String,
    pub stage_timestamp: String,
    /// `paddock.io/tenant` (the tenant id), `paddock.io/latency` (e.g. `12.345ms`).
    pub annotations: BTreeMap<String, String>,
    /// The tenant's request body (its view: as it sent it), at level Request and above, for
    /// JSON bodies; never for the kinds of [`never_log_contents`] (their level is lowered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<serde_json::Value>,
    /// The answer as the tenant got it (its view), at level RequestResponse, for JSON answers
    /// up to a bound; never for the kinds of [`never_log_contents`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<serde_json::Value>,
}

/// What the server knows of a finished request.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    pub tenant: String,
    pub attrs: Attributes,
    pub request_uri: String,
    pub source_ip: String,
    pub user_agent: String,
    pub code: u16,
    pub audit_id: String,
    /// RFC 3339 with microseconds.
    pub received: String,
    pub completed: String,
    pub latency_ms: f64,
    /// The request body as the tenant sent it, when it was JSON.
    pub request_object: Option<serde_json::Value>,
    /// The answer as the tenant got it, when it was JSON and within the bound.
    pub response_object: Option<serde_json::Value>,
}

/// The event for a finished request at `level` (not None).
pub fn event(level: Level, f: &Finished) -> Event {
    let object_ref = f.attrs.resource.as_ref().map(|r| ObjectRef {
        resource: r.resource.clone(),
        namespace: r.namespace.clone(),
        name: r.name.clone(),
        api_group: r.group.clone(),
        api_version: r.version.clone(),
        subresource: r.subresource.clone(),
    });
    let mut annotations = BTreeMap::new();
    annotations.insert(crate::TENANT_LABEL.to_string(), f.tenant.clone());
    annotations.insert(
        "paddock.io/latency".into(),
        format!("{:.3}ms", f.latency_ms),
    );
    Event {
        kind: "Event",
        api_version: "audit.k8s.io/v1",
        level,
        audit_id: f.audit_id.clone(),
        // One event per request, written when the answer starts: for a watch or a stream that
        // is the start of a long response.
        stage: if matches!(f.attrs.verb.as_str(), "watch" | "connect") {
            "ResponseStarted"
        } else {
            "ResponseComplete"
        },
        request_uri: f.request_uri.clone(),
        verb: f.attrs.verb.clone(),
        user: UserInfo {
            username: f.attrs.user.clone(),
            groups: f.attrs.groups.clone(),
            extra: BTreeMap::from([(crate::TENANT_LABEL.to_string(), vec![f.tenant.clone()])]),
        },
        source_ips: if f.source_ip.is_empty() {
            Vec::new()
        } else {
            vec![f.source_ip.clone()]
        },
        user_agent: f.user_agent.clone(),
        object_ref,
        response_status: ResponseStatus {
            metadata: serde_json::json!({}),
            status: if f.code < 400 {
                String::new()
            } else {
                "Failure".into()
            },
            reason: String::new(),
            code: f.code,
        },
        request_received_timestamp: f.received.clone(),
        stage_timestamp: f.completed.clone(),
        annotations,
        request_object: match level {
            Level::Request | Level::RequestResponse
                if !never_log_contents(f.attrs.resource.as_ref()) =>
            {
                f.request_object.clone()
            }
            _ => None,
        },
        response_object: match level {
            Level::RequestResponse if !never_log_contents(f.attrs.resource.as_ref()) => {
                f.response_object.clone()
            }
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  verbs: ["watch"]
- level: None
  nonResourceURLs: ["/version", "/healthz*"]
- level: Metadata
  resources: [{group: "", resources: ["secrets", "configmaps"]}]
- level: RequestResponse
  users: ["alice"]
  resources: [{group: "apps", resources: ["deployments/*"]}]
- level: Request
  namespaces: ["dev"]
- level: Metadata
"#;

    fn attrs(user: &str, verb: &str, group: &str, res: &str, sub: &str, ns: &str) -> Attributes {
        Attributes {
            user: user.into(),
            groups: vec!["devs".into()],
            verb: verb.into(),
            resource: Some(ResourceRef {
                group: group.into(),
                version: "v1".into(),
                resource: res.into(),
                subresource: sub.into(),
                namespace: ns.into(),
                name: "x".into(),
            }),
            path: "/api/v1/x".into(),
        }
    }

    #[test]
    fn first_matching_rule_wins() {
        let p = Policy::parse(POLICY).unwrap();
        assert_eq!(
            p.level(&attrs("bob", "watch", "", "pods", "", "dev")),
            Level::None
        );
        assert_eq!(
            p.level(&attrs("bob", "get", "", "secrets", "", "dev")),
            Level::Metadata
        );
        assert_eq!(
            p.level(&attrs(
                "alice",
                "patch",
                "apps",
                "deployments",
                "scale",
                "x"
            )),
            Level::RequestResponse
        );
        // `deployments/*` does not match the deployment itself.
        assert_eq!(
            p.level(&attrs("alice", "patch", "apps", "deployments", "", "x")),
            Level::Metadata
        );
        assert_eq!(
            p.level(&attrs("bob", "create", "", "pods", "", "dev")),
            Level::Request
        );
        let version = Attributes {
            user: "bob".into(),
            verb: "get".into(),
            path: "/version".into(),
            ..Default::default()
        };
        assert_eq!(p.level(&version), Level::None);
        let healthz = Attributes {
            path: "/healthz/etcd".into(),
            ..version.clone()
        };
        assert_eq!(p.level(&healthz), Level::None);
        let apis = Attributes {
            path: "/apis".into(),
            ..version
        };
        assert_eq!(p.level(&apis), Level::Metadata);
    }

    #[test]
    fn empty_policy_logs_nothing_and_unknown_fields_are_refused() {
        assert_eq!(
            Policy::default().level(&attrs("a", "get", "", "pods", "", "d")),
            Level::None
        );
        assert!(Policy::parse("rules: [{level: Metadata, userz: [a]}]").is_err());
        assert!(Policy::parse("kind: Other\nrules: []").is_err());
        let all =
            Policy::parse("rules: [{level: Metadata}]\nomitStages: [ResponseComplete]").unwrap();
        assert_eq!(
            all.level(&attrs("a", "get", "", "pods", "", "d")),
            Level::None
        );
    }

    #[test]
    fn secret_contents_are_never_logged() {
        let p = Policy::parse("rules: [{level: RequestResponse}]").unwrap();
        assert_eq!(
            effective_level(&p, &attrs("a", "get", "", "secrets", "", "d")),
            Level::Metadata
        );
        assert_eq!(
            effective_level(&p, &attrs("a", "get", "", "configmaps", "", "d")),
            Level::RequestResponse
        );
    }

    #[test]
    fn event_shape() {
        let f = Finished {
            tenant: "acme01".into(),
            attrs: attrs("alice", "get", "", "pods", "", "web"),
            request_uri: "/api/v1/namespaces/web/pods/x".into(),
            code: 200,
            audit_id: "a-b".into(),
            received: "2026-01-01T00:00:00.000000Z".into(),
            completed: "2026-01-01T00:00:00.001000Z".into(),
            latency_ms: 1.0,
            ..Default::default()
        };
        let v = serde_json::to_value(event(Level::Metadata, &f)).unwrap();
        assert_eq!(v["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(v["auditID"], "a-b");
        assert_eq!(v["objectRef"]["namespace"], "web");
        assert_eq!(v["objectRef"]["resource"], "pods");
        assert!(v["objectRef"].get("apiGroup").is_none());
        assert_eq!(v["responseStatus"]["code"], 200);
        assert_eq!(v["annotations"]["paddock.io/tenant"], "acme01");
        assert_eq!(v["user"]["extra"]["paddock.io/tenant"][0], "acme01");
    }

    #[test]
    fn request_object_only_at_request_level_and_never_for_secrets() {
        let mut f = Finished {
            tenant: "acme01".into(),
            request_object: Some(serde_json::json!({"data": {"k": "v"}})),
            ..Finished::default()
        };
        f.attrs.resource = Some(ResourceRef {
            resource: "configmaps".into(),
            ..ResourceRef::default()
        });
        assert!(event(Level::Metadata, &f).request_object.is_none());
        assert_eq!(event(Level::Request, &f).request_object, f.request_object);
        f.attrs.resource = Some(ResourceRef {
            resource: "secrets".into(),
            ..ResourceRef::default()
        });
        assert!(event(Level::RequestResponse, &f).request_object.is_none());
    }

    #[test]
    fn response_object_only_at_request_response_and_never_for_secrets() {
        let mut f = Finished {
            tenant: "acme01".into(),
            response_object: Some(serde_json::json!({"kind": "ConfigMap"})),
            ..Finished::default()
        };
        f.attrs.resource = Some(ResourceRef {
            resource: "configmaps".into(),
            ..ResourceRef::default()
        });
        assert!(event(Level::Request, &f).response_object.is_none());
        let e = event(Level::RequestResponse, &f);
        assert_eq!(e.response_object, f.response_object);
        let v = serde_json::to_value(&e).unwrap_or_default();
        assert_eq!(v["responseObject"]["kind"], "ConfigMap");
        for (group, resource, sub) in [
            ("", "secrets", ""),
            ("authentication.k8s.io", "tokenreviews", ""),
            ("", "serviceaccounts", "token"),
        ] {
            f.attrs.resource = Some(ResourceRef {
                group: group.into(),
                resource: resource.into(),
                subresource: sub.into(),
                ..ResourceRef::default()
            });
            assert!(event(Level::RequestResponse, &f).response_object.is_none());
        }
    }
}
