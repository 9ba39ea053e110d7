//! Helpers of the operators test (tests/e2e/tests/operators.rs, `make test-operators`,
//! docs/operators.md): the cached build of tests/testbed/operators.sh, the charts' installs
//! with helm as a tenant, the first time each Deployment is Available, a tenant webhook called
//! through the test bed's egress guard, requests per component from paddock's access log, and
//! the list of checks with their outcome.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::process::{self, describe, indent, tail_lines};
use crate::real_node::egress_connect;
use crate::testbed::testbed_scripts;
use crate::{ControlPlane, Kubectl};

/// What tests/testbed/operators.sh built (or found cached): images, charts, values.
pub struct Operators {
    pub dir: PathBuf,
}

impl Operators {
    /// Runs operators.sh (a cold build is about 10 minutes; cached afterwards) and finds its
    /// cache entry.
    pub fn build() -> Result<Operators> {
        let script = testbed_scripts().join("operators.sh");
        let out = process::run(
            Command::new("bash").arg(&script),
            None,
            Duration::from_secs(90 * 60),
        )?;
        if !out.success() {
            bail!(
                "{} failed:\n{}",
                script.display(),
                tail_lines(&out.stderr, 40)
            );
        }
        let out = process::run(
            Command::new("bash").arg(&script).arg("--print-dir"),
            None,
            Duration::from_secs(60),
        )?;
        let dir = PathBuf::from(out.stdout.trim());
        if !out.success() || !dir.join(".complete").is_file() {
            bail!("operators.sh --print-dir: {:?} {}", out.stdout, out.stderr);
        }
        Ok(Operators { dir })
    }

    /// The OCI archives of the six images.
    pub fn images(&self) -> Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.dir.join("images"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "tar"))
            .collect();
        v.sort();
        if v.len() != 6 {
            bail!(
                "expected six image archives in {}: {v:?}",
                self.dir.display()
            );
        }
        Ok(v)
    }

    pub fn chart(&self, name: &str) -> PathBuf {
        self.dir.join("charts").join(name)
    }

    pub fn values(&self, name: &str) -> PathBuf {
        self.dir.join("values").join(format!("{name}.yaml"))
    }
}

/// One `helm install` as a tenant: when it started, how long it took, how it ended.
pub struct Install {
    pub started: Instant,
    pub took: Duration,
    pub result: Result<()>,
}

/// `helm install <release> <chart> -n <ns> --create-namespace <args>` with `kubeconfig`,
/// bounded by `limit` (helm's own `--timeout` should be shorter).
pub fn helm_install(
    helm: &Path,
    kubeconfig: &Path,
    release: &str,
    chart: &Path,
    args: &[String],
    limit: Duration,
) -> Install {
    let mut cmd = Command::new(helm);
    cmd.args(["install", release])
        .arg(chart)
        .args(["-n", release, "--create-namespace", "--kubeconfig"])
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG");
    let started = Instant::now();
    let result = match process::run(&mut cmd, None, limit) {
        Ok(out) if out.success() => Ok(()),
        Ok(out) => Err(anyhow::anyhow!(
            "{} failed (exit {:?}{}):\n{}",
            describe(&cmd),
            out.code,
            if out.timed_out {
                ", killed by the test"
            } else {
                ""
            },
            indent(&tail_lines(&out.stderr, 20), "  | ")
        )),
        Err(e) => Err(e),
    };
    Install {
        started,
        took: started.elapsed(),
        result,
    }
}

/// Polls every Deployment upstream (as the cluster admin, so that nothing is added to
/// paddock's counts) and keeps the first time each was seen Available, until dropped.
pub struct Availability {
    stop: Arc<AtomicBool>,
    seen: Arc<std::sync::Mutex<BTreeMap<String, Instant>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Availability {
    pub fn watch(up: Kubectl) -> Availability {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        let (s, m) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Ok(out) = up.run(&["get", "deployments", "-A", "-o", "json"]) {
                    let now = Instant::now();
                    let list: Value = serde_json::from_str(&out).unwrap_or_default();
                    for d in list["items"].as_array().into_iter().flatten() {
                        let available = d["status"]["conditions"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|c| c["type"] == "Available" && c["status"] == "True");
                        let key = format!(
                            "{}/{}",
                            d["metadata"]["namespace"].as_str().unwrap_or_default(),
                            d["metadata"]["name"].as_str().unwrap_or_default()
                        );
                        if available && let Ok(mut m) = m.lock() {
                            m.entry(key).or_insert(now);
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        });
        Availability {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    /// When upstream Deployment `ns/name` was first seen Available.
    pub fn first(&self, ns: &str, name: &str) -> Option<Instant> {
        self.seen.lock().ok()?.get(&format!("{ns}/{name}")).copied()
    }
}

impl Availability {
    /// Stops polling; what was seen stays.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Availability {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An HTTPS POST of `body` to a tenant's webhook Service as the apiserver (or paddock's
/// tenant-webhook relay) makes it: through the test bed's egress guard to `target` (the
/// Service's `<cluster IP>:<port>`), TLS verified with `ca_pem` for `server_name`
/// (`<service>.<namespace>.svc`). Returns the answer's status code and body.
pub fn post_via_egress(
    cp: &ControlPlane,
    target: &str,
    ca_pem: &[u8],
    server_name: &str,
    path: &str,
    body: &str,
) -> Result<(u16, String)> {
    let stream = egress_connect(cp, target, Duration::from_secs(15))?;
    let config = paddock_pki::upstream_client_config(ca_pem, None, None, vec![b"http/1.1".into()])
        .context("TLS client config from the webhook's CA")?;
    let name = rustls_pki_types::ServerName::try_from(server_name.to_owned())
        .with_context(|| format!("server name {server_name}"))?;
    let conn = rustls::ClientConnection::new(Arc::new(config), name)?;
    let mut tls = rustls::StreamOwned::new(conn, stream);
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {server_name}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(request.as_bytes())
        .with_context(|| format!("TLS to {target} as {server_name}"))?;
    // The head, then Content-Length bytes (a Go server may close without close_notify).
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = match tls.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if !buf.is_empty() && e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(e).with_context(|| format!("reading {target}'s answer")),
        };
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some((head, rest)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(usize::MAX);
            if rest.len() >= length || n == 0 {
                let status = head
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                return Ok((status, rest.to_owned()));
            }
        } else if n == 0 {
            bail!("{target} closed before answering: {text:?}");
        }
    }
}

/// Requests in paddock's access log (JSON lines, target `paddock::access`) per (tenant, user):
/// (all, not 2xx), counted from byte `from` of the log to byte `to` (the end when `None`).
pub fn access_counts(
    log: &Path,
    from: u64,
    to: Option<u64>,
) -> Result<BTreeMap<(String, String), (u64, u64)>> {
    let data = std::fs::read(log).with_context(|| log.display().to_string())?;
    let end = to.map_or(data.len(), |t| (t as usize).min(data.len()));
    let start = (from as usize).min(end);
    let mut counts: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for line in String::from_utf8_lossy(&data[start..end]).lines() {
        if !line.contains("\"paddock::access\"") {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let key = (
            v["tenant"].as_str().unwrap_or_default().to_owned(),
            v["user"].as_str().unwrap_or_default().to_owned(),
        );
        let e = counts.entry(key).or_default();
        e.0 += 1;
        if !(200..300).contains(&v["status"].as_u64().unwrap_or(0)) {
            e.1 += 1;
        }
    }
    Ok(counts)
}

/// The last `n` distinct refusals (not 2xx, 404 or 409) paddock answered the workloads of `tenant`
/// (every user but the tenant admin), with the answer's message where the access log has it:
/// what an operator stumbled on.
pub fn refusals(log: &Path, tenant: &str, n: usize) -> String {
    let data = std::fs::read_to_string(log).unwrap_or_default();
    let mut seen: Vec<String> = Vec::new();
    for line in data.lines().filter(|l| l.contains("\"paddock::access\"")) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let status = v["status"].as_u64().unwrap_or(0);
        if v["tenant"] != tenant || v["user"] == "admin" || (200..300).contains(&status) {
            continue;
        }
        // not found, write conflicts and client-go's WatchList try (docs/operators.md finding
        // 4): the usual retries of a controller, not what stops it
        let answer = v["answer"].as_str().unwrap_or_default();
        if status == 404 || status == 409 || answer.contains("sendInitialEvents") {
            continue;
        }
        let entry = format!(
            "{} {} {} -> {status} {}",
            v["user"].as_str().unwrap_or_default(),
            v["verb"].as_str().unwrap_or_default(),
            v["resource"].as_str().unwrap_or_default(),
            answer
        );
        seen.retain(|e| *e != entry);
        seen.push(entry);
    }
    let start = seen.len().saturating_sub(n);
    seen[start..].join("\n")
}

/// The length of a file now (a mark in paddock's log).
pub fn log_mark(log: &Path) -> u64 {
    std::fs::metadata(log).map(|m| m.len()).unwrap_or(0)
}

/// The component behind an access-log user of these charts.
pub fn component(user: &str) -> String {
    match user {
        "admin" => "tenant admin (helm, the test's kubectl)".into(),
        "system:serviceaccount:cert-manager:cert-manager" => "cert-manager controller".into(),
        "system:serviceaccount:cert-manager:cert-manager-cainjector" => "cainjector".into(),
        "system:serviceaccount:cert-manager:cert-manager-webhook" => "cert-manager webhook".into(),
        "system:serviceaccount:cert-manager:cert-manager-startupapicheck" => {
            "startupapicheck (ctl)".into()
        }
        "system:serviceaccount:external-dns:external-dns" => "external-dns".into(),
        other => other.into(),
    }
}

/// The checks of a run: each passes with a note or fails with its error; all are run and
/// reported, and the test fails at the end if any failed.
#[derive(Default)]
pub struct Checks {
    results: Vec<(String, Result<String, String>)>,
}

impl Checks {
    pub fn run(&mut self, name: &str, f: impl FnOnce() -> Result<String>) {
        let t = Instant::now();
        let r = f().map_err(|e| format!("{e:#}"));
        match &r {
            Ok(note) => eprintln!("PASS {name} ({:.1} s): {note}", t.elapsed().as_secs_f64()),
            Err(e) => eprintln!(
                "FAIL {name} ({:.1} s):\n{}",
                t.elapsed().as_secs_f64(),
                indent(e, "     ")
            ),
        }
        self.results.push((name.to_owned(), r));
    }

    /// The summary; an error listing the failed checks if any.
    pub fn finish(self) -> Result<()> {
        let failed: Vec<&(String, Result<String, String>)> =
            self.results.iter().filter(|(_, r)| r.is_err()).collect();
        eprintln!(
            "\n== checks: {} passed, {} failed ==",
            self.results.len() - failed.len(),
            failed.len()
        );
        for (name, r) in &self.results {
            match r {
                Ok(_) => eprintln!("  pass  {name}"),
                Err(e) => eprintln!("  FAIL  {name}: {}", e.lines().next().unwrap_or_default()),
            }
        }
        if failed.is_empty() {
            return Ok(());
        }
        let mut msg = format!("{} of {} checks failed:", failed.len(), self.results.len());
        for (name, r) in failed {
            if let Err(e) = r {
                msg.push_str(&format!("\n- {name}:\n{}", indent(e, "    ")));
            }
        }
        bail!(msg)
    }
}

/// Seconds with one decimal.
pub fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

pub fn admission_review(group: &str, ns: &str) -> Value {
    let kind = json!({"group": group, "version": "v1", "kind": "Certificate"});
    let resource = json!({"group": group, "version": "v1", "resource": "certificates"});
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0b3d5e4c-1c7f-4a5e-9d8e-000000000001",
            "kind": kind, "resource": resource, "requestKind": kind, "requestResource": resource,
            "name": "bad", "namespace": ns, "operation": "CREATE",
            "userInfo": {"username": "admin"},
            "object": {
                "apiVersion": format!("{group}/v1"), "kind": "Certificate",
                "metadata": {"name": "bad", "namespace": ns},
                "spec": {"secretName": "bad-tls", "issuerRef": {"name": "selfsigned", "kind": "Issuer"}},
            },
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    })
}

/// The words after `CREATE: ` of external-dns's in-memory provider (`log.Infof("CREATE: %v",
/// endpoint)`: `<name> <ttl> IN <type> <set id> <targets> <provider specific>`) of records of
/// type `kind` for shop.example.test (TXT: its registry's `a-` prefixed name too).
pub fn created<'a>(logs: &'a str, kind: &str) -> Vec<Vec<&'a str>> {
    logs.lines()
        .filter_map(|l| l.split_once("CREATE: "))
        .map(|(_, r)| r.split_whitespace().collect::<Vec<_>>())
        .filter(|w| {
            w.len() > 4 && w[0].ends_with("shop.example.test") && w[2] == "IN" && w[3] == kind
        })
        .collect()
}

pub fn subject_alt_names(pem: &[u8]) -> Result<BTreeSet<String>> {
    let out = process::run(
        Command::new("openssl").args(["x509", "-noout", "-ext", "subjectAltName"]),
        Some(&String::from_utf8_lossy(pem)),
        Duration::from_secs(10),
    )?;
    ensure!(out.success(), "openssl x509: {}", out.stderr);
    Ok(out
        .stdout
        .lines()
        .skip(1)
        .flat_map(|l| l.split(','))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(tenant: &str, user: &str, status: u16, answer: &str) -> String {
        format!(
            r#"{{"timestamp":"t","level":"INFO","message":"request","target":"paddock::access","tenant":"{tenant}","user":"{user}","verb":"update","resource":"/r","status":{status},"latency_ms":1.0,"answer":"{answer}"}}"#
        )
    }

    #[test]
    fn counts_and_refusals_from_the_access_log() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let log = dir.path().join("paddock.log");
        let sa = "system:serviceaccount:cert-manager:cert-manager";
        let lines = [
            line("a", "admin", 200, ""),
            line("a", sa, 406, "denied"),
            line("a", sa, 404, "not found"),
            line("a", sa, 409, "conflict"),
            line("a", sa, 422, "sendInitialEvents is forbidden"),
            line("a", sa, 406, "denied"),
            r#"{"level":"INFO","message":"something else","target":"paddock::serve"}"#.into(),
            line("b", sa, 403, "other tenant"),
        ];
        std::fs::write(&log, lines.join("\n"))?;
        let c = access_counts(&log, 0, None)?;
        assert_eq!(c[&("a".into(), "admin".into())], (1, 0));
        assert_eq!(c[&("a".into(), sa.into())], (5, 5));
        assert_eq!(c[&("b".into(), sa.into())], (1, 1));
        let r = refusals(&log, "a", 5);
        assert_eq!(r, format!("{sa} update /r -> 406 denied"));
        assert_eq!(component(sa), "cert-manager controller");
        Ok(())
    }

    #[test]
    fn external_dns_creates() {
        let logs = r#"time="x" level=info msg="CREATE: shop.example.test 0 IN A  10.96.5.179 []"
time="x" level=info msg="CREATE: a-shop.example.test 0 IN TXT  \"heritage=external-dns,external-dns/owner=t\" []"
time="x" level=debug msg="Endpoints generated from service: web/shop: [shop.example.test 0 IN A  10.96.5.179 []]""#;
        let a = created(logs, "A");
        assert_eq!(a.len(), 1);
        assert!(a[0].contains(&"10.96.5.179"));
        let txt = created(logs, "TXT");
        assert!(txt[0].iter().any(|w| w.contains("external-dns/owner=t")));
    }
}
