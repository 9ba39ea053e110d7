use super::*;
use crate::provision::tenant_own_flow_schema;
use serde_json::json;

fn t(s: &str) -> TenantId {
    TenantId::parse(s).unwrap()
}

fn key(ns: &str, name: &str) -> Key {
    (ns.to_string(), name.to_string())
}

#[test]
fn selectors_are_those_of_the_cluster_wide_lists() {
    assert_eq!(Watched::Namespaces.selector(None), TENANT_LABEL);
    assert_eq!(
        Watched::Mirrors.selector(None),
        format!("{MANAGED_FOR_LABEL},{MIRROR_LABEL}")
    );
    assert_eq!(
        Watched::Mirrors.selector(Some(&t("foofoo"))),
        format!("{MANAGED_FOR_LABEL}=foofoo,{MIRROR_LABEL}")
    );
    assert_eq!(
        Watched::TenantBindings.selector(Some(&t("foofoo"))),
        format!("{TENANT_LABEL}=foofoo")
    );
    assert_eq!(Watched::FlowSchemas.selector(None), MANAGED_FOR_LABEL);
    // One reflector id per collection, in order.
    for (i, w) in Watched::ALL.iter().enumerate() {
        assert_eq!(w.index(), i);
    }
}

#[test]
fn the_owner_is_read_from_the_collections_label() {
    let ns = json!({"metadata": {"name": "foofoo-web", "labels": {TENANT_LABEL: "foofoo"}}});
    assert_eq!(Watched::Namespaces.owner(&ns), Some(t("foofoo")));
    // A mirror names its tenant with managed-for, not with the tenant label.
    assert_eq!(Watched::Mirrors.owner(&ns), None);
    let rb = json!({"metadata": {"labels": {MANAGED_FOR_LABEL: "barbar", MIRROR_LABEL: "x"}}});
    assert_eq!(Watched::Mirrors.owner(&rb), Some(t("barbar")));
    let bad = json!({"metadata": {"labels": {TENANT_LABEL: "Not An Id"}}});
    assert_eq!(Watched::Namespaces.owner(&bad), None);
    assert_eq!(Watched::Crds.owner(&json!({})), None);
}

#[test]
fn the_index_follows_objects_between_tenants() {
    let mut ix = OwnerIndex::default();
    let k = key("foofoo-web", "paddock:crb:foofoo-b");
    assert_eq!(
        ix.set(Watched::Mirrors, k.clone(), Some(t("foofoo"))),
        [t("foofoo")]
    );
    // Same owner again: concerns that tenant once.
    assert_eq!(
        ix.set(Watched::Mirrors, k.clone(), Some(t("foofoo"))),
        [t("foofoo")]
    );
    ix.set(
        Watched::Namespaces,
        key("", "foofoo-web"),
        Some(t("foofoo")),
    );
    assert_eq!(ix.of(&t("foofoo")).count(), 2);
    // Relabelled to another tenant: both are concerned; the first no longer has it.
    assert_eq!(
        ix.set(Watched::Mirrors, k.clone(), Some(t("barbar"))),
        [t("foofoo"), t("barbar")]
    );
    assert_eq!(
        ix.of(&t("foofoo")).cloned().collect::<Vec<_>>(),
        [(Watched::Namespaces, key("", "foofoo-web"))]
    );
    // Gone: its last owner is concerned, and forgets it.
    assert_eq!(ix.set(Watched::Mirrors, k, None), [t("barbar")]);
    assert_eq!(ix.of(&t("barbar")).count(), 0);
    assert_eq!(ix.tenants().cloned().collect::<Vec<_>>(), [t("foofoo")]);
    // An object without a tenant concerns nobody.
    assert!(ix.set(Watched::Crds, key("", "x"), None).is_empty());
}

#[test]
fn containment_ignores_added_fields_but_not_changed_or_missing_ones() {
    let d = json!({"a": 1, "b": {"c": "x"}, "l": [{"k": 1}]});
    assert!(contained_in(
        &d,
        &json!({"a": 1, "b": {"c": "x", "d": 2}, "l": [{"k": 1, "z": 0}], "e": 3})
    ));
    assert!(!contained_in(
        &d,
        &json!({"a": 2, "b": {"c": "x"}, "l": [{"k": 1}]})
    ));
    assert!(!contained_in(&d, &json!({"a": 1, "l": [{"k": 1}]})));
    assert!(!contained_in(
        &d,
        &json!({"a": 1, "b": {"c": "x"}, "l": []})
    ));
    assert!(!contained_in(
        &d,
        &json!({"a": 1, "b": {"c": "x"}, "l": [{"k": 1}, {"k": 2}]})
    ));
    assert!(!contained_in(
        &d,
        &json!({"a": "1", "b": {"c": "x"}, "l": [{"k": 1}]})
    ));
}

/// The FlowSchema as the apiserver returns it: paddock's fields, plus metadata, status and
/// whatever it defaults.
fn as_stored(desired: &Value) -> Value {
    let mut a = desired.clone();
    a["metadata"]["uid"] = json!("1234");
    a["metadata"]["resourceVersion"] = json!("77");
    a["metadata"]["labels"]["extra"] = json!("kept");
    a["metadata"]["managedFields"] = json!([{"manager": "paddock"}]);
    a["status"] = json!({"conditions": [{"type": "Dangling", "status": "False"}]});
    a
}

#[test]
fn a_flow_schema_as_applied_is_in_step() {
    let desired = tenant_own_flow_schema(&t("foofoo"));
    assert!(spec_in_step(&desired, Some(&as_stored(&desired))));
}

#[test]
fn a_flow_schema_edited_missing_or_deleted_is_not_in_step() {
    let desired = tenant_own_flow_schema(&t("foofoo"));
    assert!(!spec_in_step(&desired, None));
    let mut edited = as_stored(&desired);
    edited["spec"]["matchingPrecedence"] = json!(100);
    assert!(!spec_in_step(&desired, Some(&edited)));
    let mut moved = as_stored(&desired);
    moved["spec"]["priorityLevelConfiguration"]["name"] = json!("global-default");
    assert!(!spec_in_step(&desired, Some(&moved)));
    let mut widened = as_stored(&desired);
    widened["spec"]["rules"][0]["subjects"][0]["group"]["name"] = json!("system:authenticated");
    assert!(!spec_in_step(&desired, Some(&widened)));
    let mut unlabelled = as_stored(&desired);
    unlabelled["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove(TENANT_LABEL);
    assert!(!spec_in_step(&desired, Some(&unlabelled)));
    let mut going = as_stored(&desired);
    going["metadata"]["deletionTimestamp"] = json!("2026-11-29T14:00:00Z");
    assert!(!spec_in_step(&desired, Some(&going)));
}
