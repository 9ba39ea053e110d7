//! paddock's store on an etcd cluster as operators run it (three members, TLS, client
//! certificates required; tests/e2e/src/etcd_cluster.rs), against the real control plane:
//!
//! - with the right certificates it works (a tenant created through paddock is in etcd), and
//!   records expired longer than the grace period are pruned at start;
//! - a wrong CA, a missing, expired or foreign client certificate, or a wrong password stop
//!   `paddock serve` at start with an error naming the endpoint and the cause, and nothing is
//!   written;
//! - one member killed: tenant creation still works; the client certificate files replaced:
//!   paddock picks them up without a restart, and refuses (keeping the old ones) files etcd
//!   would not accept.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use paddock_e2e::paddock::paddock_binary;
use paddock_e2e::process::{self, describe, free_port, tail_file};
use paddock_e2e::{ControlPlane, EtcdCluster, Paddock, StoreKind};

/// Runs `paddock serve` with `store_args` and expects it to stop at start: returns its stderr.
fn refused_at_start(cp: &ControlPlane, name: &str, store_args: &[String]) -> Result<String> {
    let bin = paddock_binary()?;
    let dir = cp.dir().join(name);
    let certs = dir.join("certs");
    let port = free_port()?;
    let url = format!("https://127.0.0.1:{port}");
    let mut init = Command::new(&bin);
    init.args(["ca", "init", "--dir"])
        .arg(&certs)
        .args(["--server-url", &url]);
    let out = process::run(&mut init, None, Duration::from_secs(60))?;
    if !out.success() {
        bail!("{} failed: {}", describe(&init), out.stderr);
    }
    let mut serve = Command::new(&bin);
    let mut args: Vec<OsString> = vec![
        "serve".into(),
        "--listen".into(),
        format!("127.0.0.1:{port}").into(),
        "--certs-dir".into(),
        certs.into(),
        "--upstream-kubeconfig".into(),
        cp.admin_kubeconfig().into(),
        "--log-format".into(),
        "text".into(),
    ];
    args.extend(store_args.iter().map(OsString::from));
    serve.args(&args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PADDOCK_") {
            serve.env_remove(k);
        }
    }
    let out = process::run(&mut serve, None, Duration::from_secs(30))?;
    if out.timed_out || out.success() {
        bail!(
            "{} did not stop at start (timed out: {}):\n{}",
            describe(&serve),
            out.timed_out,
            process::tail_lines(&out.stderr, 20)
        );
    }
    eprintln!(
        "{name}: refused after {:?}: {}",
        out.elapsed,
        out.stderr.lines().last().unwrap_or_default()
    );
    // The start-up error is the last line; it must come quickly, not after a long timeout.
    assert!(
        out.elapsed < Duration::from_secs(15),
        "{name}: {:?}",
        out.elapsed
    );
    Ok(out.stderr)
}

/// `args` with the value of `flag` replaced (or the flag and its value removed for `None`).
fn with_flag(args: &[String], flag: &str, value: Option<&Path>) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == flag {
            it.next();
            if let Some(v) = value {
                out.push(a.clone());
                out.push(v.display().to_string());
            }
        } else {
            out.push(a.clone());
        }
    }
    out
}

fn assert_mentions(what: &str, stderr: &str, needles: &[&str]) {
    let last = stderr.lines().last().unwrap_or_default();
    for n in needles {
        assert!(
            last.contains(n),
            "{what}: the start-up error does not mention {n:?}:\n{last}\n--- stderr:\n{stderr}"
        );
    }
}

fn wait_until(limit: Duration, what: &str, f: impl FnMut() -> Result<bool>) -> Result<()> {
    paddock_e2e::process::poll_within(limit, Duration::from_millis(200), what, f).map(drop)
}

/// A certificate record as paddock stores it.
fn cert_record(serial: &str, not_after: &str, revoked: bool) -> String {
    serde_json::json!({
        "serialHex": serial, "tenant": "oldten", "user": "alice", "groups": [],
        "notAfter": not_after, "revoked": revoked,
    })
    .to_string()
}

#[test]
fn etcd_with_client_certificates() -> Result<()> {
    let cp = ControlPlane::start()?;
    let mut etcd = EtcdCluster::start_in(&cp)?;
    let endpoints = etcd.endpoints();
    let good = etcd.paddock_args("/paddock-tls");

    // Records that can no longer matter, and one that still does.
    etcd.put(
        "/paddock-tls/certs/0a01",
        &cert_record("0a01", "2020-01-01T00:00:00Z", true),
    )?;
    etcd.put(
        "/paddock-tls/certs/0a02",
        &cert_record("0a02", "2999-01-01T00:00:00Z", true),
    )?;

    // The right certificates: it works, and the long-expired record is pruned at start.
    let p = Paddock::start_with_args(&cp, StoreKind::Args, "paddock-tls", &good)?;
    let kc = p.kubectl_tenant("tlsten")?;
    kc.run(&["create", "configmap", "hello", "--from-literal=a=b"])?;
    let keys = etcd.keys("/paddock-tls/")?;
    assert!(
        keys.contains(&"/paddock-tls/tenants/tlsten".to_string()),
        "{keys:?}"
    );
    wait_until(Duration::from_secs(10), "pruning at start", || {
        Ok(!etcd
            .keys("/paddock-tls/certs/0a01")?
            .iter()
            .any(|k| k.ends_with("/0a01")))
    })?;
    assert_eq!(
        etcd.keys("/paddock-tls/certs/0a02")?,
        vec!["/paddock-tls/certs/0a02".to_string()],
        "a revocation of a certificate that is still valid must stay"
    );

    // One member killed: once the other two have a leader again (member 0 may have been the
    // leader; a write racing that election is answered 503 "leader changed", retryable),
    // tenant creation and tenant requests work. Followers notice a lost leader after the
    // election timeout (1 s by default), so wait past it before asking them.
    etcd.kill_member(0)?;
    std::thread::sleep(Duration::from_secs(2));
    etcd.wait_healthy(1, Duration::from_secs(10))?;
    etcd.wait_healthy(2, Duration::from_secs(10))?;
    let t0 = Instant::now();
    let kc2 = p.kubectl_tenant("tlstwo")?;
    kc2.run(&["get", "configmaps"])?;
    kc.run(&["get", "configmap", "hello"])?;
    eprintln!("tenant created with member 0 down in {:?}", t0.elapsed());
    etcd.restart_member(0)?;

    cert_reload(&cp, &etcd, &p)?;
    p.stop();

    // Wrong settings: a clear error at start naming the endpoint and the cause, nothing written.
    let pki = etcd.pki();
    let cases: Vec<(&str, Vec<String>, Vec<&str>)> = vec![
        (
            "wrong-ca",
            with_flag(&good, "--etcd-ca-file", Some(&pki.file("other-ca.crt"))),
            vec!["not trusted", "other-ca.crt"],
        ),
        (
            "no-client-cert",
            with_flag(
                &with_flag(&good, "--etcd-cert-file", None),
                "--etcd-key-file",
                None,
            ),
            vec!["requires a client certificate"],
        ),
        (
            "expired-client-cert",
            with_flag(
                &with_flag(&good, "--etcd-cert-file", Some(&pki.file("expired.crt"))),
                "--etcd-key-file",
                Some(&pki.file("expired.key")),
            ),
            vec!["expired.crt", "expired at"],
        ),
        (
            "foreign-client-cert",
            with_flag(
                &with_flag(&good, "--etcd-cert-file", Some(&pki.file("foreign.crt"))),
                "--etcd-key-file",
                Some(&pki.file("foreign.key")),
            ),
            vec!["rejected the client certificate", "foreign.crt"],
        ),
    ];
    for (name, args, needles) in cases {
        let prefix = format!("/paddock-{name}");
        let args = with_flag(&args, "--etcd-prefix", Some(Path::new(&prefix)));
        let stderr = refused_at_start(&cp, name, &args)?;
        assert_mentions(name, &stderr, &needles);
        assert!(
            endpoints.iter().any(|e| stderr.contains(e.as_str())),
            "{name}: no endpoint named in:\n{stderr}"
        );
        assert_eq!(etcd.keys(&prefix)?, Vec::<String>::new(), "{name}: written");
    }

    // etcd's own authentication on top: a wrong password is refused, the right one works.
    etcd.enable_auth("rootpw", "paddock", "right-password", "/paddock-auth/")?;
    let pw = cp.dir().join("etcd-password");
    std::fs::write(&pw, "wrong-password\n")?;
    let mut auth = with_flag(&good, "--etcd-prefix", Some(Path::new("/paddock-auth")));
    auth.extend(["--etcd-username".into(), "paddock".into()]);
    auth.extend(["--etcd-password-file".into(), pw.display().to_string()]);
    let stderr = refused_at_start(&cp, "bad-password", &auth)?;
    assert_mentions(
        "bad-password",
        &stderr,
        &["refused paddock's credentials", "authentication failed"],
    );
    assert!(
        endpoints.iter().any(|e| stderr.contains(e.as_str())),
        "{stderr}"
    );
    assert_eq!(etcd.keys("/paddock-auth/")?, Vec::<String>::new());
    std::fs::write(&pw, "right-password\n")?;
    let p = Paddock::start_with_args(&cp, StoreKind::Args, "paddock-auth", &auth)?;
    p.kubectl_tenant("authte")?.run(&["get", "configmaps"])?;
    assert!(
        etcd.keys("/paddock-auth/")?
            .contains(&"/paddock-auth/tenants/authte".to_string())
    );
    p.stop();
    Ok(())
}

/// The client certificate files are replaced under a running paddock: with ones etcd does not
/// accept, paddock keeps the previous ones and says so; with a new valid pair it takes them.
fn cert_reload(cp: &ControlPlane, etcd: &EtcdCluster, p: &Paddock) -> Result<()> {
    let pki = etcd.pki();
    let (crt, key) = (pki.file("client.crt"), pki.file("client.key"));
    let original = (std::fs::read(&crt)?, std::fs::read(&key)?);
    std::fs::copy(pki.file("foreign.crt"), &crt)?;
    std::fs::copy(pki.file("foreign.key"), &key)?;
    wait_until(
        Duration::from_secs(15),
        "paddock notices bad etcd files",
        || Ok(tail_file(p.log_path(), 200).contains("cannot be used; keeping the previous ones")),
    )
    .with_context(|| tail_file(p.log_path(), 30))?;
    // still working on the previous certificate
    p.kubectl_tenant("tlsthr")?.run(&["get", "configmaps"])?;
    // a new valid pair (the root one is signed by the cluster CA too)
    std::fs::copy(pki.file("root.crt"), &crt)?;
    std::fs::copy(pki.file("root.key"), &key)?;
    wait_until(
        Duration::from_secs(15),
        "paddock takes the new etcd files",
        || {
            Ok(tail_file(p.log_path(), 200)
                .contains("etcd TLS files changed; new requests use them"))
        },
    )
    .with_context(|| tail_file(p.log_path(), 30))?;
    p.kubectl_tenant("tlsfou")?.run(&["get", "configmaps"])?;
    std::fs::write(&crt, original.0)?;
    std::fs::write(&key, original.1)?;
    let _ = cp;
    Ok(())
}
