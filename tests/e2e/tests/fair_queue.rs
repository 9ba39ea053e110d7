//! The replica's tenant-fair work queue (docs/fairshare.md "Fair queue"), against
//! the real control plane with paddock as a real process, a budget of 4 work seats and a
//! lease of 1 s:
//!
//! 1. **A lone tenant is not held to the budget; a slow client loses its seats.** Tenant A
//!    sends creates whose bodies it holds back (HTTP/2 streams, half a body sent), so each
//!    holds its seat while it waits on its client. Alone (no other tenant active for the
//!    queue's activity window, 1 s), A takes 5 seats of the budget of 4: a tenant with nobody
//!    to share with is not capped. Tenant B's GET then arrives: the budget applies again, and
//!    no seat frees by itself (A's creates never end while the test holds them), so B is
//!    answered only because seats held past the lease are taken back for a waiting request —
//!    checked by B's 200 while all five of A's creates are still held, and by the queue's
//!    revocation counter. Every held create then completes (201): a revoked request goes on.
//! 2. **Flood.** A runs 16 loops of LISTs (each weighs several seats) and creates for a few
//!    seconds while B makes GETs one after another: every one of B's is answered 200, and
//!    the queue's counter shows A's requests waited.
//!
//! Which tenant goes next (the least work used) is decided in paddock-core and unit-tested
//! there (`fair_queue_tests.rs`) with the work passed in; here the queue's state is read from
//! paddock's `/metrics` (admin), never guessed from timing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use paddock_e2e::http::Tls;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};
use paddock_upstream::upstream::UpstreamCredential;
use serde_json::json;

/// Generous: the machine running this is shared and loaded.
const DEADLINE: Duration = Duration::from_secs(90);

/// One of paddock's metrics (an unlabelled gauge or counter), read as the admin.
async fn metric(admin: &Tls, name: &str) -> Result<f64> {
    let (st, body) = admin
        .send(Method::GET, "/metrics", None, Duration::from_secs(30))
        .await
        .map_err(|e| anyhow::anyhow!("GET /metrics: {e}"))?;
    ensure!(st == StatusCode::OK, "GET /metrics: {st}");
    let text = String::from_utf8_lossy(&body);
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse::<f64>().ok()).flatten()
        })
        .with_context(|| format!("{name} is not in /metrics"))
}

/// Waits until the queue shows `in_use` seats held and `waiting` requests waiting.
async fn until_queue(admin: &Tls, in_use: f64, waiting: f64, what: &str) -> Result<()> {
    let t0 = Instant::now();
    loop {
        let got = (
            metric(admin, "paddock_fair_queue_seats_in_use").await?,
            metric(admin, "paddock_fair_queue_waiting").await?,
        );
        if got == (in_use, waiting) {
            return Ok(());
        }
        if t0.elapsed() > DEADLINE {
            bail!(
                "{what}: the queue shows {got:?} (in use, waiting), expected ({in_use}, {waiting})"
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A tenant's HTTP/2 connection on which request bodies are sent when the test says so.
struct Held {
    client: h2::client::SendRequest<Bytes>,
    base: String,
}

/// A create whose body is half sent.
struct Pending {
    send: h2::SendStream<Bytes>,
    rest: Bytes,
    answer: h2::client::ResponseFuture,
}

impl Held {
    async fn connect(kubeconfig: &std::path::Path) -> Result<Held> {
        let cred = UpstreamCredential::from_kubeconfig(kubeconfig)?;
        let tls = paddock_pki::upstream_client_config(
            &cred.ca_pem,
            cred.client_cert_pem.as_deref(),
            cred.client_key_pem.as_deref(),
            vec![b"h2".to_vec()],
        )?;
        let hostport = cred.server.trim_start_matches("https://").to_string();
        let addr: std::net::SocketAddr = hostport.parse()?;
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        let name = rustls_pki_types::ServerName::IpAddress(addr.ip().into());
        let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
            .connect(name, tcp)
            .await?;
        let (client, conn) = h2::client::handshake(stream).await?;
        tokio::spawn(conn);
        Ok(Held {
            client,
            base: cred.server.clone(),
        })
    }

    /// POSTs a ConfigMap named `name`, sending half its body now.
    async fn start_create(&mut self, name: &str) -> Result<Pending> {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": name}, "data": {"x": "y"}})
        .to_string();
        let (first, rest) = body.split_at(body.len() / 2);
        let req = Request::post(format!(
            "{}/api/v1/namespaces/default/configmaps",
            self.base
        ))
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("content-length", body.len().to_string())
        .body(())?;
        let mut client = self.client.clone().ready().await?;
        let (answer, mut send) = client.send_request(req, false)?;
        send.send_data(Bytes::copy_from_slice(first.as_bytes()), false)?;
        Ok(Pending {
            send,
            rest: Bytes::copy_from_slice(rest.as_bytes()),
            answer,
        })
    }
}

impl Pending {
    /// Sends the rest of the body; the answer's status.
    async fn finish(mut self) -> Result<StatusCode> {
        self.send.send_data(self.rest, true)?;
        let resp = tokio::time::timeout(DEADLINE, self.answer)
            .await
            .context("a held create was not answered")??;
        let status = resp.status();
        let mut body = resp.into_body();
        while let Some(chunk) = body.data().await {
            let chunk = chunk?;
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        Ok(status)
    }
}

#[test]
fn a_lone_tenant_is_not_capped_and_a_slow_client_loses_its_seats() -> Result<()> {
    let t_start = Instant::now();
    let cp = ControlPlane::start()?;
    let args: Vec<String> = [
        "--fair-queue-seats",
        "4",
        "--fair-queue-timeout",
        "120s",
        "--fair-queue-lease",
        "1s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let p = Paddock::start_with_args(&cp, StoreKind::Embedded, "paddock", &args)?;
    eprintln!("  paddock up at {:?}", t_start.elapsed());
    let (a_cfg, b_cfg) = (p.tenant("noisya")?, p.tenant("quietb")?);
    eprintln!("  two tenants created at {:?}", t_start.elapsed());
    let rt = tokio::runtime::Runtime::new()?;
    let report = rt.block_on(async {
        let admin = Tls::from_kubeconfig(&p.admin_kubeconfig(), None)?;
        let b = Tls::from_kubeconfig(&b_cfg, None)?;
        let a = Tls::from_kubeconfig(&a_cfg, None)?;
        let probe = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}})
            .to_string()
            .into_bytes();
        let (st, body) = b
            .send(
                Method::POST,
                "/api/v1/namespaces/default/configmaps",
                Some(("application/json", probe)),
                DEADLINE,
            )
            .await
            .map_err(|e| anyhow::anyhow!("B's create: {e}"))?;
        ensure!(
            st == StatusCode::CREATED,
            "B's create: {st} {}",
            String::from_utf8_lossy(&body)
        );
        until_queue(&admin, 0.0, 0.0, "at rest").await?;

        // ---- 1. a lone tenant, a slow client ---------------------------------------------
        // B's create must be older than the queue's activity window (1 s) for A to be alone:
        // a wait for a documented window, twice over, not a guess at the machine's speed.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut held_a = Held::connect(&a_cfg).await?;
        let mut a_held = Vec::new();
        for i in 0..5 {
            a_held.push(held_a.start_create(&format!("held{i}")).await?);
        }
        until_queue(
            &admin,
            5.0,
            0.0,
            "A alone takes 5 seats of a budget of 4 (a lone tenant is not held to the budget)",
        )
        .await?;
        let revoked_before = metric(&admin, "paddock_fair_queue_revoked_total").await?;
        // B's GET waits: with B active the budget applies, and A holds more than all of it.
        // No seat frees by itself: it is admitted only by taking back seats held past the
        // lease.
        let (st, _) = b
            .send(
                Method::GET,
                "/api/v1/namespaces/default/configmaps/probe",
                None,
                DEADLINE,
            )
            .await
            .map_err(|e| anyhow::anyhow!("B's GET while A's 5 creates hold every seat: {e}"))?;
        ensure!(
            st == StatusCode::OK,
            "B's GET while A's creates hold every seat: {st}"
        );
        let revoked = metric(&admin, "paddock_fair_queue_revoked_total").await? - revoked_before;
        ensure!(
            revoked >= 1.0,
            "B was answered while A's held creates held every seat, yet no lease was revoked"
        );
        let mut codes = Vec::new();
        for pending in a_held {
            codes.push(pending.finish().await?);
        }
        ensure!(
            codes.iter().all(|c| *c == StatusCode::CREATED),
            "held creates (revoked ones included) answered {codes:?}"
        );
        until_queue(&admin, 0.0, 0.0, "every held request ended").await?;
        let mut report = vec![format!(
            "slow client: A held 5 seats of 4 alone; B's GET answered 200 while A's 5 creates \
             were held ({revoked} leases revoked); the {} held creates answered 201",
            codes.len()
        )];

        report.push(format!(
            "(slow-client part done at {:?})",
            t_start.elapsed()
        ));
        // ---- 2. flood ------------------------------------------------------------------
        let queued_before = metric(&admin, "paddock_fair_queue_queued_total").await?;
        let stop = Arc::new(AtomicBool::new(false));
        let a_answers = Arc::new(AtomicU64::new(0));
        let mut flood = Vec::new();
        for w in 0..16 {
            let (a, stop, n) = (a.clone(), stop.clone(), a_answers.clone());
            flood.push(tokio::spawn(async move {
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) {
                    i += 1;
                    let r = if i.is_multiple_of(2) {
                        a.send(
                            Method::GET,
                            "/api/v1/namespaces/default/configmaps?limit=500",
                            None,
                            DEADLINE,
                        )
                        .await
                    } else {
                        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": format!("f{w}-{i}")}});
                        a.send(
                            Method::POST,
                            "/api/v1/namespaces/default/configmaps",
                            Some(("application/json", cm.to_string().into_bytes())),
                            DEADLINE,
                        )
                        .await
                    };
                    if r.is_ok() {
                        n.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        // B is a steady, well-behaved client: 20 GETs a second (as in `loadbench --only
        // noisy`), far under its own read budget (100/s, burst 200). Unpaced, B's GETs ran
        // back to back and, answered quickly on a fast machine, spent that budget within a
        // second and got the 429s its own limit gives.
        let t0 = Instant::now();
        let mut b_codes = Vec::new();
        let mut pace = tokio::time::interval(Duration::from_millis(50));
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while t0.elapsed() < Duration::from_secs(8) || b_codes.len() < 10 {
            pace.tick().await;
            let r = b
                .send(
                    Method::GET,
                    "/api/v1/namespaces/default/configmaps/probe",
                    None,
                    DEADLINE,
                )
                .await;
            b_codes.push(match r {
                Ok((st, _)) => st.as_u16(),
                Err(e) => bail!("B's GET during A's flood: {e}"),
            });
        }
        stop.store(true, Ordering::Release);
        for f in flood {
            f.await?;
        }
        let queued = metric(&admin, "paddock_fair_queue_queued_total").await? - queued_before;
        ensure!(
            b_codes.iter().all(|c| *c == 200),
            "B's GETs during A's flood: {b_codes:?}"
        );
        ensure!(
            queued > 0.0,
            "A's flood of 16 loops never waited for a seat: no contention was made"
        );
        until_queue(&admin, 0.0, 0.0, "after the flood").await?;
        report.push(format!(
            "flood: B {} GETs all 200 while A made {} requests, {queued} of them waited for seats",
            b_codes.len(),
            a_answers.load(Ordering::Relaxed)
        ));
        Ok::<_, anyhow::Error>(report)
    })?;
    for line in report {
        eprintln!("  {line}");
    }
    eprintln!("  done in {:?}", t_start.elapsed());
    Ok(())
}
