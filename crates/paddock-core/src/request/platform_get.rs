//! A platform object read by its own name among a tenant-owned kind.
//!
//! FlowSchemas and PriorityLevelConfigurations are the tenant's own (prefixed `<tid>-<name>`
//! upstream), but their lists also show the platform's objects under their own names
//! ([`ResourceInfo::lists_platform_objects`]), as a cluster admin sees `exempt` beside its own.
//! A GET of such a name (`kubectl get flowschema exempt`) goes to the tenant's prefixed name
//! and finds nothing: without more, the list shows an object the GET calls NotFound. So after
//! a 404, the server reads the unprefixed name once and keeps the answer only if
//! [`is_platform_object`] says it is the platform's: never another tenant's object (those carry
//! the tenant label) nor paddock's per-tenant plumbing (`paddock.io/managed-for`). The
//! platform's object stays read-only: writes go to the tenant's own prefixed name, and a write
//! that finds no such object of the tenant's but the platform's of that name (`kubectl apply`
//! of a tenant FlowSchema named `catch-all` reads the platform's, then patches) is refused with
//! a Status that says the name is the platform's ([`refusal_message`]), not a bare NotFound.

use serde_json::Value;

use crate::catalog::join_api_version;
use crate::request::{Plan, Verb};

/// The upstream path to read after a 404 of `plan`, when `plan` is a GET (or a write) of one
/// object of a kind that lists the platform's objects: the same object under the name the
/// tenant gave, unprefixed. None for every other request.
pub fn platform_object_path(plan: &Plan) -> Option<String> {
    let info = plan.resource.as_ref()?;
    let rp = plan.resource_path()?;
    if !matches!(
        plan.request.verb,
        Verb::Get | Verb::Update | Verb::Patch | Verb::Delete
    ) || !info.lists_platform_objects()
        || rp.subresource.is_some()
        || rp.namespace.is_some()
    {
        return None;
    }
    let name = rp.name.as_deref()?;
    // A DNS subdomain, as every FlowSchema name is: nothing to escape, no path trickery.
    let plain = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !name.starts_with('.');
    if !plain {
        return None;
    }
    Some(format!(
        "/apis/{}/{}/{name}",
        join_api_version(&info.upstream_group, &info.version),
        info.resource
    ))
}

/// Is `plan` a write (after [`platform_object_path`] found the platform's object of its name,
/// it is refused with [`refusal_message`])?
pub fn is_write(plan: &Plan) -> bool {
    plan.request.verb != Verb::Get
}

/// The message of the 403 for a write to the platform's object of a tenant-owned kind.
pub fn refusal_message(plan: &Plan) -> String {
    let (res, name) = match (plan.resource.as_ref(), plan.resource_path()) {
        (Some(i), Some(rp)) => (
            format!("{}.{}", i.resource, i.group),
            rp.name.as_deref().unwrap_or_default().to_owned(),
        ),
        _ => (String::new(), String::new()),
    };
    format!(
        "{res} \"{name}\" is forbidden: {name} is the platform's, shared read-only in this cluster (give this cluster's own another name)"
    )
}

/// Is this upstream object (a JSON object) the platform's own: neither a tenant's (the tenant
/// label) nor paddock's per-tenant plumbing (the managed-for label)?
pub fn is_platform_object(obj: &Value) -> bool {
    obj.as_object()
        .is_some_and(crate::rules::object::is_platform_object)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::catalog::context::tests::ctx;

    fn plan_of(method: &str, path: &str) -> Plan {
        let c = ctx();
        crate::request::plan(
            &c,
            crate::request::parse_request(method, path, None).unwrap(),
        )
        .unwrap()
    }

    const FS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
    const PL: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";

    #[test]
    fn a_get_of_a_flowcontrol_object_falls_back_to_the_unprefixed_name() {
        assert_eq!(
            platform_object_path(&plan_of("GET", &format!("{FS}/exempt"))).as_deref(),
            Some(format!("{FS}/exempt").as_str())
        );
        assert_eq!(
            platform_object_path(&plan_of("GET", &format!("{PL}/global-default"))).as_deref(),
            Some(format!("{PL}/global-default").as_str())
        );
        // A write that missed is checked too, to be refused rather than answered NotFound.
        let del = plan_of("DELETE", &format!("{FS}/catch-all"));
        assert_eq!(
            platform_object_path(&del).as_deref(),
            Some(format!("{FS}/catch-all").as_str())
        );
        assert!(is_write(&del) && !is_write(&plan_of("GET", &format!("{FS}/x"))));
        assert!(refusal_message(&del).starts_with(
            "flowschemas.flowcontrol.apiserver.k8s.io \"catch-all\" is forbidden: catch-all is the platform's"
        ));
    }

    #[test]
    fn nothing_else_falls_back() {
        for (m, p) in [
            ("GET", FS.to_string()),                // a list
            ("GET", format!("{FS}/exempt/status")), // a subresource
            ("POST", FS.to_string()),               // a create is the tenant's own
            (
                "GET",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin".to_string(),
            ),
            ("GET", "/api/v1/namespaces/default".to_string()),
        ] {
            let plan = plan_of(m, &p);
            assert_eq!(platform_object_path(&plan), None, "{m} {p}");
        }
    }

    #[test]
    fn only_the_platforms_own_objects_are_kept() {
        assert!(is_platform_object(&json!({"metadata": {"name": "exempt"}})));
        assert!(is_platform_object(
            &json!({"metadata": {"name": "exempt", "labels": {"a": "b"}}})
        ));
        // another tenant's object, paddock's per-tenant plumbing, not an object
        assert!(!is_platform_object(
            &json!({"metadata": {"name": "barbar-x",
            "labels": {"paddock.io/tenant": "barbar"}}})
        ));
        assert!(!is_platform_object(
            &json!({"metadata": {"name": "paddock-barbar",
            "labels": {"paddock.io/managed-for": "barbar"}}})
        ));
        assert!(!is_platform_object(&json!("exempt")));
    }
}
