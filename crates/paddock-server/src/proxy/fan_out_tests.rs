//! The fan-out step alone: a read across all namespaces goes to the port, anything else to
//! the inner service.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};

use tower::Layer;

use crate::proxy::{Step, step_fn};

use super::*;
use crate::proxy::test_support::{job, text};
use paddock_upstream::body::full;

/// Counts fan-outs and answers with the upstream path the plan holds.
#[derive(Default)]
struct Fake {
    fanned: AtomicUsize,
}

impl FanningOut for Fake {
    async fn fan_out(self: Arc<Self>, job: Arc<Job>) -> Result<Response<ResBody>, ServerError> {
        self.fanned.fetch_add(1, Ordering::SeqCst);
        Ok(Response::new(full(format!(
            "fanned out {}",
            job.plan.upstream_path_and_query
        ))))
    }

    fn merged_read(&self, _job: &Job) -> bool {
        false
    }
}

async fn inner(p: Planned<()>) -> Result<Response<ResBody>, ServerError> {
    Ok(Response::new(full(format!(
        "sent {}",
        p.job.plan.upstream_path_and_query
    ))))
}

fn planned(method: &str, uri: &str) -> Planned<()> {
    Planned {
        job: job(method, uri),
        req: http::Request::new(()),
    }
}

#[tokio::test]
async fn a_read_across_all_namespaces_fans_out_and_is_never_sent() {
    let fake = Arc::new(Fake::default());
    let svc = FanOutLayer::new(&fake).layer(step_fn(inner));
    let resp = svc.run(planned("GET", "/api/v1/pods")).await.unwrap();
    assert_eq!(text(resp).await, "fanned out /api/v1/pods");
    assert_eq!(fake.fanned.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_read_in_one_namespace_goes_down_the_stack() {
    let fake = Arc::new(Fake::default());
    let svc = FanOutLayer::new(&fake).layer(step_fn(inner));
    let resp = svc
        .run(planned("GET", "/api/v1/namespaces/web/pods"))
        .await
        .unwrap();
    assert_eq!(text(resp).await, "sent /api/v1/namespaces/foofoo-web/pods");
    assert_eq!(fake.fanned.load(Ordering::SeqCst), 0);
}
