//! Each user's own view of the tenant's namespaces (issue 40, docs/security.md "Each user's own
//! view"): the pure parts. A user who is not a tenant admin holds no cluster-wide right to list
//! namespaces, so a cluster would answer `kubectl get ns` with a 403; paddock answers with the
//! tenant's namespaces in which the user can do anything instead. The server asks upstream
//! (a `SelfSubjectRulesReview` per namespace, impersonated as the user); this module judges the
//! answers and filters lists and watch events by name.

use std::collections::BTreeSet;

use serde_json::Value;

/// Is a namespace the user's? Its rules review (`ns_review`, a `SelfSubjectRulesReview` answer
/// as the user in that namespace) holds a resource rule that the user's rules everywhere
/// (`baseline`, the same review in a namespace that cannot exist) do not: some right granted
/// in that namespace itself (a RoleBinding, or a mirror of one of the tenant's
/// ClusterRoleBindings). Rights every authenticated user holds everywhere (`system:basic-user`:
/// create self reviews) therefore do not make every namespace the user's. Non-resource rules
/// are cluster-wide by nature and never count.
pub fn namespace_is_users(ns_review: &Value, baseline: &Value) -> bool {
    let everywhere = resource_rules(baseline);
    resource_rules(ns_review)
        .iter()
        .any(|r| !everywhere.contains(r) && grants_something(r))
}

/// `status.resourceRules` of a rules review answer (none when it has none).
fn resource_rules(review: &Value) -> Vec<Value> {
    review["status"]["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// A rule with at least one verb and one resource (an empty rule grants nothing).
fn grants_something(rule: &Value) -> bool {
    let non_empty = |k: &str| rule[k].as_array().is_some_and(|a| !a.is_empty());
    non_empty("verbs") && non_empty("resources")
}

/// The name of one item of a namespace list (`metadata.name`) or one row of a Table (its
/// embedded object's `metadata.name`; without an object, `includeObject=None`, the first
/// cell, which is the Name column of every namespace Table).
pub fn item_name(item: &Value) -> Option<&str> {
    item["metadata"]["name"]
        .as_str()
        .or_else(|| item["object"]["metadata"]["name"].as_str())
        .or_else(|| item["cells"][0].as_str())
}

/// Is this document a Table (`meta.k8s.io`)?
pub fn is_table(doc: &Value) -> bool {
    doc["kind"].as_str() == Some("Table")
}

/// The items (a list) or rows (a Table) of a namespace list.
pub fn entries(doc: &Value) -> &[Value] {
    let key = if is_table(doc) { "rows" } else { "items" };
    doc[key].as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Keeps only the items (or rows) whose name `keep` accepts. The list's
/// `remainingItemCount` goes too: it would count namespaces the user may not see.
pub fn keep_entries(doc: &mut Value, keep: impl Fn(&str) -> bool) {
    let key = if is_table(doc) { "rows" } else { "items" };
    if let Some(list) = doc.get_mut(key).and_then(Value::as_array_mut) {
        list.retain(|i| item_name(i).is_some_and(&keep));
    }
    if let Some(meta) = doc.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("remainingItemCount");
    }
}

/// The name of the namespace a watch event is about (`object.metadata.name`, or the one row
/// of a Table event); None for bookmarks and errors, which name none.
pub fn event_name(event: &Value) -> Option<&str> {
    let object = &event["object"];
    if is_table(object) {
        return object["rows"][0]
            .as_object()
            .and_then(|_| item_name(&object["rows"][0]));
    }
    object["metadata"]["name"].as_str()
}

/// A watch event of `kind` (`ADDED`, `DELETED`) about one entry of a namespace list `doc`, in
/// the list's own form: the item itself, or for a Table a one-row Table with the list's
/// columns (the shape of kube-apiserver's own Table watch events).
pub fn event_for(kind: &str, doc: &Value, entry: &Value) -> Value {
    let object = if is_table(doc) {
        serde_json::json!({
            "kind": "Table",
            "apiVersion": doc["apiVersion"],
            "metadata": {"resourceVersion": entry["object"]["metadata"]["resourceVersion"]},
            "columnDefinitions": doc["columnDefinitions"],
            "rows": [entry],
        })
    } else {
        let mut item = entry.clone();
        // A list's items carry no kind; a watch event's object does.
        if let Some(o) = item.as_object_mut() {
            o.entry("kind").or_insert_with(|| "Namespace".into());
            o.entry("apiVersion").or_insert_with(|| "v1".into());
        }
        item
    };
    serde_json::json!({"type": kind, "object": object})
}

/// What a re-evaluated view changes in an open watch: the namespaces that became the user's
/// (ADDED) and those that stopped being (DELETED), against those the watch has shown.
pub fn view_changes(
    shown: &BTreeSet<String>,
    now: &BTreeSet<String>,
) -> (Vec<String>, Vec<String>) {
    let added = now.difference(shown).cloned().collect();
    let removed = shown.difference(now).cloned().collect();
    (added, removed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review(rules: Value) -> Value {
        json!({"kind": "SelfSubjectRulesReview", "status": {"resourceRules": rules,
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*"]}]}})
    }

    fn basic() -> Value {
        json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
               "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})
    }

    #[test]
    fn a_namespace_is_the_users_only_with_a_right_of_its_own() {
        let baseline = review(json!([basic()]));
        let bound = review(json!([basic(),
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]));
        assert!(namespace_is_users(&bound, &baseline));
        // Only what everyone holds everywhere: not the user's.
        assert!(!namespace_is_users(&review(json!([basic()])), &baseline));
        // An empty rule (a Role without verbs) grants nothing.
        let empty =
            review(json!([basic(), {"verbs": [], "apiGroups": [""], "resources": ["pods"]}]));
        assert!(!namespace_is_users(&empty, &baseline));
        // Non-resource rules never count; an answer without a status holds nothing.
        assert!(!namespace_is_users(&json!({}), &baseline));
        // A baseline that could not be read: any right counts.
        assert!(namespace_is_users(&bound, &json!({})));
    }

    #[test]
    fn lists_and_tables_keep_only_the_users_namespaces() {
        let mut list = json!({"kind": "NamespaceList", "metadata": {"remainingItemCount": 3},
            "items": [{"metadata": {"name": "t-a"}}, {"metadata": {"name": "t-b"}}]});
        keep_entries(&mut list, |n| n == "t-b");
        assert_eq!(list["items"], json!([{"metadata": {"name": "t-b"}}]));
        assert!(list["metadata"].get("remainingItemCount").is_none());
        let mut table = json!({"kind": "Table", "metadata": {}, "rows": [
            {"cells": ["t-a"], "object": {"metadata": {"name": "t-a"}}},
            {"cells": ["t-b"]},
            {"cells": [], "object": {}}]});
        keep_entries(&mut table, |n| n == "t-b");
        assert_eq!(entries(&table).len(), 1);
        assert_eq!(item_name(&entries(&table)[0]), Some("t-b"));
    }

    #[test]
    fn events_name_their_namespace_in_both_forms() {
        let plain =
            json!({"type": "ADDED", "object": {"kind": "Namespace", "metadata": {"name": "t-a"}}});
        assert_eq!(event_name(&plain), Some("t-a"));
        let table = json!({"type": "MODIFIED", "object": {"kind": "Table",
            "rows": [{"cells": ["t-b"], "object": {"metadata": {"name": "t-b"}}}]}});
        assert_eq!(event_name(&table), Some("t-b"));
        let bookmark = json!({"type": "BOOKMARK", "object": {"kind": "Namespace", "metadata": {"resourceVersion": "9"}}});
        assert_eq!(event_name(&bookmark), None);
        assert_eq!(
            event_name(&json!({"type": "BOOKMARK", "object": {"kind": "Table", "rows": []}})),
            None
        );
    }

    #[test]
    fn synthesized_events_have_the_lists_form() {
        let list = json!({"kind": "NamespaceList", "items": []});
        let e = event_for("ADDED", &list, &json!({"metadata": {"name": "t-a"}}));
        assert_eq!(e["object"]["kind"], "Namespace");
        assert_eq!(event_name(&e), Some("t-a"));
        let table = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "columnDefinitions": [{"name": "Name"}], "rows": []});
        let row = json!({"cells": ["t-b"], "object": {"metadata": {"name": "t-b", "resourceVersion": "7"}}});
        let e = event_for("DELETED", &table, &row);
        assert_eq!(e["type"], "DELETED");
        assert_eq!(e["object"]["columnDefinitions"][0]["name"], "Name");
        assert_eq!(e["object"]["metadata"]["resourceVersion"], "7");
        assert_eq!(event_name(&e), Some("t-b"));
    }

    #[test]
    fn changes_are_what_appeared_and_what_went() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        let (a, r) = view_changes(&s(&["a", "b"]), &s(&["b", "c"]));
        assert_eq!(a, vec!["c".to_string()]);
        assert_eq!(r, vec!["a".to_string()]);
    }
}
