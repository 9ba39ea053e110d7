//! A header-adding forwarder on loopback, so that the real `kubectl` can send headers it has no
//! flag for: kubectl talks plain HTTP to it (`server: http://127.0.0.1:<port>`, no
//! credential), and it sends each request on through a [`paddock_upstream::upstream::Upstream`]
//! (a client certificate, the answer streamed back) with fixed headers added. The isolation
//! suite uses it twice:
//!
//! - in front of paddock with a tenant's certificate, adding `X-Remote-*` claims (a tenant
//!   trying to be someone else to the apiserver behind paddock);
//! - in front of the apiserver with the front-proxy certificate (the bypass of front-proxy
//!   mode: the apiserver alone must refuse what translation would have refused): kubectl's
//!   own `--as`/`--as-group` headers name the identity, as in the impersonation bypass, and
//!   the upstream renames them to `X-Remote-*`, as it does for paddock itself
//!   ([`Claims::FromClientImpersonation`]).
//!
//! Otherwise whatever identity headers the client sent are dropped; only the added ones go on.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use http::{HeaderName, HeaderValue, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use paddock_upstream::answer_body::AnswerBody;
use paddock_upstream::upstream::{Route, Upstream};

/// Which identity headers go on.
pub enum Claims {
    /// None of the client's; these instead (lower-case names).
    Add(Vec<(String, String)>),
    /// The client's `Impersonate-*` headers (its `X-Remote-*` ones are dropped).
    FromClientImpersonation,
}

/// A running forwarder; it stops when dropped.
pub struct Forwarder {
    addr: SocketAddr,
    stop: stop::Stop,
}

/// Request headers not passed on: hop by hop, the body's framing (recomputed), the client's
/// credential, and identity claims but, with `keep_impersonation`, `Impersonate-*`.
fn dropped(name: &str, keep_impersonation: bool) -> bool {
    use paddock_core::identity::headers::{IMPERSONATE, is_identity_header};
    matches!(
        name,
        "host" | "connection" | "content-length" | "transfer-encoding" | "authorization"
    ) || (is_identity_header(name) && !(keep_impersonation && name.starts_with(IMPERSONATE.prefix)))
}

impl Forwarder {
    /// Starts on 127.0.0.1 (its own thread and runtime), forwarding to `up` with `claims`.
    pub fn start(up: Upstream, claims: Claims) -> Result<Self> {
        let (add, keep) = match claims {
            Claims::Add(add) => (add, false),
            Claims::FromClientImpersonation => (Vec::new(), true),
        };
        let add: Vec<(HeaderName, HeaderValue)> = add
            .into_iter()
            .map(|(n, v)| {
                Ok((
                    HeaderName::from_bytes(n.as_bytes())?,
                    HeaderValue::from_str(&v)?,
                ))
            })
            .collect::<Result<_>>()?;
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let stop = stop::Stop::default();
        let stopped = stop.clone();
        std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(serve(std_listener, up, (add, keep), stopped));
        });
        Ok(Forwarder { addr, stop })
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Writes a kubeconfig for it (no credential: the forwarder holds it) at `dir/name`.
    pub fn kubeconfig(&self, dir: &Path, name: &str) -> Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{name}.kubeconfig"));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{}\"}}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n",
            self.url()
        );
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.fire();
    }
}

/// The headers added, and whether the client's `Impersonate-*` ones are kept.
type Plan = (Vec<(HeaderName, HeaderValue)>, bool);

async fn serve(listener: std::net::TcpListener, up: Upstream, plan: Plan, stop: stop::Stop) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let plan = std::sync::Arc::new(plan);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.fired() => return,
        };
        let Ok((tcp, _)) = accepted else { continue };
        let (up, plan) = (up.clone(), plan.clone());
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| forward(up.clone(), plan.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

async fn forward(
    up: Upstream,
    plan: std::sync::Arc<Plan>,
    req: Request<Incoming>,
) -> Result<Response<AnswerBody>, std::io::Error> {
    let io = |e: String| std::io::Error::other(e);
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|e| io(e.to_string()))?
        .to_bytes();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut out = Request::builder()
        .method(parts.method.clone())
        .uri(up.uri(path).map_err(|e| io(e.to_string()))?);
    for (n, v) in &parts.headers {
        if !dropped(n.as_str(), plan.1) {
            out = out.header(n, v);
        }
    }
    for (n, v) in plan.0.iter() {
        out = out.header(n, v);
    }
    let out = out
        .body(paddock_upstream::body::full_up(body))
        .map_err(|e| io(e.to_string()))?;
    // HTTP/1.1 for everything (watches too): the answer streams back as it comes.
    let resp = up
        .send(out, Route::Bulk)
        .await
        .map_err(|e| io(e.to_string()))?;
    Ok(resp)
}

/// A one-shot stop signal (tokio's `Notify` remembers a notification made before the wait).
mod stop {
    use std::sync::Arc;

    #[derive(Clone, Default)]
    pub struct Stop(Arc<tokio::sync::Notify>);

    impl Stop {
        pub fn fire(&self) {
            self.0.notify_one();
        }
        pub async fn fired(&self) {
            self.0.notified().await;
        }
    }
}
