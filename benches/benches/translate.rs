//! Translation throughput: paddock's streaming rewriters against a `serde_json::Value`
//! parse-mutate-serialise baseline, on the same input in the same run.
//!
//! `cargo bench -p paddock-benches --bench translate`. Throughput is MB/s of upstream input.
//!
//! `small_get`: what isolation costs one small GET: the request parsed and planned
//! for the tenant (names, namespace, the catalog's rules) and its answer rewritten back, the
//! loadbench's `GET /api/v1/namespaces/bench/configmaps/small` and the apiserver's answer.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use paddock_benches::{
    baseline_list, baseline_watch, pod_list, pods_plan, run_rewriter, tenant_context, watch_stream,
};
use paddock_core::response::framer::{FrameError, ObjectFramer};
use paddock_core::{parse_request, plan, rewrite_whole_into};

const CHUNK: usize = 64 * 1024;

fn list(c: &mut Criterion) {
    let ctx = tenant_context();
    let plan = pods_plan(&ctx, false);
    let body = pod_list(5_000);
    let mut g = c.benchmark_group("list_5000_pods");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(10);
    g.bench_function("paddock_stream_64k", |b| {
        b.iter(|| {
            let mut n = 0usize;
            run_rewriter(&ctx, &plan, &body, CHUNK, &mut |o| n += o.len());
            n
        })
    });
    g.bench_function("serde_value_baseline", |b| {
        b.iter(|| baseline_list(&body).len())
    });
    // The ceiling: finding item boundaries only, no rewrite, no output.
    g.bench_function("framing_only", |b| {
        b.iter(|| {
            let mut f = ObjectFramer::new(&["items"]);
            let mut n = 0usize;
            for c in body.chunks(CHUNK) {
                let r: Result<(), FrameError> = f.feed(c, &mut |_| {
                    n += 1;
                    Ok(())
                });
                assert!(r.is_ok());
            }
            n
        })
    });
    g.finish();
}

fn watch(c: &mut Criterion) {
    let ctx = tenant_context();
    let plan = pods_plan(&ctx, true);
    let body = watch_stream(10_000);
    let mut g = c.benchmark_group("watch_10000_events");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(10);
    g.bench_function("paddock_stream_64k", |b| {
        b.iter(|| {
            let mut n = 0usize;
            run_rewriter(&ctx, &plan, &body, CHUNK, &mut |o| n += o.len());
            n
        })
    });
    g.bench_function("serde_value_baseline", |b| b.iter(|| baseline_watch(&body)));
    g.finish();
}

/// The apiserver's answer to the load benchmark's small GET (its ConfigMap, upstream names).
const SMALL_CONFIGMAP: &str = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"small","namespace":"foofoo-bench","uid":"0b6d1e2a-4c1e-4d7a-9f2b-5d8fc7b91a3e","resourceVersion":"1842","creationTimestamp":"2026-11-28T01:40:49Z","managedFields":[{"manager":"loadbench","operation":"Update","apiVersion":"v1","time":"2026-11-28T01:40:49Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:greeting":{},"f:size":{}}}}]},"data":{"greeting":"hello","size":"small"}}"#;

fn small_get(c: &mut Criterion) {
    let ctx = tenant_context();
    let path = "/api/v1/namespaces/bench/configmaps/small";
    let plan_of = || parse_request("GET", path, None).and_then(|r| plan(&ctx, r));
    let planned = match plan_of() {
        Ok(p) => p,
        Err(e) => panic!("plan: {e}"),
    };
    assert_eq!(
        planned.upstream_path_and_query,
        "/api/v1/namespaces/foofoo-bench/configmaps/small"
    );
    let mut g = c.benchmark_group("small_get");
    g.bench_function("parse_and_plan", |b| {
        b.iter(|| plan_of().map(|p| p.long_running))
    });
    let mut doc = Vec::with_capacity(2 * SMALL_CONFIGMAP.len());
    let rewrite = |doc: &mut Vec<u8>| {
        doc.clear();
        let raw = SMALL_CONFIGMAP.as_bytes();
        rewrite_whole_into(&ctx, &planned, 200, "application/json", raw, doc).map(|()| doc.len())
    };
    match rewrite(&mut doc) {
        Ok(_) => assert!(
            !String::from_utf8_lossy(&doc).contains("foofoo-"),
            "the answer keeps an upstream name"
        ),
        Err(e) => panic!("rewrite: {e}"),
    }
    g.bench_function("rewrite_answer", |b| b.iter(|| rewrite(&mut doc)));
    g.finish();
}

criterion_group!(benches, list, watch, small_get);
criterion_main!(benches);
