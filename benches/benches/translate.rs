//! Translation throughput: paddock's streaming rewriters against a `serde_json::Value`
//! parse-mutate-serialise baseline, on the same input in the same run.
//!
//! `cargo bench -p paddock-benches --bench translate`. Throughput is MB/s of upstream input.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use paddock_benches::{
    baseline_list, baseline_watch, pod_list, pods_plan, run_rewriter, tenant_context, watch_stream,
};
use paddock_core::framer::{FrameError, ObjectFramer};

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

criterion_group!(benches, list, watch);
criterion_main!(benches);
