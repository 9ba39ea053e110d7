//! The tenant audit trail against the real control plane: two tenants
//! make a known set of requests through paddock (running with a kube-apiserver audit Policy,
//! a log file and a webhook); the log is read back with kube-apiserver's own
//! `audit.k8s.io/v1` Event type (k8s.io/apiserver, Go, strict decoding: tests/e2e/auditcheck)
//! and checked: one Event per tenant request, names as the tenant sees them, no upstream name,
//! no other tenant's data, no secret value; the webhook got the same events.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail, ensure};
use paddock_e2e::cred::{Cred, b64, extract_cred};
use paddock_e2e::process;
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};
use serde_json::Value;

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: RequestResponse
  resources: [{group: "", resources: ["secrets", "configmaps"]}]
- level: Metadata
"#;
const SECRET_VALUE: &str = "hunter2-very-secret";

fn curl(ca: &Path, cred: &Cred, method: &str, url: &str, body: Option<&str>) -> Result<u16> {
    let mut c = Command::new("curl");
    c.args([
        "-sS",
        "--max-time",
        "20",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "-X",
        method,
    ])
    .arg("--cacert")
    .arg(ca)
    .arg("--cert")
    .arg(&cred.cert)
    .arg("--key")
    .arg(&cred.key);
    if let Some(b) = body {
        c.args(["-H", "Content-Type: application/json", "--data-binary", b]);
    }
    c.arg(url);
    let out = process::run(&mut c, None, Duration::from_secs(30))?;
    Ok(out.stdout.trim().parse().unwrap_or(0))
}

/// A request with no client certificate, optionally with a bearer token; the status code.
fn curl_anon(ca: &Path, token: Option<&str>, url: &str) -> Result<u16> {
    let mut c = Command::new("curl");
    c.args([
        "-sS",
        "--max-time",
        "20",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
    ])
    .arg("--cacert")
    .arg(ca);
    if let Some(t) = token {
        c.args(["-H", &format!("Authorization: Bearer {t}")]);
    }
    c.arg(url);
    let out = process::run(&mut c, None, Duration::from_secs(30))?;
    Ok(out.stdout.trim().parse().unwrap_or(0))
}

/// Reads audit files back with the strict decoder, waiting (bounded) for `want` events.
fn read_events(checker: &Path, log: &Path, want: usize) -> Result<Vec<Value>> {
    // The writer flushes every 500 ms.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = Command::new(checker).arg(log).output()?;
        ensure!(
            out.status.success() || !log.exists(),
            "auditcheck refused {}: {}",
            log.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let items = v.as_array().cloned().unwrap_or_default();
        if items.len() >= want || Instant::now() > deadline {
            return Ok(items);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// A plain-HTTP webhook receiver on loopback: keeps every POSTed body.
fn start_webhook() -> Result<(String, Arc<Mutex<Vec<Value>>>)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/audit", listener.local_addr()?);
    let got = Arc::new(Mutex::new(Vec::new()));
    let store = got.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(match conn.try_clone() {
                    Ok(c) => c,
                    Err(_) => return,
                });
                let mut w = conn;
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            len = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; len];
                    if r.read_exact(&mut body).is_err() {
                        return;
                    }
                    if let (Ok(v), Ok(mut s)) =
                        (serde_json::from_slice::<Value>(&body), store.lock())
                    {
                        s.push(v);
                    }
                    let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
                }
            });
        }
    });
    Ok((url, got))
}

/// Builds the strict decoder (Go, k8s.io/apiserver's audit types; the Go build cache makes a
/// second build instant).
fn auditcheck(out_dir: &Path) -> Result<PathBuf> {
    let src = workspace_root().join("tests/e2e/auditcheck");
    let bin = out_dir.join("auditcheck");
    let mut c = Command::new("go");
    c.current_dir(&src).args(["build", "-o"]).arg(&bin).arg(".");
    let out = process::run(&mut c, None, Duration::from_secs(600))?;
    ensure!(out.success(), "building auditcheck: {}", out.stderr);
    Ok(bin)
}

#[test]
fn audit_trail_in_the_tenants_view() -> Result<()> {
    let cp = ControlPlane::start()?;
    let work = cp.dir().join("audit");
    std::fs::create_dir_all(&work)?;
    let policy = work.join("policy.yaml");
    std::fs::write(&policy, POLICY)?;
    let log = work.join("audit.log");
    let (hook_url, hook) = start_webhook()?;
    let args: Vec<String> = vec![
        "--audit-policy-file".into(),
        policy.display().to_string(),
        "--audit-log-path".into(),
        log.display().to_string(),
        "--audit-webhook-url".into(),
        hook_url,
    ];
    let p = Paddock::start_with_args(&cp, StoreKind::Embedded, "paddock", &args)?;
    let checker = auditcheck(&work)?;
    let ca = p.dir().join("certs").join("ca.crt");
    let url = p.url().to_string();
    let a = extract_cred(&p.tenant("audita")?, &work, "a")?;
    let b = extract_cred(&p.tenant("auditb")?, &work, "b")?;
    // A user of audita whose certificate is revoked before any request (its refusal below
    // must not reach the tenant log).
    let mallory_kc = work.join("mallory.kubeconfig");
    std::fs::write(&mallory_kc, p.cli(&["user", "issue", "audita", "mallory"])?)?;
    let mallory = extract_cred(&mallory_kc, &work, "mallory")?;
    let certs: Value =
        serde_json::from_str(&p.cli(&["cert", "list", "--tenant", "audita", "-o", "json"])?)?;
    let serial = certs
        .as_array()
        .cloned()
        .unwrap_or_else(|| vec![certs.clone()])
        .iter()
        .find(|c| c["spec"]["user"] == "mallory")
        .and_then(|c| c["metadata"]["name"].as_str().map(str::to_string))
        .ok_or_else(|| anyhow::anyhow!("mallory's certificate not listed: {certs}"))?;
    p.cli(&["cert", "revoke", &serial])?;
    // A service account of the platform (a namespace of no tenant) and its token.
    let admin = cp.kubectl_admin()?;
    admin.run(&["create", "serviceaccount", "audit-probe", "-n", "default"])?;
    let platform_token = admin
        .run(&["create", "token", "audit-probe", "-n", "default"])?
        .trim()
        .to_string();
    let ns = format!("{url}/api/v1/namespaces/default");
    let secret = format!(
        r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"s1"}},"data":{{"password":"{}"}}}}"#,
        b64(SECRET_VALUE.as_bytes())
    );
    let cm = |n: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{n}"}},"data":{{"k":"v"}}}}"#
        )
    };

    // (tenant, verb, resource, name, code) of each request, in order.
    let mut expected: Vec<(&str, &str, &str, &str, u16)> = Vec::new();
    let mut run = |tenant: &'static str,
                   method: &str,
                   path: &str,
                   body: Option<&str>,
                   verb: &'static str,
                   res: &'static str,
                   name: &'static str|
     -> Result<()> {
        let cred = if tenant == "audita" { &a } else { &b };
        let code = curl(&ca, cred, method, &format!("{url}{path}"), body)?;
        expected.push((tenant, verb, res, name, code));
        Ok(())
    };
    let ns_path = ns.trim_start_matches(&url).to_string();
    run(
        "audita",
        "GET",
        &format!("{ns_path}/configmaps"),
        None,
        "list",
        "configmaps",
        "",
    )?;
    run(
        "audita",
        "POST",
        &format!("{ns_path}/configmaps"),
        Some(&cm("cfg1")),
        "create",
        "configmaps",
        "",
    )?;
    run(
        "audita",
        "GET",
        &format!("{ns_path}/configmaps/cfg1"),
        None,
        "get",
        "configmaps",
        "cfg1",
    )?;
    run(
        "audita",
        "POST",
        &format!("{ns_path}/secrets"),
        Some(&secret),
        "create",
        "secrets",
        "",
    )?;
    run(
        "audita",
        "GET",
        &format!("{ns_path}/secrets/s1"),
        None,
        "get",
        "secrets",
        "s1",
    )?;
    run(
        "audita",
        "DELETE",
        &format!("{ns_path}/configmaps/cfg1"),
        None,
        "delete",
        "configmaps",
        "cfg1",
    )?;
    run(
        "audita",
        "GET",
        &format!("{ns_path}/pods/nope"),
        None,
        "get",
        "pods",
        "nope",
    )?;
    run("audita", "GET", "/version", None, "get", "", "")?;
    run(
        "auditb",
        "GET",
        &format!("{ns_path}/configmaps"),
        None,
        "list",
        "configmaps",
        "",
    )?;
    run(
        "auditb",
        "POST",
        &format!("{ns_path}/configmaps"),
        Some(&cm("bcfg")),
        "create",
        "configmaps",
        "",
    )?;
    run("auditb", "GET", "/api", None, "get", "", "")?;
    let codes: Vec<u16> = expected.iter().map(|e| e.4).collect();
    ensure!(
        codes == [200, 201, 200, 201, 200, 200, 404, 200, 200, 201, 200],
        "request codes: {codes:?}"
    );

    // Callers whose tenant is not known: a revoked certificate of a tenant user, no
    // credential, a platform service account's token, a token of nobody. Their refusals go to
    // the platform stream, not to the tenant log checked below.
    let cm_url = format!("{ns}/configmaps");
    // The revoked certificate: revoked seconds ago (gateway.rs shows revocation applies
    // within 1 s).
    let refused: Vec<(u16, &str)> = vec![
        (
            curl(&ca, &mallory, "GET", &cm_url, None)?,
            "client-certificate",
        ),
        (curl_anon(&ca, None, &cm_url)?, "none"),
        (
            curl_anon(&ca, Some(&platform_token), &cm_url)?,
            "bearer-token",
        ),
        (
            curl_anon(&ca, Some("not-a-token"), &cm_url)?,
            "bearer-token",
        ),
    ];
    ensure!(
        refused.iter().all(|(c, _)| *c == 401),
        "refusals of unknown callers: {refused:?}"
    );

    let events = read_events(&checker, &log, expected.len())?;
    let raw = std::fs::read_to_string(&log)?;
    ensure!(
        events.len() == expected.len(),
        "{} events for {} tenant requests:\n{raw}",
        events.len(),
        expected.len()
    );
    for (ev, (tenant, verb, res, name, code)) in events.iter().zip(&expected) {
        let ctx = || format!("event {ev}");
        ensure!(
            ev["annotations"]["paddock.io/tenant"] == *tenant,
            "tenant: {}",
            ctx()
        );
        ensure!(ev["user"]["username"] == "admin", "user: {}", ctx());
        ensure!(ev["verb"] == *verb, "verb {verb}: {}", ctx());
        ensure!(
            ev["responseStatus"]["code"] == *code,
            "code {code}: {}",
            ctx()
        );
        ensure!(
            ev["annotations"]["paddock.io/latency"]
                .as_str()
                .is_some_and(|l| l.ends_with("ms")),
            "latency: {}",
            ctx()
        );
        if res.is_empty() {
            ensure!(
                ev.get("objectRef").is_none(),
                "non-resource request with an objectRef: {}",
                ctx()
            );
        } else {
            let o = &ev["objectRef"];
            ensure!(
                o["resource"] == *res && o["namespace"] == "default",
                "objectRef (tenant view): {}",
                ctx()
            );
            ensure!(
                o["name"].as_str().unwrap_or_default() == *name,
                "name {name}: {}",
                ctx()
            );
        }
        let level = ev["level"].as_str().unwrap_or_default();
        let want = match *res {
            "secrets" => "Metadata", // contents of secrets are never recorded, whatever the policy
            "configmaps" => "RequestResponse",
            _ => "Metadata",
        };
        ensure!(level == want, "level {want}: {}", ctx());
        // Request level and above: the body as the tenant sent it (JSON), never a secret's.
        let verb_s = ev["verb"].as_str().unwrap_or_default();
        if *res == "configmaps" && verb_s == "create" {
            ensure!(
                ev["requestObject"]["kind"] == "ConfigMap"
                    && ev["requestObject"]["data"]["k"] == "v"
                    && ev["requestObject"]["metadata"].get("namespace").is_none(),
                "requestObject of a ConfigMap create: {}",
                ctx()
            );
        }
        if *res == "secrets" {
            ensure!(
                ev.get("requestObject").is_none() && ev.get("responseObject").is_none(),
                "a secret's body: {}",
                ctx()
            );
        }
        // RequestResponse: the answer as the tenant got it (its view).
        let resp = &ev["responseObject"];
        match (*res, verb_s, *code) {
            ("configmaps", "list", 200) => ensure!(
                resp["kind"] == "ConfigMapList" && resp["items"].is_array(),
                "responseObject of a list: {}",
                ctx()
            ),
            ("configmaps", "create" | "get", 200 | 201) => ensure!(
                resp["kind"] == "ConfigMap"
                    && resp["metadata"]["namespace"] == "default"
                    && resp["metadata"]["uid"].is_string()
                    && resp["data"]["k"] == "v",
                "responseObject of a {verb_s}: {}",
                ctx()
            ),
            ("configmaps", "delete", 200) => {
                ensure!(resp.is_object(), "responseObject of a delete: {}", ctx())
            }
            _ => ensure!(
                ev.get("responseObject").is_none(),
                "responseObject below level RequestResponse: {}",
                ctx()
            ),
        }
        // Nothing of the other tenant in this tenant's events.
        let other = if *tenant == "audita" {
            "auditb"
        } else {
            "audita"
        };
        ensure!(
            !ev.to_string().contains(other),
            "another tenant's data: {}",
            ctx()
        );
    }
    // Names only ever in the tenant's view; no secret value anywhere.
    for upstream in ["audita-", "auditb-"] {
        ensure!(
            !raw.contains(upstream),
            "an upstream name ({upstream}...) in the audit log:\n{raw}"
        );
    }
    ensure!(
        !raw.contains(SECRET_VALUE) && !raw.contains(&b64(SECRET_VALUE.as_bytes())),
        "the secret's value is in the audit log"
    );
    // Positive control: upstream, the same objects carry the prefixed names.
    let direct =
        cp.kubectl_admin()?
            .run(&["get", "secret", "s1", "-n", "audita-default", "-o", "name"])?;
    ensure!(direct.trim() == "secret/s1", "upstream secret: {direct}");

    // The webhook got the same events, as EventLists.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ids: Vec<String> = hook
            .lock()
            .map_err(|_| anyhow::anyhow!("webhook store poisoned"))?
            .iter()
            .filter(|l| l["kind"] == "EventList" && l["apiVersion"] == "audit.k8s.io/v1")
            .flat_map(|l| l["items"].as_array().cloned().unwrap_or_default())
            .filter_map(|e| e["auditID"].as_str().map(str::to_string))
            .collect();
        let want: Vec<String> = events
            .iter()
            .filter_map(|e| e["auditID"].as_str().map(str::to_string))
            .collect();
        if ids == want {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "webhook got {} events ({ids:?}), the log {}",
                ids.len(),
                want.len()
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    // The platform stream: one event per refusal of an unknown caller, no tenant, no user,
    // no credential.
    let platform_log = work.join("audit-platform.log");
    let platform = read_events(&checker, &platform_log, refused.len())?;
    let platform_raw = std::fs::read_to_string(&platform_log)?;
    ensure!(
        platform.len() == refused.len(),
        "{} platform events for {} refusals:\n{platform_raw}",
        platform.len(),
        refused.len()
    );
    for (ev, (code, credential)) in platform.iter().zip(&refused) {
        ensure!(
            ev["responseStatus"]["code"] == *code
                && ev["annotations"]["paddock.io/credential"] == *credential
                && ev["annotations"].get("paddock.io/tenant").is_none()
                && ev["user"]["username"]
                    .as_str()
                    .unwrap_or_default()
                    .is_empty()
                && ev["annotations"]["paddock.io/refusal"].is_string()
                && ev["objectRef"]["resource"] == "configmaps"
                && ev["verb"] == "list",
            "platform event of a {credential} refusal: {ev}"
        );
    }
    ensure!(
        platform[0]["annotations"]["paddock.io/client-certificate"]
            .as_str()
            .is_some_and(|s| s.contains("mallory")),
        "the revoked certificate is not named: {}",
        platform[0]
    );
    ensure!(
        !platform_raw.contains(&platform_token) && !platform_raw.contains("not-a-token"),
        "a bearer token in the platform audit stream"
    );
    eprintln!(
        "audit: {} events, one per tenant request, read back with k8s.io/apiserver's audit/v1 Event; webhook identical; {} refusals of unknown callers in the platform stream",
        events.len(),
        platform.len()
    );
    Ok(())
}
