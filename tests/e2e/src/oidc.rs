//! The test bed's OpenID Connect provider (tests/testbed/oidc-provider: zitadel/oidc's example
//! provider with TLS on loopback, rotating keys and a mint endpoint) and the pieces a single
//! sign-on test needs around it: kubelogin's non-interactive login (tests/testbed/oidc-login.sh
//! as its browser), kubeconfig edits, and raw bearer requests to paddock with a chosen server
//! name.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::process::{self, free_port};
use crate::testbed::testbed_scripts;

/// A running provider, killed on drop.
pub struct Provider {
    child: Child,
    /// `https://127.0.0.1:<port>/`, the tokens' `iss`.
    pub issuer: String,
    /// The provider's CA certificate (PEM file).
    pub ca: PathBuf,
    /// The port kubelogin's redirect server listens on (the only redirect the provider allows).
    pub redirect_port: u16,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Provider {
    /// Starts the provider binary `bin` in `dir` with the users of `users_json` (the example's
    /// format) and one public client, `paddock`.
    pub fn start(bin: &Path, dir: &Path, users_json: &str) -> Result<Self> {
        std::fs::create_dir_all(dir)?;
        let users = dir.join("users.json");
        std::fs::write(&users, users_json)?;
        let (ca, addr) = (dir.join("ca.crt"), dir.join("issuer"));
        let _ = std::fs::remove_file(&addr);
        let redirect_port = free_port()?;
        let log = std::fs::File::create(dir.join("provider.log"))?;
        let child = Command::new(bin)
            .args([
                "-listen",
                "127.0.0.1:0",
                "-clients",
                "paddock",
                "-redirect-uris",
            ])
            .arg(format!(
                "http://localhost:{redirect_port},http://127.0.0.1:{redirect_port}"
            ))
            .arg("-users")
            .arg(&users)
            .arg("-ca-out")
            .arg(&ca)
            .arg("-addr-out")
            .arg(&addr)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut me = Provider {
            child,
            issuer: String::new(),
            ca,
            redirect_port,
        };
        let t0 = Instant::now();
        while !addr.is_file() {
            if t0.elapsed() > Duration::from_secs(30) {
                bail!(
                    "the OIDC provider did not start within 30 s (see {})",
                    dir.display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        me.issuer = std::fs::read_to_string(&addr)?.trim().to_owned();
        Ok(me)
    }

    fn post(&self, path: &str, body: &str) -> Result<String> {
        let url = format!("{}{path}", self.issuer);
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "--fail", "--max-time", "20", "--cacert"])
            .arg(&self.ca)
            .args(["-X", "POST", "--data-binary", "@-", &url]);
        let out = process::run(&mut cmd, Some(body), Duration::from_secs(30))?;
        if !out.success() {
            bail!("POST {url}: {}{}", out.stdout, out.stderr);
        }
        Ok(out.stdout)
    }

    /// A token with `claims`, signed by the provider's current key.
    pub fn mint(&self, claims: &Value) -> Result<String> {
        self.post("test/mint", &claims.to_string())
    }

    /// A new current signing key (the old one stays published); its kid.
    pub fn rotate(&self) -> Result<String> {
        Ok(self.post("test/rotate", "")?.trim().to_owned())
    }

    /// Only the current key stays published.
    pub fn drop_old_keys(&self) -> Result<()> {
        self.post("test/drop-old", "").map(drop)
    }

    /// The PEM of the provider's CA.
    pub fn ca_pem(&self) -> Result<String> {
        std::fs::read_to_string(&self.ca).context("reading the provider's CA")
    }
}

/// The environment kubectl needs to sign `user` in without a person: kubelogin (as the
/// `kubectl oidc-login` plugin) and kubectl on PATH, and the login script's settings.
pub fn login_env(
    provider: &Provider,
    kubelogin: &Path,
    kubectl: &Path,
    user: &str,
    password: &str,
) -> BTreeMap<String, String> {
    let mut path: Vec<PathBuf> = [kubelogin, kubectl]
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".into(),
        std::env::join_paths(path)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    env.insert("OIDC_TEST_USER".into(), user.into());
    env.insert("OIDC_TEST_PASSWORD".into(), password.into());
    env.insert("OIDC_TEST_CA".into(), provider.ca.display().to_string());
    env
}

/// Adds to every exec user of the kubeconfig at `path` what replaces the person's browser:
/// the login script, kubelogin's redirect port, and a token cache of this test's own.
pub fn add_test_login(path: &Path, provider: &Provider, token_cache: &Path) -> Result<()> {
    let mut kc: Value = serde_norway::from_str(&std::fs::read_to_string(path)?)?;
    let script = testbed_scripts().join("oidc-login.sh");
    for u in kc["users"].as_array_mut().context("users")? {
        let args = u["user"]["exec"]["args"]
            .as_array_mut()
            .context("an exec user")?;
        args.push(format!("--browser-command={}", script.display()).into());
        args.push(format!("--listen-address=127.0.0.1:{}", provider.redirect_port).into());
        args.push(format!("--token-cache-dir={}", token_cache.display()).into());
    }
    std::fs::write(path, serde_norway::to_string(&kc)?)?;
    Ok(())
}

/// A copy of the kubeconfig at `src` whose context `context` uses `server_name` as its
/// cluster's tls-server-name (a person editing their kubeconfig to reach another tenant).
pub fn with_server_name(src: &Path, dst: &Path, context: &str, server_name: &str) -> Result<()> {
    let mut kc: Value = serde_norway::from_str(&std::fs::read_to_string(src)?)?;
    let cluster = kc["contexts"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == context))
        .and_then(|c| c["context"]["cluster"].as_str())
        .context("no such context")?
        .to_owned();
    for c in kc["clusters"].as_array_mut().context("clusters")? {
        if c["name"] == cluster.as_str() {
            c["cluster"]["tls-server-name"] = server_name.into();
        }
    }
    std::fs::write(dst, serde_norway::to_string(&kc)?)?;
    Ok(())
}

/// The ID token kubelogin cached for the provider (the newest file of its cache).
pub fn cached_id_token(token_cache: &Path) -> Result<String> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for e in std::fs::read_dir(token_cache)? {
        let p = e?.path();
        let m = std::fs::metadata(&p)?.modified()?;
        if p.is_file() && newest.as_ref().is_none_or(|(t, _)| m > *t) {
            newest = Some((m, p));
        }
    }
    let (_, p) = newest.context("kubelogin cached no token")?;
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&p)?)?;
    v["id_token"]
        .as_str()
        .map(str::to_owned)
        .context("no id_token in kubelogin's cache")
}

/// One answer of a raw request.
#[derive(Debug)]
pub struct Answer {
    pub code: u16,
    pub body: String,
}

impl Answer {
    /// kube-apiserver's 401: a `Status` with code 401 and reason Unauthorized.
    pub fn is_401_status(&self) -> bool {
        let v: Value = serde_json::from_str(&self.body).unwrap_or_default();
        self.code == 401
            && v["kind"] == "Status"
            && v["code"] == 401
            && v["reason"] == "Unauthorized"
    }
}

/// GET `path` at `https://<server_name>:<port>` (resolved to 127.0.0.1, so the TLS handshake
/// carries `server_name`) with a bearer token, verified with the CA file `ca`.
pub fn bearer_get(
    port: u16,
    ca: &Path,
    server_name: &str,
    path: &str,
    token: &str,
) -> Result<Answer> {
    let mut header = tempfile::NamedTempFile::new()?;
    write!(header, "Authorization: Bearer {token}")?;
    let mut cmd = Command::new("curl");
    cmd.args([
        "-sS",
        "--max-time",
        "20",
        "-w",
        "\n%{http_code}",
        "--cacert",
    ])
    .arg(ca)
    .arg("--resolve")
    .arg(format!("{server_name}:{port}:127.0.0.1"))
    .arg("-H")
    .arg(format!("@{}", header.path().display()))
    .arg(format!("https://{server_name}:{port}{path}"));
    let out = process::run(&mut cmd, None, Duration::from_secs(30))?;
    let (body, code) = out
        .stdout
        .rsplit_once('\n')
        .context("curl printed no status")?;
    Ok(Answer {
        code: code
            .trim()
            .parse()
            .with_context(|| format!("curl: {}", out.stderr))?,
        body: body.to_owned(),
    })
}
