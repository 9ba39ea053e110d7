//! A three-member etcd cluster for paddock's store, as operators run it: TLS on client and
//! peer ports, client certificates required (`--client-cert-auth`), on loopback with free
//! ports. The certificates are generated for the test with rcgen ([`EtcdPki`]): the cluster's
//! CA and member certificates, paddock's client certificate, and the wrong ones the refusal
//! tests need (another CA, a client certificate of another CA, an expired one).
//!
//! It sits beside the test bed's own etcd (the upstream's, unchanged). Members can be killed,
//! stopped and restarted one at a time. Checks go through etcd-client directly (keys, puts) and
//! etcd's JSON gateway with curl (health, auth setup), never through paddock's store code.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! let cp = paddock_e2e::ControlPlane::start()?;
//! let mut etcd = paddock_e2e::EtcdCluster::start_in(&cp)?;
//! let args = etcd.paddock_args("/paddock-e2e"); // --store etcd --etcd-endpoints ... TLS files
//! etcd.kill_member(1)?; // SIGKILL
//! etcd.restart_member(1)?; // same data dir, waits until it serves
//! # Ok(()) }
//! ```

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::process::{self, free_port, proc_start_time, tail_file};
use crate::testbed::{ControlPlane, build_binaries};

/// Members of a cluster started with [`EtcdCluster::start_in`].
pub const MEMBERS: usize = 3;

/// A name every member's serving certificate also carries: pods on the real node reach a member
/// by it (the chart's `hostAliases` map it to the node's bridge into the host; chart.rs).
pub const NAME_FOR_PODS: &str = "etcd.paddock.test";

/// The certificates of the cluster and of its clients, as PEM files in one directory.
pub struct EtcdPki {
    dir: PathBuf,
}

impl EtcdPki {
    /// Generates everything into `dir` (created).
    pub fn generate(dir: &Path, members: usize) -> Result<EtcdPki> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let pki = EtcdPki {
            dir: dir.to_path_buf(),
        };
        let (ca, ca_pem) = new_ca("etcd test CA")?;
        pki.write("ca.crt", &ca_pem)?;
        for i in 0..members {
            // serving and peer certificate in one: members use it as clients of each other
            let (c, k) = leaf(&ca, &format!("etcd-m{i}"), true, false)?;
            pki.write(&format!("m{i}.crt"), &c)?;
            pki.write(&format!("m{i}.key"), &k)?;
        }
        for (name, cn, expired) in [
            ("client", "paddock", false),
            ("root", "root", false),
            ("expired", "paddock", true),
        ] {
            let (c, k) = leaf(&ca, cn, false, expired)?;
            pki.write(&format!("{name}.crt"), &c)?;
            pki.write(&format!("{name}.key"), &k)?;
        }
        let (other, other_pem) = new_ca("another CA")?;
        pki.write("other-ca.crt", &other_pem)?;
        let (c, k) = leaf(&other, "paddock", false, false)?;
        pki.write("foreign.crt", &c)?;
        pki.write("foreign.key", &k)?;
        Ok(pki)
    }

    fn write(&self, name: &str, pem: &str) -> Result<()> {
        let p = self.dir.join(name);
        std::fs::write(&p, pem).with_context(|| format!("writing {}", p.display()))
    }

    /// A file of this PKI by name: `ca.crt`, `client.crt`/`.key` (CN paddock), `root.crt`/`.key`
    /// (CN root), `expired.crt`/`.key`, `other-ca.crt`, `foreign.crt`/`.key` (signed by the
    /// other CA), `m<i>.crt`/`.key`.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The cluster's CA bundle.
    pub fn ca(&self) -> PathBuf {
        self.file("ca.crt")
    }
}

fn new_ca(cn: &str) -> Result<(Issuer<'static, KeyPair>, String)> {
    let key = KeyPair::generate()?;
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = p.self_signed(&key)?;
    Ok((Issuer::new(p, key), cert.pem()))
}

/// A leaf certificate and key; `server` adds 127.0.0.1, localhost, [`NAME_FOR_PODS`] and
/// serverAuth.
fn leaf(
    ca: &Issuer<'static, KeyPair>,
    cn: &str,
    server: bool,
    expired: bool,
) -> Result<(String, String)> {
    let key = KeyPair::generate()?;
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    if server {
        p.extended_key_usages
            .push(ExtendedKeyUsagePurpose::ServerAuth);
        p.subject_alt_names = vec![
            SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])),
            SanType::DnsName("localhost".try_into()?),
            SanType::DnsName(NAME_FOR_PODS.try_into()?),
        ];
    }
    let now = time::OffsetDateTime::now_utc();
    if expired {
        p.not_before = now - time::Duration::days(30);
        p.not_after = now - time::Duration::days(1);
    } else {
        p.not_before = now - time::Duration::hours(1);
        p.not_after = now + time::Duration::days(30);
    }
    let cert = p.signed_by(&key, ca)?;
    Ok((cert.pem(), key.serialize_pem()))
}

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

/// The cluster. Dropping it kills every member.
pub struct EtcdCluster {
    dir: PathBuf,
    bin: PathBuf,
    pki: EtcdPki,
    members: Vec<Member>,
    /// The test bed's pids file: members are recorded there, so its reaper stops them too.
    pids_file: Option<PathBuf>,
    root_password: Option<String>,
}

impl EtcdCluster {
    /// Three members in `<test bed>/etcd-store`, recorded in the test bed's pids file.
    pub fn start_in(cp: &ControlPlane) -> Result<EtcdCluster> {
        Self::start(
            &cp.dir().join("etcd-store"),
            MEMBERS,
            Some(cp.dir().join("pids")),
        )
    }

    /// `n` members in `dir` (created; must not hold a cluster already).
    pub fn start(dir: &Path, n: usize, pids_file: Option<PathBuf>) -> Result<EtcdCluster> {
        let bins = build_binaries(false)?;
        let bin = PathBuf::from(
            bins.get("PADDOCK_ETCD_BIN")
                .context("build.sh printed no PADDOCK_ETCD_BIN")?,
        )
        .join("etcd");
        let pki = EtcdPki::generate(&dir.join("pki"), n)?;
        let mut last = None;
        // Free ports are picked, released, then bound by etcd: another process may take one
        // in between. Then start over on fresh ports and data directories.
        for attempt in 0..3 {
            let mut c = EtcdCluster {
                dir: dir.join(format!("try{attempt}")),
                bin: bin.clone(),
                pki: EtcdPki {
                    dir: pki.dir.clone(),
                },
                members: Vec::new(),
                pids_file: pids_file.clone(),
                root_password: None,
            };
            match c.start_all(n) {
                Ok(()) => return Ok(c),
                Err(e) if format!("{e:#}").contains("address already in use") => {
                    eprintln!("etcd cluster: a port was taken during startup; again");
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("etcd cluster did not start")))
    }

    fn start_all(&mut self, n: usize) -> Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        for i in 0..n {
            self.members.push(Member {
                name: format!("m{i}"),
                client_port: free_port()?,
                peer_port: free_port()?,
                child: None,
            });
        }
        for i in 0..n {
            self.spawn(i)?;
        }
        for i in 0..n {
            self.wait_healthy(i, Duration::from_secs(60))?;
        }
        Ok(())
    }

    fn spawn(&mut self, i: usize) -> Result<()> {
        let initial: Vec<String> = self
            .members
            .iter()
            .map(|m| format!("{}=https://127.0.0.1:{}", m.name, m.peer_port))
            .collect();
        let m = &self.members[i];
        let client = format!("https://127.0.0.1:{}", m.client_port);
        let peer = format!("https://127.0.0.1:{}", m.peer_port);
        let cert = self.pki.file(&format!("{}.crt", m.name));
        let key = self.pki.file(&format!("{}.key", m.name));
        let log_path = self.log(i);
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?;
        let mut cmd = Command::new(&self.bin);
        cmd.arg(format!("--name={}", m.name))
            .arg(format!("--data-dir={}", self.dir.join(&m.name).display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster={}", initial.join(",")))
            .arg("--initial-cluster-state=new")
            .arg(format!(
                "--initial-cluster-token=paddock-store-{}",
                std::process::id()
            ))
            .arg(format!("--cert-file={}", cert.display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--trusted-ca-file={}", self.pki.ca().display()))
            .arg("--client-cert-auth")
            .arg(format!("--peer-cert-file={}", cert.display()))
            .arg(format!("--peer-key-file={}", key.display()))
            .arg(format!(
                "--peer-trusted-ca-file={}",
                self.pki.ca().display()
            ))
            .arg("--peer-client-cert-auth")
            .arg("--unsafe-no-fsync")
            .arg("--log-level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", process::describe(&cmd)))?;
        if let Some(pids) = &self.pids_file {
            let start = proc_start_time(child.id()).unwrap_or_else(|| "0".into());
            let mut f = OpenOptions::new()
                .append(true)
                .open(pids)
                .context("opening the pids file")?;
            writeln!(f, "etcd-store-{} {} {start}", m.name, child.id())?;
        }
        self.members[i].child = Some(child);
        Ok(())
    }

    fn log(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{}.log", self.members[i].name))
    }

    /// Waits until member `i` answers `/health` with `true` (it has a leader).
    pub fn wait_healthy(&mut self, i: usize, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(child) = self.members[i].child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!(
                    "etcd member {i} exited ({status}) during startup:\n{}",
                    tail_file(&self.log(i), 30)
                );
            }
            let out = self.curl_raw(i, "GET", "/health", None)?;
            if out.success() && out.stdout.contains("\"true\"") {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "etcd member {i} not healthy within {timeout:?}: {} {}\n{}",
                    out.stdout,
                    out.stderr,
                    tail_file(&self.log(i), 30)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `https://127.0.0.1:<port>` of every member.
    pub fn endpoints(&self) -> Vec<String> {
        (0..self.members.len()).map(|i| self.endpoint(i)).collect()
    }

    /// Member `i`'s client URL.
    pub fn endpoint(&self, i: usize) -> String {
        format!("https://127.0.0.1:{}", self.members[i].client_port)
    }

    pub fn pki(&self) -> &EtcdPki {
        &self.pki
    }

    /// The `paddock serve` flags of this store with the right certificates.
    pub fn paddock_args(&self, prefix: &str) -> Vec<String> {
        vec![
            "--store".into(),
            "etcd".into(),
            "--etcd-endpoints".into(),
            self.endpoints().join(","),
            "--etcd-prefix".into(),
            prefix.into(),
            "--etcd-ca-file".into(),
            self.pki.ca().display().to_string(),
            "--etcd-cert-file".into(),
            self.pki.file("client.crt").display().to_string(),
            "--etcd-key-file".into(),
            self.pki.file("client.key").display().to_string(),
        ]
    }

    /// SIGKILL to member `i`; returns once it is gone.
    pub fn kill_member(&mut self, i: usize) -> Result<()> {
        if let Some(mut c) = self.members[i].child.take() {
            c.kill().ok();
            c.wait().context("waiting for a killed etcd member")?;
        }
        Ok(())
    }

    /// SIGTERM to member `i` (a clean stop); returns once it has exited (SIGKILL after 10 s).
    pub fn stop_member(&mut self, i: usize) -> Result<()> {
        if let Some(mut c) = self.members[i].child.take() {
            process::signal(c.id(), "TERM");
            let (status, _) = process::wait_timeout(&mut c, Duration::from_secs(10))?;
            if status.is_none() {
                eprintln!("etcd member {i} ignored SIGTERM for 10 s; killed");
            }
        }
        Ok(())
    }

    /// Starts member `i` again on its data directory and ports; waits until it is healthy.
    pub fn restart_member(&mut self, i: usize) -> Result<()> {
        if self.members[i].child.is_some() {
            bail!("etcd member {i} is running");
        }
        self.spawn(i)?;
        self.wait_healthy(i, Duration::from_secs(60))
    }

    /// Whether member `i` runs (as far as this harness knows).
    pub fn is_running(&self, i: usize) -> bool {
        self.members[i].child.is_some()
    }

    /// curl against member `i`'s JSON gateway with the `root` client certificate.
    fn curl_raw(
        &self,
        i: usize,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<process::Output> {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "--max-time", "5", "-X", method])
            .arg("--cacert")
            .arg(self.pki.ca())
            .arg("--cert")
            .arg(self.pki.file("root.crt"))
            .arg("--key")
            .arg(self.pki.file("root.key"));
        if let Some(b) = body {
            cmd.arg("-d").arg(b.to_string());
        }
        cmd.arg(format!("{}{path}", self.endpoint(i)));
        process::run(&mut cmd, None, Duration::from_secs(10))
    }

    /// POSTs `body` to `path` on the first running member's JSON gateway, as `root` by
    /// certificate; the answer as JSON. Only before auth is enabled (see [`Self::with_client`]).
    fn call(&self, path: &str, body: serde_json::Value) -> Result<serde_json::Value> {
        let i = (0..self.members.len())
            .find(|&i| self.is_running(i))
            .context("no etcd member is running")?;
        let out = self.curl_raw(i, "POST", path, Some(&body))?;
        if !out.success() {
            bail!("etcd {path}: curl failed: {}", out.stderr);
        }
        let v: serde_json::Value = serde_json::from_str(&out.stdout)
            .with_context(|| format!("etcd {path}: not JSON: {}", out.stdout))?;
        if let Some(err) = v.get("error").or_else(|| v.get("message")) {
            bail!("etcd {path}: {err}");
        }
        Ok(v)
    }

    /// Runs `op` with an etcd client as `root` (the root certificate, and root's password
    /// once auth is on: etcd refuses gateway requests from certificate holders then).
    fn with_client<T>(
        &self,
        op: impl AsyncFnOnce(etcd_client::Client) -> Result<T, etcd_client::Error>,
    ) -> Result<T> {
        let eps: Vec<String> = (0..self.members.len())
            .filter(|&i| self.is_running(i))
            .map(|i| self.endpoint(i))
            .collect();
        let read = |n: &str| std::fs::read(self.pki.file(n));
        let tls = etcd_client::TlsOptions::new()
            .ca_certificate(etcd_client::Certificate::from_pem(read("ca.crt")?))
            .identity(etcd_client::Identity::from_pem(
                read("root.crt")?,
                read("root.key")?,
            ));
        let mut opts = etcd_client::ConnectOptions::new()
            .with_tls(tls)
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(10));
        if let Some(pw) = &self.root_password {
            opts = opts.with_user("root", pw.clone());
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async {
            let client = etcd_client::Client::connect(&eps, Some(opts)).await?;
            op(client).await
        })
        .with_context(|| format!("etcd at {}", eps.join(",")))
    }

    /// Keys under `prefix`.
    pub fn keys(&self, prefix: &str) -> Result<Vec<String>> {
        let prefix = prefix.to_owned();
        self.with_client(async move |mut c| {
            let opts = etcd_client::GetOptions::new()
                .with_prefix()
                .with_keys_only();
            let resp = c.get(prefix, Some(opts)).await?;
            Ok(resp
                .kvs()
                .iter()
                .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
                .collect())
        })
    }

    /// Writes `value` at `key`.
    pub fn put(&self, key: &str, value: &str) -> Result<()> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.with_client(async move |mut c| c.put(key, value, None).await.map(|_| ()))
    }

    /// Turns on etcd's authentication: a `root` user with `root_password`, and `user` with
    /// `password` allowed to read and write under `prefix` only.
    pub fn enable_auth(
        &mut self,
        root_password: &str,
        user: &str,
        password: &str,
        prefix: &str,
    ) -> Result<()> {
        if self.root_password.is_some() {
            bail!("etcd auth is enabled already");
        }
        let role = format!("{user}-rw");
        for (path, body) in [
            (
                "/v3/auth/user/add",
                serde_json::json!({"name": "root", "password": root_password}),
            ),
            (
                "/v3/auth/user/grant",
                serde_json::json!({"user": "root", "role": "root"}),
            ),
            ("/v3/auth/role/add", serde_json::json!({"name": role})),
            (
                "/v3/auth/role/grant",
                serde_json::json!({"name": role, "perm": {
                    "permType": "READWRITE",
                    "key": B64.encode(prefix),
                    "range_end": B64.encode(prefix_end(prefix)),
                }}),
            ),
            (
                "/v3/auth/user/add",
                serde_json::json!({"name": user, "password": password}),
            ),
            (
                "/v3/auth/user/grant",
                serde_json::json!({"user": user, "role": role}),
            ),
            ("/v3/auth/enable", serde_json::json!({})),
        ] {
            self.call(path, body)?;
        }
        self.root_password = Some(root_password.to_owned());
        Ok(())
    }

    /// Kills every member.
    pub fn stop(&mut self) {
        for i in 0..self.members.len() {
            let _ = self.kill_member(i);
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The end of the key range of all keys starting with `prefix` (etcd's "prefix" range).
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}
