//! Response rewriting on responses captured from a real kube-apiserver 1.33
//! (tests/fixtures/capture.sh). Tenant under test: `foofoo`; the other tenant: `barbar`.
//!
//! For every fixture: nothing of `barbar` survives, no `foofoo` prefix survives, the output is
//! valid JSON (one document, or one event per line for watches), and the output does not
//! depend on how the body was chunked.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::type_complexity
)]

use std::path::PathBuf;
use std::sync::Arc;

use paddock_core::{
    Catalog, Plan, ResponseKind, TenantContext, TenantId, TranslateError, parse_request, plan,
    response_rewriter,
};
use proptest::prelude::*;
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(format!("{name}.json"))).unwrap()
}

fn ctx() -> TenantContext {
    let cat = Catalog::from_aggregated(
        &read("discovery_agg_api_v2"),
        &read("discovery_agg_apis_v2"),
    )
    .unwrap();
    TenantContext {
        tenant: TenantId::parse("foofoo").unwrap(),
        catalog: Arc::new(cat),
    }
}

#[derive(Debug, Clone)]
struct Fixture {
    name: String,
    kind: ResponseKind,
    status: u16,
    content_type: String,
    method: String,
    path: String,
}

fn fixtures() -> Vec<Fixture> {
    let index = std::fs::read_to_string(dir().join("index.tsv")).unwrap();
    index
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let kind = match f[1] {
                "Object" => ResponseKind::Object,
                "List" => ResponseKind::List,
                "Watch" => ResponseKind::Watch,
                "Table" => ResponseKind::Table,
                "TableWatch" => ResponseKind::TableWatch,
                "Discovery" => ResponseKind::Discovery,
                "OpenApi" => ResponseKind::OpenApi,
                "Status" => ResponseKind::Status,
                other => panic!("unknown kind {other}"),
            };
            Fixture {
                name: f[0].into(),
                kind,
                status: f[2].parse().unwrap(),
                content_type: f[3].into(),
                method: f[4].into(),
                path: f[5].into(),
            }
        })
        .collect()
}

/// The plan the server would have made for the tenant's request behind this upstream path.
fn plan_for(ctx: &TenantContext, f: &Fixture) -> Plan {
    let tenant_path = f.path.replace("foofoo-", "");
    let (path, query) = match tenant_path.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (tenant_path.clone(), None),
    };
    let mut p = parse_request(&f.method, &path, query.as_deref())
        .and_then(|r| plan(ctx, r))
        .or_else(|_| {
            // Requests the tenant could not have made (another tenant's namespace): any plan
            // will do, the body is an error.
            plan(
                ctx,
                parse_request("GET", "/api/v1/namespaces/default/pods", None).unwrap(),
            )
        })
        .unwrap();
    p.response = f.kind;
    p
}

fn rewrite(
    ctx: &TenantContext,
    f: &Fixture,
    body: &[u8],
    chunk: usize,
) -> Result<Vec<u8>, TranslateError> {
    let p = plan_for(ctx, f);
    let mut rw = response_rewriter(ctx, &p, f.status, &f.content_type);
    let mut out = Vec::new();
    for c in body.chunks(chunk.max(1)) {
        rw.feed(c, &mut out)?;
    }
    rw.finish(&mut out)?;
    Ok(out)
}

fn rewrite_split(
    ctx: &TenantContext,
    f: &Fixture,
    body: &[u8],
    cuts: &[usize],
) -> Result<Vec<u8>, TranslateError> {
    let p = plan_for(ctx, f);
    let mut rw = response_rewriter(ctx, &p, f.status, &f.content_type);
    let mut out = Vec::new();
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    let mut last = 0;
    for c in cuts.into_iter().chain([body.len()]) {
        rw.feed(&body[last..c], &mut out)?;
        last = c;
    }
    rw.finish(&mut out)?;
    Ok(out)
}

fn parse_output(f: &Fixture, out: &[u8]) -> Vec<Value> {
    let watch = f.status == 200 && matches!(f.kind, ResponseKind::Watch | ResponseKind::TableWatch);
    if watch {
        assert!(out.is_empty() || out.ends_with(b"\n"), "{}", f.name);
        out.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap_or_else(|e| panic!("{}: {e}", f.name)))
            .collect()
    } else {
        vec![serde_json::from_slice(out).unwrap_or_else(|e| panic!("{}: {e}", f.name))]
    }
}

/// What must never be in a tenant's view: anything of barbar, and foofoo's upstream spellings
/// (`foofoo-x`, `com.foofoo-example`, `FoofooExampleCom`, `paddock:foofoo:alice`).
fn leaks(out: &[u8]) -> Vec<String> {
    let s = String::from_utf8_lossy(out).to_ascii_lowercase();
    let mut found = Vec::new();
    for needle in ["barbar", "foofoo"] {
        let mut from = 0;
        while let Some(i) = s[from..].find(needle) {
            let at = from + i;
            let lo = s[..at.saturating_sub(60)].len();
            let hi = (at + 60).min(s.len());
            found.push(s.get(lo..hi).unwrap_or("?").to_owned());
            from = at + needle.len();
            if found.len() > 5 {
                return found;
            }
        }
    }
    found
}

#[test]
fn every_fixture_is_clean_and_chunking_invariant() {
    let ctx = ctx();
    let all = fixtures();
    assert!(
        all.len() > 60,
        "fixtures missing: run tests/fixtures/capture.sh"
    );
    let mut failures = Vec::new();
    for f in &all {
        let body = read(&f.name);
        let whole = match rewrite(&ctx, f, &body, body.len()) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{}: error {e}", f.name));
                continue;
            }
        };
        parse_output(f, &whole);
        let l = leaks(&whole);
        if !l.is_empty() {
            failures.push(format!("{}: leaks {:?}", f.name, l));
        }
        for n in [1usize, 7, 4096] {
            // 1-byte chunks of the 2 MB OpenAPI document are slow and prove nothing more.
            if n == 1 && body.len() > 300_000 {
                continue;
            }
            let o = rewrite(&ctx, f, &body, n).unwrap();
            if o != whole {
                failures.push(format!("{}: chunk size {n} changes the output", f.name));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

fn fixture(name: &str) -> Fixture {
    fixtures().into_iter().find(|f| f.name == name).unwrap()
}

fn run(name: &str) -> Vec<Value> {
    let ctx = ctx();
    let f = fixture(name);
    let out = rewrite(&ctx, &f, &read(name), 4096).unwrap();
    parse_output(&f, &out)
}

fn input(name: &str) -> Value {
    serde_json::from_slice(&read(name)).unwrap()
}

#[test]
fn list_keeps_exactly_our_items() {
    for name in [
        "list_pods_all",
        "list_pods_all_pretty",
        "list_configmaps_all",
        "list_widgets_all",
    ] {
        let inp = input(name);
        let want: Vec<String> = inp["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["metadata"]["namespace"].as_str())
            .filter_map(|ns| ns.strip_prefix("foofoo-"))
            .map(str::to_owned)
            .collect();
        assert!(!want.is_empty(), "{name}");
        let out = &run(name)[0];
        let got: Vec<String> = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["namespace"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, want, "{name}");
        assert_eq!(out["kind"], inp["kind"]);
        assert_eq!(
            out["metadata"]["resourceVersion"],
            inp["metadata"]["resourceVersion"]
        );
    }
}

#[test]
fn list_metadata_is_fixed() {
    for name in ["list_pods_limit", "list_widgets_limit"] {
        let inp = input(name);
        assert!(inp["metadata"]["remainingItemCount"].is_number(), "{name}");
        let out = &run(name)[0];
        assert!(
            out["metadata"].get("remainingItemCount").is_none(),
            "{name}"
        );
        assert_eq!(out["metadata"]["continue"], inp["metadata"]["continue"]);
    }
    // CR lists put items before metadata, and their apiVersion is the tenant's group.
    let raw = String::from_utf8(read("list_widgets_all")).unwrap();
    assert!(
        raw.find("\"items\"").unwrap()
            < raw
                .find("\"metadata\":{\"continue\"")
                .unwrap_or(usize::MAX)
                .min(raw.rfind("\"metadata\"").unwrap())
    );
    let out = &run("list_widgets_all")[0];
    assert_eq!(out["apiVersion"], "example.com/v1");
    assert_eq!(out["items"][0]["apiVersion"], "example.com/v1");
}

#[test]
fn cluster_scoped_lists_are_renamed() {
    let out = &run("list_namespaces")[0];
    let names: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "prod"]);
    let out = &run("list_clusterroles")[0];
    let names: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["reader"]);
}

#[test]
fn watch_keeps_our_events_and_passes_bookmarks_and_errors() {
    let inp = String::from_utf8(read("watch_pods_all")).unwrap();
    let ours = inp
        .lines()
        .filter(|l| l.contains("\"namespace\":\"foofoo-"))
        .count();
    let evs = run("watch_pods_all");
    let objects = evs.iter().filter(|e| e["type"] != "BOOKMARK").count();
    assert_eq!(objects, ours);
    assert!(evs.iter().any(|e| e["type"] == "MODIFIED"));
    assert!(evs.iter().any(|e| e["type"] == "DELETED"));
    for e in &evs {
        if e["type"] != "BOOKMARK" {
            assert_eq!(e["object"]["metadata"]["namespace"], "default");
        }
    }
    let evs = run("watch_widgets_all");
    assert!(
        evs.iter()
            .all(|e| e["object"]["apiVersion"] == "example.com/v1")
    );
    let evs = run("watch_too_old");
    assert_eq!(evs[0]["type"], "ERROR");
    assert_eq!(evs[0]["object"]["code"], 410);
}

#[test]
fn table_rows_and_cells() {
    let out = &run("table_pods_all")[0];
    let rows = out["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        assert_eq!(r["object"]["metadata"]["namespace"], "default");
        assert_eq!(r["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(r["object"]["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(r["cells"][0], r["object"]["metadata"]["name"]);
    }
    let out = &run("table_namespaces")[0];
    let names: Vec<&str> = out["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cells"][0].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "prod"]);
    let out = &run("table_widgets_all")[0];
    for r in out["rows"].as_array().unwrap() {
        assert_eq!(r["object"]["apiVersion"], "meta.k8s.io/v1");
    }
    // includeObject=None on a list across namespaces: nothing tells whose a row is; dropped.
    let out = &run("table_pods_all_none")[0];
    assert!(
        out["columnDefinitions"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
}

#[test]
fn table_watch_delivers_headers() {
    for name in ["table_watch_pods_all", "table_watch_configmaps_all"] {
        let evs = run(name);
        assert!(!evs.is_empty(), "{name}");
        let defs = &evs[0]["object"]["columnDefinitions"];
        assert!(
            defs.as_array().is_some_and(|d| !d.is_empty()),
            "{name}: {defs}"
        );
    }
}

#[test]
fn discovery_shows_our_group_unprefixed() {
    let out = &run("discovery_agg_apis_v2")[0];
    let names: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"example.com"));
    assert!(names.contains(&"apps"));
    // Built-in groups are listed even where every kind is refused (as a cluster lists them);
    // another tenant's group never is.
    assert!(names.contains(&"apiregistration.k8s.io"));
    assert!(!names.iter().any(|n| n.starts_with("barbar-")));
    let out = &run("discovery_apis")[0];
    let g = out["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "example.com")
        .unwrap();
    assert_eq!(g["preferredVersion"]["groupVersion"], "example.com/v1");
    let out = &run("discovery_gv_ours")[0];
    assert_eq!(out["groupVersion"], "example.com/v1");
}

#[test]
fn discovery_is_deterministic() {
    let ctx = ctx();
    let f = fixture("discovery_agg_apis_v2");
    let a = rewrite(&ctx, &f, &read(&f.name), 999).unwrap();
    let b = rewrite(&ctx, &f, &read(&f.name), 4096).unwrap();
    assert_eq!(paddock_core::etag(&a), paddock_core::etag(&b));
    assert_eq!(paddock_core::etag(&a).len(), 64);
}

/// Every `$ref` of a rewritten OpenAPI document points at a schema that exists.
fn refs_resolve(doc: &Value, prefix: &str, defs: &Value) {
    match doc {
        Value::Object(o) => {
            for (k, v) in o {
                // JSONSchemaProps has a property named `$ref`: only string values are refs.
                if let (true, Some(r)) = (k == "$ref", v.as_str()) {
                    if let Some(name) = r.strip_prefix(prefix) {
                        assert!(defs.get(name).is_some(), "dangling $ref {r}");
                    }
                } else {
                    refs_resolve(v, prefix, defs);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| refs_resolve(v, prefix, defs)),
        _ => {}
    }
}

#[test]
fn openapi_renames_consistently() {
    let out = &run("openapi_v2")[0];
    let defs = &out["definitions"];
    assert!(defs.get("com.example.v1.Widget").is_some());
    assert_eq!(
        defs["com.example.v1.Widget"]["x-kubernetes-group-version-kind"][0]["group"],
        "example.com"
    );
    assert!(out["paths"].get("/apis/example.com/v1/widgets").is_some());
    refs_resolve(out, "#/definitions/", defs);

    let out = &run("openapi_v3_ours")[0];
    let schemas = &out["components"]["schemas"];
    assert!(schemas.get("com.example.v1.Widget").is_some());
    refs_resolve(out, "#/components/schemas/", schemas);

    let out = &run("openapi_v3_root")[0];
    let e = &out["paths"]["apis/example.com/v1"]["serverRelativeURL"];
    assert!(
        e.as_str()
            .unwrap()
            .starts_with("/openapi/v3/apis/example.com/v1?hash=")
    );
}

#[test]
fn status_errors_are_rewritten() {
    let out = &run("status_already_exists")[0];
    assert_eq!(out["details"]["name"], "default");
    assert_eq!(out["message"], "namespaces \"default\" already exists");
    let out = &run("status_notfound_clusterrole")[0];
    assert_eq!(out["details"]["name"], "nope");
    let out = &run("status_notfound_widget")[0];
    assert_eq!(out["details"]["group"], "example.com");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Cutting a body anywhere, any number of times, never changes the output.
    #[test]
    fn chunking_is_invisible(
        which in 0usize..6,
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        let names = [
            "list_pods_all",
            "list_widgets_all",
            "watch_pods_all",
            "table_watch_pods_all",
            "table_pods_all_object",
            "discovery_agg_apis_v2",
        ];
        let ctx = ctx();
        let f = fixture(names[which]);
        let body = read(&f.name);
        let whole = rewrite(&ctx, &f, &body, body.len()).unwrap();
        let split = rewrite_split(&ctx, &f, &body, &cuts).unwrap();
        prop_assert_eq!(whole, split);
    }
}

/// Every item of every captured list and watch, and variants of them: whenever the splice
/// fast path answers, it answers what the DOM path (object_down) answers.
#[test]
fn splice_fast_path_agrees_with_dom() {
    use paddock_core::response::members::{Members, array_elements};
    use paddock_core::response::splice::{Fast, Splicer};
    use paddock_core::response::{ItemType, item_bytes_down};

    let ctx = ctx();
    let splicer = Splicer::new(&ctx.tenant);
    let mut items: Vec<(Vec<u8>, ItemType, Option<(String, String)>)> = Vec::new();
    for f in fixtures() {
        let body = read(&f.name);
        if f.status != 200 {
            continue;
        }
        let p = plan_for(&ctx, &f);
        let ty = ItemType::from_list(p.resource.as_deref(), None, None);
        let gk = p
            .resource
            .as_ref()
            .map(|r| (r.upstream_group.clone(), r.kind.clone()));
        match f.kind {
            ResponseKind::List => {
                let m = Members::new(&body)
                    .map(|m| m.unwrap())
                    .find(|m| &body[m.key.clone()] == b"items")
                    .unwrap();
                let arr = &body[m.value.clone()];
                for r in array_elements(arr).unwrap() {
                    items.push((arr[r].to_vec(), ty.clone(), gk.clone()));
                }
            }
            ResponseKind::Watch => {
                for line in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    let v: Value = serde_json::from_slice(line).unwrap();
                    if v["type"] != "BOOKMARK" && v["type"] != "ERROR" {
                        items.push((
                            serde_json::to_vec(&v["object"]).unwrap(),
                            ItemType::default(),
                            None,
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    // Variants that must make the fast path step aside or drop.
    let base: Vec<_> = items.clone();
    for (raw, ty, gk) in &base {
        let s = String::from_utf8(raw.clone()).unwrap();
        if !s.contains("\"namespace\":\"foofoo-") {
            continue;
        }
        for v in [
            s.replacen("\"labels\":{", "\"labels\":{\"paddock.io/tenant\":\"foofoo\",", 1),
            s.replacen("\"uid\":", "\"annotations\":{\"a\":\"foofoo-x\"},\"uid\":", 1),
            s.replacen("\"namespace\":\"foofoo-", "\"namespace\":\"barbar-", 1),
            s.replacen("\"namespace\":\"foofoo-", "\"namespace\":\"foofoo", 1),
            s.replacen("\"uid\":", "\"ownerReferences\":[{\"apiVersion\":\"foofoo-example.com/v1\",\"kind\":\"Widget\",\"name\":\"w\",\"uid\":\"u\"}],\"uid\":", 1),
            // A field the kind's own rules rewrite, naming another tenant's namespace (the
            // DOM path redacts it; the fast path must step aside).
            s.replacen("\"spec\":{", "\"spec\":{\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"namespaces\":[\"barbar-x\"],\"topologyKey\":\"k\"}]}},", 1),
        ] {
            items.push((v.into_bytes(), ty.clone(), gk.clone()));
        }
    }
    let (mut fast, mut fell_back) = (0, 0);
    for (raw, ty, gk) in &items {
        let mut a = Vec::new();
        let got = splicer.object(
            raw,
            gk.as_ref().map(|(g, k)| (g.as_str(), k.as_str())),
            &mut a,
        );
        if got == Fast::Fallback {
            fell_back += 1;
            assert!(a.is_empty());
            continue;
        }
        fast += 1;
        let mut b = Vec::new();
        let kept = item_bytes_down(&ctx, ty, raw, &mut b).unwrap();
        assert_eq!(got == Fast::Keep, kept, "{}", String::from_utf8_lossy(raw));
        if kept {
            let va: Value = serde_json::from_slice(&a).unwrap();
            let vb: Value = serde_json::from_slice(&b).unwrap();
            assert_eq!(va, vb, "{}", String::from_utf8_lossy(raw));
        }
    }
    assert!(
        fast > 20 && fell_back > 20,
        "fast {fast}, fallback {fell_back}"
    );
}

#[test]
fn other_tenants_object_is_not_found_and_odd_bodies_are_handled() {
    let ctx = ctx();
    let f = fixture("object_pod");
    let theirs = String::from_utf8(read("object_pod"))
        .unwrap()
        .replace("foofoo-", "barbar-");
    let err = rewrite(&ctx, &f, theirs.as_bytes(), 100).unwrap_err();
    assert_eq!(err.http_code(), 404);

    // Protobuf where JSON was negotiated: refused, never passed through.
    let p = plan_for(&ctx, &f);
    let mut rw = response_rewriter(&ctx, &p, 200, "application/vnd.kubernetes.protobuf");
    assert!(rw.feed(b"k8s\0", &mut Vec::new()).is_err());

    // A plain-text error naming another tenant's namespace.
    let mut rw = response_rewriter(&ctx, &p, 500, "text/plain");
    let mut out = Vec::new();
    rw.feed(
        b"etcd timeout reading barbar-default/app-1 for foofoo-default",
        &mut out,
    )
    .unwrap();
    rw.finish(&mut out).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(!s.contains("barbar") && s.ends_with(" for default"), "{s}");

    // Upgrades and 304s carry no body of ours.
    let mut rw = response_rewriter(&ctx, &p, 101, "");
    let mut out = Vec::new();
    rw.feed(b"\x82\x01x", &mut out).unwrap();
    assert_eq!(out, b"\x82\x01x");
}

/// The server's whole-body path (`rewrite_whole_into`, which skips the boxed rewriter for
/// objects) answers exactly what the streaming rewriter answers, on every captured body, as
/// the fixture's own status and as a 200, and on a pod moved to another tenant (not found).
#[test]
fn whole_body_path_is_the_streaming_rewriter() {
    let ctx = ctx();
    let mut objects = 0;
    for f in fixtures() {
        let body = read(&f.name);
        let p = plan_for(&ctx, &f);
        for status in [f.status, 200] {
            let mut whole = Vec::new();
            let got = paddock_core::rewrite_whole_into(
                &ctx,
                &p,
                status,
                &f.content_type,
                &body,
                &mut whole,
            )
            .map(|()| whole);
            let g = Fixture {
                status,
                ..f.clone()
            };
            let want = rewrite(&ctx, &g, &body, body.len());
            assert_eq!(
                format!("{got:?}"),
                format!("{want:?}"),
                "whole-body path differs on {} as {status}",
                f.name
            );
        }
        objects += usize::from(matches!(f.kind, ResponseKind::Object));
    }
    assert!(objects >= 10, "only {objects} object fixtures");
    let f = fixtures()
        .into_iter()
        .find(|f| f.name == "object_pod")
        .unwrap();
    let other = String::from_utf8(read("object_pod"))
        .unwrap()
        .replace("foofoo-", "barbar-");
    let mut out = Vec::new();
    let r = paddock_core::rewrite_whole_into(
        &ctx,
        &plan_for(&ctx, &f),
        200,
        "application/json",
        other.as_bytes(),
        &mut out,
    );
    assert!(matches!(r, Err(TranslateError::NotFound(_))), "{r:?}");
}
