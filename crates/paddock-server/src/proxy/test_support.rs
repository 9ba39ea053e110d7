//! For the pipeline steps' unit tests: a planned job, and upstream's answer as hyper hands it
//! over (a real hyper `Incoming` body, from an in-process HTTP/1.1 connection: plumbing only).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use paddock_core::{Catalog, TenantContext, TenantId};
use paddock_upstream::answer_body::AnswerBody;

use super::{Job, Sent, SentWith, TenantUser};
use paddock_upstream::res_body::ResBody;

const CORE: &[u8] = include_bytes!("../../../paddock-core/testdata/discovery-core.json");
const APIS: &[u8] = include_bytes!("../../../paddock-core/testdata/discovery-apis.json");

/// Tenant `foofoo`'s user `alice` (group `dev`).
pub fn caller() -> TenantUser {
    TenantUser {
        tenant: TenantId::parse("foofoo").unwrap(),
        user: "alice".into(),
        groups: Arc::from(["dev".to_owned()]),
    }
}

/// The job the planning step makes of `method uri` for [`caller`], with the real catalog.
pub fn job(method: &str, uri: &str) -> Arc<Job> {
    let ctx = TenantContext {
        tenant: caller().tenant,
        catalog: Arc::new(Catalog::from_aggregated(CORE, APIS).unwrap()),
    };
    let (path, query) = match uri.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (uri, None),
    };
    let parsed = paddock_core::parse_request(method, path, query).unwrap();
    let mut plan = paddock_core::plan(&ctx, parsed).unwrap();
    plan.response = paddock_core::response_kind_for(&plan, None);
    Arc::new(Job {
        ctx,
        plan,
        caller: caller(),
        accept: None,
        if_none_match: None,
    })
}

/// `resp` as it arrives from an upstream: sent over an in-process HTTP/1.1 connection.
pub async fn upstream_answer(resp: Response<Full<Bytes>>) -> Response<AnswerBody> {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let once = Arc::new(Mutex::new(Some(resp)));
    tokio::spawn(async move {
        let svc = hyper::service::service_fn(move |_: Request<Incoming>| {
            let r = once.lock().unwrap().take().expect("one request per answer");
            async move { Ok::<_, Infallible>(r) }
        });
        let io = TokioIo::new(server_io);
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(io, svc)
            .await;
    });
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(client_io))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::get("/").body(Empty::<Bytes>::new()).unwrap();
    sender
        .send_request(req)
        .await
        .unwrap()
        .map(AnswerBody::Hyper)
}

/// An upstream answer of `status` with a JSON body.
pub async fn json_answer(status: StatusCode, body: &str) -> Response<AnswerBody> {
    let resp = Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    upstream_answer(resp).await
}

/// `Sent` of `job` with upstream's answer `resp`.
pub fn sent(job: Arc<Job>, resp: Response<AnswerBody>) -> Sent {
    Sent {
        job,
        resp,
        slot: None,
        deadline: tokio::time::Instant::now() + std::time::Duration::from_secs(30),
        with: SentWith {
            who: paddock_core::identity::As::Real,
            rules_namespace: None,
            client_upgrade: None,
            new_crd: None,
        },
    }
}

/// A body read whole, as text.
pub async fn text(resp: Response<ResBody>) -> String {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}
