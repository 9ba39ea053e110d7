//! The Table row fast path against the DOM path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use serde_json::Value;

use super::*;
use crate::catalog::Catalog;
use crate::tenant::TenantId;

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"));
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn ctx() -> TenantContext {
    let cat = Catalog::from_aggregated(
        &fixture("discovery_agg_api_v2"),
        &fixture("discovery_agg_apis_v2"),
    )
    .unwrap();
    TenantContext {
        tenant: TenantId::parse("foofoo").unwrap(),
        catalog: Arc::new(cat),
    }
}

/// Variants of a row: as captured, moved into another tenant's namespace, into the
/// tenant's, with another tenant's name in a cell, with the tenant label on the object.
fn variants(row: &Value) -> Vec<Value> {
    let text = row.to_string();
    let ns = row
        .pointer("/object/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut out = vec![row.clone()];
    if !ns.is_empty() {
        out.push(
            serde_json::from_str(&text.replace(&format!("\"{ns}\""), "\"barbar-prod\"")).unwrap(),
        );
        out.push(
            serde_json::from_str(&text.replace(&format!("\"{ns}\""), "\"foofoo-web\"")).unwrap(),
        );
    }
    let mut cell = row.clone();
    if let Some(c) = cell.pointer_mut("/cells/2") {
        *c = Value::String("pulled from barbar-registry and foofoo-cache".into());
    }
    out.push(cell);
    let mut labelled =
        serde_json::from_str::<Value>(&text.replace(&format!("\"{ns}\""), "\"foofoo-web\""))
            .unwrap();
    if let Some(m) = labelled
        .pointer_mut("/object/metadata")
        .and_then(Value::as_object_mut)
    {
        m.insert(
            "labels".into(),
            serde_json::json!({"paddock.io/tenant": "foofoo"}),
        );
    }
    out.push(labelled);
    out
}

/// The fast path of Table rows gives what `row_down` gives, on every row of the captured
/// pod Tables and variants of them.
#[test]
fn row_fast_path_agrees_with_dom() {
    let ctx = ctx();
    let mut fast_rows = 0;
    for (name, path) in [
        ("table_pods_all", "/api/v1/pods"),
        ("table_pods_all_object", "/api/v1/pods"),
        ("table_pod_one", "/api/v1/pods"),
    ] {
        let p = crate::plan(&ctx, crate::parse_request("GET", path, None).unwrap()).unwrap();
        let scope = TableScope {
            resource: p.resource.clone(),
            cluster_wide: p.cluster_wide,
        };
        let table: Value = serde_json::from_slice(&fixture(name)).unwrap();
        let cols = Columns::from_defs(&table["columnDefinitions"]);
        let mut coll = DomCollection::new(ctx.clone(), scope.clone());
        coll.columns = cols.clone();
        let rows = table["rows"].as_array().cloned().unwrap_or_default();
        assert!(!rows.is_empty(), "{name}: no rows");
        for row in rows.iter().flat_map(variants) {
            let raw = serde_json::to_vec(&row).unwrap();
            let mut dom = row.clone();
            let want = row_down(&ctx, &scope, cols.as_ref(), &mut dom).unwrap();
            let mut out = Vec::new();
            match coll.row_fast(&raw, &mut out) {
                None => assert!(out.is_empty()),
                Some(false) => {
                    assert_eq!(want, Disposition::Drop, "{name}: fast path dropped {row}");
                    assert!(out.is_empty());
                }
                Some(true) => {
                    fast_rows += 1;
                    assert_eq!(want, Disposition::Keep, "{name}: fast path kept {row}");
                    let got: Value = serde_json::from_slice(&out).unwrap();
                    assert_eq!(got, dom, "{name}: {row}");
                }
            }
        }
    }
    assert!(
        fast_rows > 3,
        "the fast path was taken for {fast_rows} rows only"
    );
}

/// A sleeping tenant's Deployment row (docs/operations.md "Sleep and wake"): the fast path
/// leaves it to the DOM path, which shows READY as the tenant left it; an awake row is spliced.
#[test]
fn an_asleep_deployment_row_reads_as_left() {
    let ctx = ctx();
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let p = crate::plan(&ctx, crate::parse_request("GET", path, None).unwrap()).unwrap();
    let scope = TableScope {
        resource: p.resource.clone(),
        cluster_wide: p.cluster_wide,
    };
    let defs = serde_json::json!([
        {"name": "Name", "type": "string", "format": "name"},
        {"name": "Ready", "type": "string", "format": ""},
        {"name": "Up-to-date", "type": "integer", "format": ""},
        {"name": "Available", "type": "integer", "format": ""},
        {"name": "Age", "type": "string", "format": ""}
    ]);
    let cols = Columns::from_defs(&defs);
    let mut coll = DomCollection::new(ctx.clone(), scope.clone());
    coll.columns = cols.clone();
    let row = |annotations: Value, ready: &str| {
        serde_json::json!({
            "cells": ["web", ready, 0, 0, "5m"],
            "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "web", "namespace": "foofoo-default", "annotations": annotations}}
        })
    };
    let asleep = row(serde_json::json!({"paddock.io/slept": "3"}), "0/0");
    let mut out = Vec::new();
    assert_eq!(
        coll.row_fast(&serde_json::to_vec(&asleep).unwrap(), &mut out),
        None
    );
    let mut dom = asleep.clone();
    row_down(&ctx, &scope, cols.as_ref(), &mut dom).unwrap();
    assert_eq!(dom["cells"][1], "0/3");
    assert_eq!(dom["object"]["metadata"]["namespace"], "default");
    let awake = row(serde_json::json!({"a": "b"}), "2/2");
    assert_eq!(
        coll.row_fast(&serde_json::to_vec(&awake).unwrap(), &mut out),
        Some(true)
    );
}
