//! Slow and greedy clients, and per-tenant fair share, against the
//! real control plane with paddock as a real process:
//! - idle connections (HTTP/1.1 with and without a first request, HTTP/2) are closed within
//!   the configured idle / header-read timeouts;
//! - headers sent a byte every quarter second are cut off at the header-read timeout;
//! - an oversized header block gets a 431 `Status` (a normal one is served);
//! - a tenant opening connections in a loop gets 429 `Status`es naming `maxConnections` past
//!   its limit, and the slot comes back when a connection closes;
//! - the request limits: writes over `writeQPS`, watches over `maxWatches` get 429 with
//!   `Retry-After` naming the limit, a LIST's `limit` is lowered to `maxList` (compared with
//!   the same LIST straight at the apiserver);
//! - API Priority and Fairness: the tenant's requests are one flow of its own FlowSchema
//!   (every user of the tenant alike), which other tenants cannot see;
//!
//! Meanwhile another tenant's requests keep working throughout (a prober checks every answer).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::cred::{Cred, extract_cred};
use paddock_e2e::process;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(3);
const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Slack for "closed within the limit": scheduling on a shared 2-core machine.
const SLACK: Duration = Duration::from_secs(2);
const A_MAX_CONNECTIONS: usize = 8;

/// Raw TLS connections to paddock as one tenant user.
struct Dialer {
    connector: TlsConnector,
    addr: SocketAddr,
}

impl Dialer {
    fn new(ca: &Path, cred: &Cred, addr: SocketAddr, alpn: &[u8]) -> Result<Dialer> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(ca)? {
            roots.add(c?)?;
        }
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(&cred.cert)?.collect::<Result<_, _>>()?;
        let key = PrivateKeyDer::from_pem_file(&cred.key)?;
        let mut cfg = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_client_auth_cert(certs, key)?;
        cfg.alpn_protocols = vec![alpn.to_vec()];
        Ok(Dialer {
            connector: TlsConnector::from(Arc::new(cfg)),
            addr,
        })
    }

    async fn connect(&self) -> Result<TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(self.addr).await?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        Ok(self.connector.connect(name, tcp).await?)
    }
}

/// Reads until the peer closes; how long that took, and what came. Fails past `limit`.
async fn until_closed(
    s: &mut TlsStream<TcpStream>,
    limit: Duration,
) -> Result<(Duration, Vec<u8>)> {
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(limit.saturating_sub(t0.elapsed()), s.read(&mut buf)).await {
            Err(_) => bail!("still open after {limit:?} ({} bytes received)", got.len()),
            Ok(Ok(0)) | Ok(Err(_)) => return Ok((t0.elapsed(), got)),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// One HTTP/1.1 response: status code, headers (lowercase names), body.
struct Resp {
    code: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// Reads one HTTP/1.1 response (Content-Length or chunked) within 10 s.
async fn read_response(s: &mut TlsStream<TcpStream>) -> Result<Resp> {
    let fut = async {
        let mut buf = Vec::new();
        let mut b = [0u8; 8192];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = s.read(&mut b).await?;
            ensure!(
                n > 0,
                "connection closed before a response ({} bytes)",
                buf.len()
            );
            buf.extend_from_slice(&b[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let mut lines = head.split("\r\n");
        let code: u16 = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .context("no status line")?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let mut rest = buf[head_end..].to_vec();
        let find = |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone());
        let body = if let Some(len) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
            while rest.len() < len {
                let n = s.read(&mut b).await?;
                ensure!(n > 0, "closed mid-body");
                rest.extend_from_slice(&b[..n]);
            }
            rest.truncate(len);
            rest
        } else if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            while !rest.ends_with(b"0\r\n\r\n") {
                let n = s.read(&mut b).await?;
                ensure!(n > 0, "closed mid-body");
                rest.extend_from_slice(&b[..n]);
            }
            dechunk(&rest)
        } else {
            rest
        };
        Ok(Resp {
            code,
            headers,
            body,
        })
    };
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .context("no response within 10 s")?
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(i) = raw.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&raw[..i]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = i + 2;
        out.extend_from_slice(&raw[start..(start + size).min(raw.len())]);
        raw = &raw[(start + size + 2).min(raw.len())..];
    }
    out
}

/// Types of the HTTP/2 frames in `raw` (9-byte header: 24-bit length, type, flags, stream).
fn frame_types(mut raw: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    while raw.len() >= 9 {
        let len = (usize::from(raw[0]) << 16) | (usize::from(raw[1]) << 8) | usize::from(raw[2]);
        types.push(raw[3]);
        raw = &raw[(9 + len).min(raw.len())..];
    }
    types
}

fn get(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n{extra}\r\n")
        .into_bytes()
}

/// `curl` as a tenant user: (code, response headers, body).
fn curl(
    ca: &Path,
    cred: &Cred,
    method: &str,
    url: &str,
    body: Option<&str>,
) -> Result<(u16, String, String)> {
    curl_accept(ca, cred, method, url, body, "application/json")
}

fn curl_accept(
    ca: &Path,
    cred: &Cred,
    method: &str,
    url: &str,
    body: Option<&str>,
    accept: &str,
) -> Result<(u16, String, String)> {
    let mut c = Command::new("curl");
    c.args([
        "-sS",
        "--max-time",
        "20",
        "-D",
        "-",
        "-X",
        method,
        "-w",
        "\n%{http_code}",
    ])
    .arg("--cacert")
    .arg(ca)
    .arg("--cert")
    .arg(&cred.cert)
    .arg("--key")
    .arg(&cred.key)
    .args(["-H", &format!("Accept: {accept}")]);
    if let Some(b) = body {
        c.args(["-H", "Content-Type: application/json", "--data-binary", b]);
    }
    c.arg(url);
    let out = process::run(&mut c, None, Duration::from_secs(30))?;
    let text = out.stdout.trim_end().to_string();
    let (rest, code) = text.rsplit_once('\n').unwrap_or(("", text.as_str()));
    let (head, body) = rest.split_once("\r\n\r\n").unwrap_or((rest, ""));
    Ok((
        code.trim().parse().unwrap_or(0),
        head.to_ascii_lowercase(),
        body.to_string(),
    ))
}

fn status_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or(Value::Null)
}

/// Tenant B's requests, every 200 ms until stopped: (HTTP code, latency) of each.
fn start_prober(
    ca: PathBuf,
    cred: Cred,
    url: String,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(u16, Duration)>> {
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        while !stop.load(Ordering::Acquire) {
            let t0 = Instant::now();
            let code = curl(
                &ca,
                &cred,
                "GET",
                &format!("{url}/api/v1/namespaces/default/configmaps"),
                None,
            )
            .map(|r| r.0)
            .unwrap_or(0);
            seen.push((code, t0.elapsed()));
            std::thread::sleep(Duration::from_millis(200));
        }
        seen
    })
}

#[test]
fn slow_clients_and_fair_share() -> Result<()> {
    let cp = ControlPlane::start()?;
    let args: Vec<String> = [
        "--header-read-timeout",
        "3s",
        "--idle-timeout",
        "5s",
        "--max-header-bytes",
        &MAX_HEADER_BYTES.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let p = Paddock::start_with_args(&cp, StoreKind::Embedded, "paddock", &args)?;
    let ca = p.dir().join("certs").join("ca.crt");
    let work = cp.dir().join("fairshare");
    std::fs::create_dir_all(&work)?;
    let url = p.url().to_string();
    let addr: SocketAddr = url.trim_start_matches("https://").parse()?;

    let a = extract_cred(&p.tenant("noisya")?, &work, "a")?;
    let b = extract_cred(&p.tenant("quietb")?, &work, "b")?;
    let c = extract_cred(&p.tenant("idlecc")?, &work, "c")?;
    // Tenant A's own limits, through the CLI (stored in its tenant record).
    let shown = p.cli(&[
        "tenant",
        "set-limits",
        "noisya",
        &format!("maxConnections={A_MAX_CONNECTIONS}"),
        "writeQPS=2",
        "writeBurst=2",
        "maxWatches=2",
        "maxList=5",
        "apfFlow=tenant",
        "-o",
        "json",
    ])?;
    let shown: Value = serde_json::from_str(&shown)?;
    ensure!(
        shown["spec"]["limits"]["writeQPS"] == 2
            && shown["spec"]["limits"]["maxList"] == 5
            && shown["spec"]["limits"]["apfFlow"] == "tenant",
        "set-limits did not store the overrides: {shown}"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let prober = start_prober(
        ca.clone(),
        extract_cred(&p.tenant("quietb")?, &work, "b2")?,
        url.clone(),
        stop.clone(),
    );
    let rt = tokio::runtime::Runtime::new()?;
    let mut report = Vec::new();

    rt.block_on(async {
        let h1c = Dialer::new(&ca, &c, addr, b"http/1.1")?;
        let h2c = Dialer::new(&ca, &c, addr, b"h2")?;

        // ---- idle connections -------------------------------------------------------------
        let mut tasks = Vec::new();
        for i in 0..40 {
            let mut s = if i < 5 { h2c.connect().await? } else { h1c.connect().await? };
            tasks.push(tokio::spawn(async move {
                let kind = if i < 5 {
                    // HTTP/2: the preface and an empty SETTINGS frame, then silence.
                    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0").await?;
                    "h2"
                } else if i < 15 {
                    // HTTP/1.1: one request answered, then kept alive and idle.
                    s.write_all(&get("/version", "")).await?;
                    let r = read_response(&mut s).await?;
                    ensure!(r.code == 200, "GET /version: {}", r.code);
                    "h1-after-request"
                } else {
                    "h1-silent"
                };
                let (took, got) = until_closed(&mut s, IDLE_TIMEOUT + SLACK).await?;
                // An HTTP/2 server says goodbye with a GOAWAY frame (type 7).
                let goaway = frame_types(&got).contains(&7);
                Ok::<_, anyhow::Error>((kind, took, goaway))
            }));
        }
        let mut worst: std::collections::BTreeMap<&str, Duration> = Default::default();
        for t in tasks {
            let (kind, took, goaway) = t.await??;
            if kind == "h2" {
                ensure!(goaway, "an idle HTTP/2 connection was closed without a GOAWAY");
            }
            let w = worst.entry(kind).or_default();
            *w = (*w).max(took);
        }
        for (kind, limit) in [("h1-silent", IDLE_TIMEOUT), ("h1-after-request", IDLE_TIMEOUT), ("h2", IDLE_TIMEOUT)] {
            let w = worst.get(kind).copied().unwrap_or_default();
            ensure!(w <= limit + SLACK, "{kind}: an idle connection lived {w:?} (limit {limit:?})");
        }
        report.push(format!("40 idle connections closed; slowest: {worst:?}"));

        // ---- headers a byte every quarter second --------------------------------------------
        let mut s = h1c.connect().await?;
        let req = get("/version", "User-Agent: slowloris\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        let t0 = Instant::now();
        let mut sent = 0;
        for byte in &req {
            if s.write_all(&[*byte]).await.is_err() || s.flush().await.is_err() {
                break;
            }
            sent += 1;
            tokio::time::sleep(Duration::from_millis(250)).await;
            if t0.elapsed() > HEADER_READ_TIMEOUT + SLACK {
                break;
            }
        }
        let (_, got) = until_closed(&mut s, SLACK).await.context("the slow client was not cut off")?;
        let cut = t0.elapsed();
        ensure!(sent < req.len(), "the whole slow request ({} bytes) was accepted", req.len());
        ensure!(!got.starts_with(b"HTTP/1.1 200"), "the slow request was served");
        ensure!(cut <= HEADER_READ_TIMEOUT + SLACK, "the slow client was cut off only after {cut:?}");
        report.push(format!("slow headers: cut off after {cut:?} and {sent} of {} bytes", req.len()));

        // ---- oversized header block ------------------------------------------------------
        let mut s = h1c.connect().await?;
        s.write_all(&get("/version", &format!("X-Big: {}\r\n", "a".repeat(MAX_HEADER_BYTES + 1000)))).await?;
        let r = read_response(&mut s).await?;
        let st = r.json();
        ensure!(
            r.code == 431 && st["kind"] == "Status" && st["code"] == 431 && st["reason"] == "RequestHeaderFieldsTooLarge",
            "oversized headers: {} {}", r.code, String::from_utf8_lossy(&r.body)
        );
        let mut s = h1c.connect().await?;
        s.write_all(&get("/version", &format!("X-Big: {}\r\n", "a".repeat(MAX_HEADER_BYTES / 2)))).await?;
        ensure!(read_response(&mut s).await?.code == 200, "a header block under the limit was refused");
        report.push("oversized header block: 431 Status; half the limit: 200".to_string());

        // ---- a tenant opening connections in a loop ---------------------------------------
        let h1a = Dialer::new(&ca, &a, addr, b"http/1.1")?;
        let mut kept = Vec::new();
        let (mut ok, mut refused) = (0, 0);
        for _ in 0..(A_MAX_CONNECTIONS + 12) {
            let mut s = h1a.connect().await?;
            s.write_all(&get("/api/v1/namespaces/default/configmaps", "")).await?;
            let r = read_response(&mut s).await?;
            match r.code {
                200 => ok += 1,
                429 => {
                    refused += 1;
                    let st = r.json();
                    ensure!(
                        r.header("retry-after").is_some()
                            && st["reason"] == "TooManyRequests"
                            && st["message"].as_str().is_some_and(|m| m.contains("maxConnections")),
                        "a refused connection's answer: {:?} {}", r.headers, String::from_utf8_lossy(&r.body)
                    );
                    // ... and the refused connection is closed after it.
                    until_closed(&mut s, SLACK).await.context("a refused connection stayed open")?;
                    continue;
                }
                other => bail!("connection loop: unexpected {other}"),
            }
            kept.push(s);
        }
        ensure!(ok == A_MAX_CONNECTIONS && refused == 12, "connection loop: {ok} served, {refused} refused");
        drop(kept.pop());
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut s = h1a.connect().await?;
        s.write_all(&get("/api/v1/namespaces/default/configmaps", "")).await?;
        ensure!(read_response(&mut s).await?.code == 200, "a closed connection's slot did not come back");
        drop(s);
        drop(kept);
        report.push(format!("connection loop: {ok} of {} served, {refused} refused with 429 maxConnections; slot reused after a close", A_MAX_CONNECTIONS + 12));
        Ok::<_, anyhow::Error>(())
    })?;
    // The server notices the closed connections.
    std::thread::sleep(Duration::from_millis(500));

    // ---- request limits of tenant A, tenant B as the control ----------------------------------
    let cm = |i: usize| {
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm{i}"}}}}"#)
    };
    let post = |cred: &Cred, i: usize| {
        curl(
            &ca,
            cred,
            "POST",
            &format!("{url}/api/v1/namespaces/default/configmaps"),
            Some(&cm(i)),
        )
    };
    let mut a_codes = Vec::new();
    let mut tarpits = Vec::new();
    for i in 0..8 {
        let sent = Instant::now();
        let (code, head, body) = post(&a, i)?;
        if code == 429 {
            let st = status_of(&body);
            ensure!(
                head.contains("retry-after:")
                    && st["reason"] == "TooManyRequests"
                    && st["message"]
                        .as_str()
                        .is_some_and(|m| m.contains("writeQPS")),
                "A's write refusal: {head} {body}"
            );
            // The tarpit: a rate refusal is answered only after min(Retry-After, 1 s) — a
            // lower bound the server enforces, whatever the machine's load.
            let waited = sent.elapsed();
            ensure!(
                waited >= Duration::from_millis(950),
                "A's writeQPS refusal answered after {waited:?}, before the 1 s tarpit"
            );
            tarpits.push(waited);
        }
        a_codes.push(code);
    }
    ensure!(
        a_codes.contains(&429) && a_codes.contains(&201),
        "A's rapid writes: {a_codes:?}"
    );
    let b_codes: Vec<u16> = (0..8)
        .map(|i| post(&b, i).map(|r| r.0))
        .collect::<Result<_>>()?;
    ensure!(
        b_codes.iter().all(|c| *c == 201),
        "B's rapid writes (default limits): {b_codes:?}"
    );
    // Fill A up to 8 ConfigMaps at its own pace (2 per second).
    for i in 0..8 {
        for _ in 0..20 {
            match post(&a, i)?.0 {
                201 | 409 => break,
                _ => std::thread::sleep(Duration::from_millis(300)),
            }
        }
    }
    report.push(format!(
        "A: 8 rapid writes at writeQPS=2 -> {a_codes:?} (refusals answered after {tarpits:?}: the tarpit); B: {b_codes:?}"
    ));

    // maxList: A's LIST with limit=100 is lowered to 5, with a continue token; straight at the
    // apiserver the same LIST returns everything.
    let (code, _, body) = curl(
        &ca,
        &a,
        "GET",
        &format!("{url}/api/v1/namespaces/default/configmaps?limit=100"),
        None,
    )?;
    let v = status_of(&body);
    let n = v["items"].as_array().map_or(0, Vec::len);
    ensure!(
        code == 200
            && n == 5
            && v["metadata"]["continue"]
                .as_str()
                .is_some_and(|c| !c.is_empty()),
        "A's LIST limit=100: {code}, {n} items, {}",
        v["metadata"]
    );
    let direct = cp.kubectl_admin()?.run(&[
        "get",
        "--raw",
        "/api/v1/namespaces/noisya-default/configmaps?limit=100",
    ])?;
    let dn = status_of(&direct)["items"].as_array().map_or(0, Vec::len);
    ensure!(
        dn >= 8,
        "the same LIST straight at the apiserver: {dn} items"
    );
    let (_, _, body) = curl(
        &ca,
        &b,
        "GET",
        &format!("{url}/api/v1/namespaces/default/configmaps?limit=100"),
        None,
    )?;
    let bn = status_of(&body)["items"].as_array().map_or(0, Vec::len);
    ensure!(bn >= 8, "B's LIST limit=100: {bn} items");
    report.push(format!(
        "maxList=5: A's limit=100 LIST gave {n} items + continue (apiserver direct: {dn}); B: {bn}"
    ));

    // maxWatches: two watches open, the third refused; one closes, a new one is admitted.
    let watch = |cred: &Cred, secs: &str| {
        let mut c = Command::new("curl");
        c.args([
            "-sS",
            "-N",
            "--max-time",
            secs,
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .arg("--cacert")
        .arg(&ca)
        .arg("--cert")
        .arg(&cred.cert)
        .arg("--key")
        .arg(&cred.key)
        .arg(format!(
            "{url}/api/v1/namespaces/default/configmaps?watch=true"
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        c
    };
    let mut w1 = watch(&a, "30").spawn()?;
    let mut w2 = watch(&a, "30").spawn()?;
    std::thread::sleep(Duration::from_secs(2));
    let (code, head, body) = curl(
        &ca,
        &a,
        "GET",
        &format!("{url}/api/v1/namespaces/default/configmaps?watch=true"),
        None,
    )?;
    let st = status_of(&body);
    ensure!(
        code == 429
            && head.contains("retry-after:")
            && st["message"]
                .as_str()
                .is_some_and(|m| m.contains("maxWatches")),
        "A's third watch: {code} {body}"
    );
    let bw = watch(&b, "2").output()?;
    ensure!(
        String::from_utf8_lossy(&bw.stdout) == "200",
        "B's watch: {:?}",
        bw.stdout
    );
    let _ = w1.kill();
    let _ = w1.wait();
    std::thread::sleep(Duration::from_secs(1));
    let aw = watch(&a, "2").output()?;
    ensure!(
        String::from_utf8_lossy(&aw.stdout) == "200",
        "A's watch after one closed: {:?}",
        aw.stdout
    );
    let _ = w2.kill();
    let _ = w2.wait();
    report.push(
        "maxWatches=2: third watch 429 with Retry-After; slot back after a close; B's watch 200"
            .into(),
    );

    // ---- API Priority and Fairness: one flow per tenant for A (apfFlow=tenant) ------------
    // The leader's resync writes A's FlowSchema after its record changed (about a second).
    let admin = cp.kubectl_admin()?;
    let fs = wait_for_flow_schema(&admin, "noisya", true)?;
    ensure!(
        fs["spec"]["distinguisherMethod"].is_null()
            && fs["spec"]["priorityLevelConfiguration"]["name"] == "paddock-tenants"
            && fs["spec"]["rules"][0]["subjects"][0]["group"]["name"] == "paddock:tenant:noisya",
        "tenant FlowSchema: {}",
        fs["spec"]
    );
    let uid = fs["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let bob = extract_cred(&p.user("noisya", "bob", &[])?, &work, "bob")?;
    for (who, cred) in [("admin", &a), ("bob", &bob)] {
        let head = configmap_get_head(&ca, cred, &url)?;
        ensure!(
            head.contains(&format!("x-kubernetes-pf-flowschema-uid: {uid}")),
            "{who} of tenant A was not in A's FlowSchema {uid}: {head}"
        );
    }
    let (_, _, body) = curl(
        &ca,
        &b,
        "GET",
        &format!("{url}/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"),
        None,
    )?;
    let names: Vec<String> = status_of(&body)["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    ensure!(
        names.iter().any(|n| n == "paddock-tenants"),
        "B's FlowSchema list lacks the shared ones: {names:?}"
    );
    ensure!(
        !names.iter().any(|n| n.starts_with("paddock-tenants-")),
        "B sees per-tenant FlowSchemas: {names:?}"
    );
    // A Table without objects (`includeObject=None`) gives the down rules no labels to go by:
    // the upstream list itself must leave the per-tenant FlowSchemas out.
    let (code, _, table) = curl_accept(
        &ca,
        &b,
        "GET",
        &format!("{url}/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas?includeObject=None"),
        None,
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    )?;
    ensure!(
        code == 200 && table.contains("\"paddock-tenants\""),
        "B's FlowSchema Table lacks the shared ones ({code}): {table}"
    );
    ensure!(
        !table.contains("paddock-tenants-"),
        "B's FlowSchema Table without objects shows per-tenant FlowSchemas: {table}"
    );
    report
        .push("APF: both users of A in A's FlowSchema (no distinguisher); B cannot see it".into());

    // ---- ...and the shared FlowSchema, by user, for tenants that do not ask ------------------
    // B has no FlowSchema of its own (one per tenant would be matched against every other
    // user's request upstream: docs/fairshare.md); its requests go by the shared one.
    ensure!(
        admin
            .run(&[
                "get",
                "flowschema",
                "paddock-tenants-quietb-flow",
                "--ignore-not-found",
                "-o",
                "name"
            ])?
            .trim()
            .is_empty(),
        "tenant B (no apfFlow) has a FlowSchema of its own"
    );
    let shared: Value = serde_json::from_str(&admin.run(&[
        "get",
        "flowschema",
        "paddock-tenants",
        "-o",
        "json",
    ])?)?;
    ensure!(
        shared["spec"]["distinguisherMethod"]["type"] == "ByUser",
        "the shared FlowSchema: {}",
        shared["spec"]
    );
    let shared_uid = shared["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let head = configmap_get_head(&ca, &b, &url)?;
    ensure!(
        head.contains(&format!("x-kubernetes-pf-flowschema-uid: {shared_uid}")),
        "tenant B was not in the shared FlowSchema {shared_uid}: {head}"
    );
    // A back to the default: its FlowSchema goes, its requests join the shared one.
    p.cli(&["tenant", "set-limits", "noisya", "apfFlow-"])?;
    wait_for_flow_schema(&admin, "noisya", false)?;
    let head = configmap_get_head(&ca, &a, &url)?;
    ensure!(
        head.contains(&format!("x-kubernetes-pf-flowschema-uid: {shared_uid}")),
        "tenant A after apfFlow- was not in the shared FlowSchema: {head}"
    );
    report.push(
        "APF: B (no apfFlow) has no FlowSchema of its own and goes by the shared one (by user); A after apfFlow- too".into(),
    );

    stop.store(true, Ordering::Release);
    let seen = prober
        .join()
        .map_err(|_| anyhow::anyhow!("prober panicked"))?;
    let bad: Vec<_> = seen.iter().filter(|(c, _)| *c != 200).collect();
    let worst = seen.iter().map(|(_, d)| *d).max().unwrap_or_default();
    ensure!(
        seen.len() >= 20 && bad.is_empty(),
        "tenant B's prober: {} requests, failures {bad:?}",
        seen.len()
    );
    report.push(format!(
        "tenant B throughout: {} requests, all 200, slowest {worst:?}",
        seen.len()
    ));
    eprintln!("fair share e2e:\n  {}", report.join("\n  "));
    Ok(())
}

/// Tenant `tid`'s own FlowSchema once it is there (`present`), or once it is gone; the
/// leader's resync acts about a second after the tenant record changes.
fn wait_for_flow_schema(admin: &Kubectl, tid: &str, present: bool) -> Result<Value> {
    let name = format!("paddock-tenants-{tid}-flow");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let out = admin.run(&[
            "get",
            "flowschema",
            &name,
            "--ignore-not-found",
            "-o",
            "json",
        ])?;
        if out.trim().is_empty() != present {
            return Ok(if present {
                serde_json::from_str(&out)?
            } else {
                Value::Null
            });
        }
        ensure!(
            Instant::now() < deadline,
            "FlowSchema {name} still {} after 15 s",
            if present { "absent" } else { "present" }
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The response head of a small GET by `cred` (its `X-Kubernetes-PF-FlowSchema-UID` names the
/// FlowSchema APF matched it to).
fn configmap_get_head(ca: &Path, cred: &Cred, url: &str) -> Result<String> {
    let (_, head, _) = curl(
        ca,
        cred,
        "GET",
        &format!("{url}/api/v1/namespaces/default/configmaps?limit=1"),
        None,
    )?;
    Ok(head)
}
