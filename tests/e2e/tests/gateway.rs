//! The gateway's operational checks against the real control plane:
//! - two replicas on one etcd: a tenant created through one is usable through the other within
//!   1 s; a revoked certificate is refused by both within 1 s;
//! - bad input gets a `Status` with the right code and no panic;
//! - etcd stopped for 30 s: existing tenants keep working, tenant creation fails cleanly and
//!   leaves nothing half-made, everything works again after etcd returns.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::cred::{Cred, extract_cred};
use paddock_e2e::paddock::paddock_binary;
use paddock_e2e::process::{self, free_port, tail_file};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};
use serde_json::Value;

/// A second `paddock serve` sharing the first one's certificates and etcd.
struct Replica {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Replica {
    fn start(cp: &ControlPlane, first: &Paddock, name: &str) -> Result<Replica> {
        let bin = paddock_binary()?;
        let port = free_port()?;
        let url = format!("https://127.0.0.1:{port}");
        let log = cp.dir().join("logs").join(format!("{name}.log"));
        let logf = std::fs::File::create(&log)?;
        let mut cmd = Command::new(bin);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("PADDOCK_") {
                cmd.env_remove(k);
            }
        }
        cmd.arg("serve")
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .arg("--certs-dir")
            .arg(first.dir().join("certs"))
            .arg("--upstream-kubeconfig")
            .arg(cp.admin_kubeconfig())
            .args([
                "--public-url",
                &url,
                "--log-format",
                "json",
                "--store",
                "etcd",
            ])
            .args([
                "--etcd-endpoints",
                cp.paddock_etcd_endpoints()?,
                "--etcd-prefix",
                "/paddock-e2e",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::from(logf.try_clone()?))
            .stderr(Stdio::from(logf));
        let child = cmd.spawn().context("starting the second replica")?;
        cp.record_pid(name, child.id())?;
        let r = Replica { child, url, log };
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if curl_status(
                &first.dir().join("certs"),
                None,
                &format!("{}/readyz", r.url),
            )?
            .0 == 200
            {
                return Ok(r);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        bail!("replica {name} not ready; log:\n{}", tail_file(&r.log, 30))
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `curl` with paddock's CA and an optional client certificate; returns (HTTP code, body).
fn curl_status(certs: &Path, cred: Option<&Cred>, url: &str) -> Result<(u16, String)> {
    curl(certs, cred, "GET", url, None, None)
}

fn curl(
    certs: &Path,
    cred: Option<&Cred>,
    method: &str,
    url: &str,
    content_type: Option<&str>,
    body: Option<&Path>,
) -> Result<(u16, String)> {
    let mut c = Command::new("curl");
    c.args([
        "-sS",
        "--max-time",
        "20",
        "-X",
        method,
        "-o",
        "-",
        "-w",
        "\n%{http_code}",
        "--cacert",
    ])
    .arg(certs.join("ca.crt"));
    if let Some(cred) = cred {
        c.arg("--cert").arg(&cred.cert).arg("--key").arg(&cred.key);
    }
    if let Some(ct) = content_type {
        c.args(["-H", &format!("Content-Type: {ct}")]);
    }
    if let Some(b) = body {
        c.arg("--data-binary").arg(format!("@{}", b.display()));
    }
    c.arg(url);
    let out = process::run(&mut c, None, Duration::from_secs(30))?;
    let text = out.stdout.trim_end().to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", text.as_str()));
    Ok((code.trim().parse().unwrap_or(0), body.to_string()))
}

fn kubeconfig_for(src: &Path, url: &str, dst: &Path) -> Result<PathBuf> {
    let text = std::fs::read_to_string(src)?;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("server:") {
            out.push_str(&format!("    server: {url}\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    std::fs::write(dst, out)?;
    Ok(dst.to_path_buf())
}

/// Polls `f` every 50 ms until it returns true; returns the time it took.
fn within(limit: Duration, mut f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f()? {
            return Ok(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("condition not met within {limit:?}")
}

fn is_status(body: &str, code: u16) -> bool {
    serde_json::from_str::<Value>(body)
        .map(|v| v["kind"] == "Status" && v["code"] == code)
        .unwrap_or(false)
}

#[test]
fn gateway_acceptance() -> Result<()> {
    let cp = ControlPlane::start()?;
    let p1 = Paddock::start(&cp, StoreKind::Etcd)?;
    let certs = p1.dir().join("certs");
    let work = cp.dir().join("gateway");
    std::fs::create_dir_all(&work)?;
    let mut report = Vec::new();

    // ---- two replicas on one etcd ----------------------------------------------------------
    let p2 = Replica::start(&cp, &p1, "paddock-replica2")?;
    let t0 = Instant::now();
    let kc1 = p1.tenant("reptwo")?;
    let created_at = t0.elapsed();
    let kc2 = kubeconfig_for(&kc1, &p2.url, &work.join("reptwo-via-2.kubeconfig"))?;
    let k2 = Kubectl::new(&kc2)?
        .cache_dir(work.join("cache2"))
        .timeout(Duration::from_secs(10));
    let usable = within(Duration::from_secs(1), || {
        let (_, out) = k2.run_raw(
            &["get".into(), "ns".into()],
            None,
            &Default::default(),
            None,
        )?;
        Ok(out.success() && out.stdout.contains("kube-system"))
    })
    .context("a tenant created through replica 1 was not usable through replica 2 within 1 s")?;
    report.push(format!(
        "tenant created via replica 1 in {created_at:?}, usable via replica 2 after {usable:?}"
    ));

    // Revocation: a user certificate refused by both replicas within 1 s.
    let user_kc = work.join("alice.kubeconfig");
    std::fs::write(
        &user_kc,
        p1.cli(&["user", "issue", "reptwo", "alice", "--group", "devs"])?,
    )?;
    let alice = extract_cred(&user_kc, &work, "alice")?;
    let serial = {
        let list: Value =
            serde_json::from_str(&p1.cli(&["cert", "list", "--tenant", "reptwo", "-o", "json"])?)?;
        let items = if list.is_array() {
            list.as_array().cloned().unwrap_or_default()
        } else {
            vec![list]
        };
        items
            .iter()
            .find(|c| c["spec"]["user"] == "alice")
            .and_then(|c| c["metadata"]["name"].as_str().map(str::to_string))
            .context("alice's certificate not listed")?
    };
    for url in [p1.url(), p2.url.as_str()] {
        let (code, _) = curl_status(
            &certs,
            Some(&alice),
            &format!("{url}/api/v1/namespaces/default/configmaps"),
        )?;
        ensure!(
            code == 403 || code == 200,
            "alice before revocation via {url}: {code}"
        );
    }
    p1.cli(&["cert", "revoke", &serial])?;
    let t_rev = Instant::now();
    for url in [p1.url().to_string(), p2.url.clone()] {
        within(
            Duration::from_secs(1)
                .saturating_sub(t_rev.elapsed())
                .max(Duration::from_millis(50)),
            || {
                let (code, body) = curl_status(
                    &certs,
                    Some(&alice),
                    &format!("{url}/api/v1/namespaces/default/configmaps"),
                )?;
                Ok(code == 401 && body.contains("revoked"))
            },
        )
        .with_context(|| format!("revoked certificate still accepted by {url} after 1 s"))?;
    }
    report.push(format!(
        "revocation refused by both replicas after {:?}",
        t_rev.elapsed()
    ));

    // ---- bad input ---------------------------------------------------------------------------
    let admin = extract_cred(&kc1, &work, "reptwo-admin")?;
    let base = format!("{}/api/v1/namespaces/default/configmaps", p1.url());
    let bad_json = work.join("bad.json");
    std::fs::write(
        &bad_json,
        "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {",
    )?;
    let big = work.join("big.json");
    let filler = "x".repeat(4 * 1024 * 1024);
    std::fs::write(
        &big,
        format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"x\":\"{filler}\"}}}}"
        ),
    )?;
    let long_ns = work.join("long-ns.json");
    let long_name = "n".repeat(60);
    std::fs::write(
        &long_ns,
        format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"{long_name}\"}}}}"
        ),
    )?;
    let text = work.join("plain.txt");
    std::fs::write(&text, "hello")?;

    let mut cases: Vec<(&str, u16, (u16, String))> = vec![
        (
            "malformed JSON",
            400,
            curl(
                &certs,
                Some(&admin),
                "POST",
                &base,
                Some("application/json"),
                Some(&bad_json),
            )?,
        ),
        (
            "body over the limit",
            413,
            curl(
                &certs,
                Some(&admin),
                "POST",
                &base,
                Some("application/json"),
                Some(&big),
            )?,
        ),
        (
            "wrong content type",
            415,
            curl(
                &certs,
                Some(&admin),
                "POST",
                &base,
                Some("text/plain"),
                Some(&text),
            )?,
        ),
        (
            "unknown resource",
            404,
            curl_status(
                &certs,
                Some(&admin),
                &format!("{}/api/v1/namespaces/default/gizmos", p1.url()),
            )?,
        ),
        (
            "name too long after prefixing",
            422,
            curl(
                &certs,
                Some(&admin),
                "POST",
                &format!("{}/api/v1/namespaces", p1.url()),
                Some("application/json"),
                Some(&long_ns),
            )?,
        ),
        ("no certificate", 401, curl_status(&certs, None, &base)?),
        (
            "revoked certificate",
            401,
            curl_status(&certs, Some(&alice), &base)?,
        ),
    ];

    // A certificate of an unknown tenant, signed by paddock's own CA (OU = a tenant that
    // does not exist): made with openssl from the CA key, as an attacker holding an old
    // certificate of a deleted tenant would present it.
    let ghost_key = work.join("ghost.key");
    let ghost_csr = work.join("ghost.csr");
    let ghost_crt = work.join("ghost.crt");
    run_ok(
        Command::new("openssl")
            .args([
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
            ])
            .arg(&ghost_key)
            .arg("-out")
            .arg(&ghost_csr)
            .args(["-subj", "/O=devs/OU=ghostt/CN=eve"]),
    )?;
    let ext = work.join("client.ext");
    std::fs::write(&ext, "extendedKeyUsage=clientAuth\n")?;
    run_ok(
        Command::new("openssl")
            .args(["x509", "-req", "-days", "1", "-in"])
            .arg(&ghost_csr)
            .arg("-CA")
            .arg(certs.join("ca.crt"))
            .arg("-CAkey")
            .arg(certs.join("ca.key"))
            .arg("-CAcreateserial")
            .arg("-extfile")
            .arg(&ext)
            .arg("-out")
            .arg(&ghost_crt),
    )?;
    let ghost = Cred {
        cert: ghost_crt,
        key: ghost_key,
    };
    cases.push((
        "certificate of an unknown tenant",
        401,
        curl_status(&certs, Some(&ghost), &base)?,
    ));

    // An expired certificate: issued for 1 s.
    let short_kc = work.join("short.kubeconfig");
    std::fs::write(
        &short_kc,
        p1.cli(&["user", "issue", "reptwo", "shorty", "--validity", "1s"])?,
    )?;
    let shorty = extract_cred(&short_kc, &work, "shorty")?;
    std::thread::sleep(Duration::from_millis(2100));
    cases.push((
        "expired certificate",
        401,
        curl_status(&certs, Some(&shorty), &base)?,
    ));

    let mut failed = Vec::new();
    for (name, want, (got, body)) in &cases {
        let ok = got == want && is_status(body, *want);
        report.push(format!(
            "bad input: {name}: want {want}, got {got} {}",
            if ok { "ok" } else { "FAIL" }
        ));
        if !ok {
            failed.push(format!(
                "{name}: want {want} Status, got {got}: {}",
                body.chars().take(300).collect::<String>()
            ));
        }
    }
    // A certificate of another CA never completes the TLS handshake.
    let foreign = cp.dir().join("pki");
    let foreign_cred = Cred {
        cert: foreign.join("admin.crt"),
        key: foreign.join("admin.key"),
    };
    let (code, _) = curl_status(&certs, Some(&foreign_cred), &base)?;
    report.push(format!(
        "bad input: certificate of another CA: handshake refused (curl code {code})"
    ));
    if code != 0 {
        failed.push(format!("a certificate of another CA got HTTP {code}"));
    }
    let log = std::fs::read_to_string(p1.log_path()).unwrap_or_default();
    if log.contains("panicked") {
        failed.push("paddock panicked (see its log)".into());
    }

    // ---- etcd stopped for 30 s ---------------------------------------------------------------
    let etcd_pid: u32 = cp.var("PID_PADDOCK_ETCD")?.parse()?;
    let cmdline = std::fs::read(format!("/proc/{etcd_pid}/cmdline"))
        .context("reading paddock etcd's command line")?;
    let argv: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    process::signal(etcd_pid, "KILL");
    std::thread::sleep(Duration::from_millis(300));
    let k1 = p1
        .kubectl_tenant("reptwo")?
        .timeout(Duration::from_secs(10));
    let outage = Instant::now();
    let mut ok_requests = 0;
    let mut create_error = String::new();
    while outage.elapsed() < Duration::from_secs(30) {
        let (line, out) = k1.run_raw(
            &[
                "get".into(),
                "configmaps".into(),
                "-n".into(),
                "default".into(),
            ],
            None,
            &Default::default(),
            None,
        )?;
        if !out.success() {
            failed.push(format!(
                "during the etcd outage an existing tenant's request failed: {line}: {}",
                out.stderr
            ));
            break;
        }
        ok_requests += 1;
        if create_error.is_empty() {
            let (_, out) = p1.cli_raw(
                &["tenant".into(), "create".into(), "halfmd".into()],
                Duration::from_secs(20),
            )?;
            if out.success() {
                failed.push("tenant creation succeeded while etcd was down".into());
            }
            create_error = out.stderr.trim().to_string();
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let upstream = cp.kubectl_admin()?;
    let leftovers = upstream.run(&["get", "ns", "-o", "name"])?;
    if leftovers.contains("halfmd-") {
        failed.push(format!(
            "a failed tenant creation left namespaces behind: {leftovers}"
        ));
    }
    report.push(format!(
        "etcd down 30 s: {ok_requests} tenant requests succeeded; tenant create refused with: {create_error}"
    ));
    if !create_error.contains("etcd")
        && !create_error.contains("unavailable")
        && !create_error.contains("Unavailable")
    {
        failed.push(format!(
            "tenant creation during the outage did not say why: {create_error:?}"
        ));
    }
    // etcd comes back on the same data dir.
    let etcd_log = std::fs::File::create(cp.dir().join("logs").join("paddock-etcd-restarted.log"))?;
    let mut restarted = Command::new(&argv[0]);
    restarted
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::from(etcd_log.try_clone()?))
        .stderr(Stdio::from(etcd_log));
    let mut etcd = restarted.spawn().context("restarting paddock's etcd")?;
    cp.record_pid("paddock-etcd-restarted", etcd.id())?;
    let back = within(Duration::from_secs(30), || {
        let (_, out) = p1.cli_raw(
            &["tenant".into(), "create".into(), "afterr".into()],
            Duration::from_secs(10),
        )?;
        Ok(out.success())
    })
    .context("tenant creation did not work again after etcd returned")?;
    report.push(format!(
        "after etcd returned, tenant creation worked again after {back:?}"
    ));
    let ka = p1.kubectl_tenant("afterr")?;
    ka.run(&["get", "ns"])
        .context("the tenant created after the outage is not usable")?;
    let _ = etcd.kill();
    let _ = etcd.wait();

    println!("\n== gateway acceptance ==");
    for r in &report {
        println!("  {r}");
    }
    if !failed.is_empty() {
        bail!(
            "{} check(s) failed:\n  {}\n--- paddock log tail ---\n{}",
            failed.len(),
            failed.join("\n  "),
            tail_file(p1.log_path(), 40)
        );
    }
    Ok(())
}

fn run_ok(cmd: &mut Command) -> Result<()> {
    let out = process::run(cmd, None, Duration::from_secs(30))?;
    ensure!(out.success(), "{}: {}", process::describe(cmd), out.stderr);
    Ok(())
}
