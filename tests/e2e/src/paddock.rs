//! paddock as a real child process (crates/paddock/CLI.md), in front of a [`ControlPlane`].

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::kubectl::Kubectl;
use crate::process::{self, Output, describe, free_port, indent, tail_file, truncate};
use crate::testbed::{ControlPlane, workspace_root};

/// Which tenant store paddock runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The control plane's second etcd (the production store).
    Etcd,
    /// The embedded single-replica store in a data dir.
    Embedded,
    /// No store flags: the caller passes them (e.g. [`crate::EtcdCluster::paddock_args`]).
    Args,
}

/// The `paddock` binary: `$PADDOCK_BIN`, else `<target>/debug/paddock`, built with
/// `cargo build -p paddock` first (a no-op when it is up to date) unless `PADDOCK_E2E_NO_BUILD=1`.
pub fn paddock_binary() -> Result<PathBuf> {
    if let Ok(p) = std::env::var("PADDOCK_BIN") {
        return Ok(PathBuf::from(p));
    }
    let root = workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_relative() { root.join(t) } else { t })
        .unwrap_or_else(|| root.join("target"));
    let bin = target.join("debug").join("paddock");
    let no_build = std::env::var("PADDOCK_E2E_NO_BUILD").is_ok_and(|v| v == "1");
    if !no_build || !bin.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.current_dir(&root)
            .args(["build", "-p", "paddock", "--bin", "paddock"]);
        let out = process::run(&mut cmd, None, Duration::from_secs(30 * 60))?;
        if !out.success() {
            bail!(
                "cargo build -p paddock failed (exit {:?}):\n{}",
                out.code,
                process::tail_lines(&out.stderr, 60)
            );
        }
    }
    if !bin.is_file() {
        bail!("{} does not exist after cargo build", bin.display());
    }
    Ok(bin)
}

/// The statically linked binary deploy/Dockerfile packages, built as the Dockerfile builds it
/// (x86_64-unknown-linux-gnu, `-C target-feature=+crt-static`; the dev profile: minutes, not the
/// release profile's fat LTO) into `target/static`; its path, relative to the workspace root
/// (what the Dockerfile's `PREBUILT` names).
pub fn static_binary() -> Result<PathBuf> {
    let root = workspace_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(&root)
        .args(["build", "-p", "paddock", "--bin", "paddock"])
        .args([
            "--target",
            "x86_64-unknown-linux-gnu",
            "--target-dir",
            "target/static",
        ])
        .env("RUSTFLAGS", "-C target-feature=+crt-static");
    let out = process::run(&mut build, None, Duration::from_secs(60 * 60))?;
    if !out.success() {
        bail!(
            "{}:\n{}",
            process::describe(&build),
            process::tail_lines(&out.stderr, 40)
        );
    }
    let bin = PathBuf::from("target/static/x86_64-unknown-linux-gnu/debug/paddock");
    if !root.join(&bin).is_file() {
        bail!("{} does not exist after the build", bin.display());
    }
    Ok(bin)
}

/// A running `paddock serve`, killed on drop.
pub struct Paddock {
    bin: PathBuf,
    dir: PathBuf,
    /// Certificates (its own from `ca init`, or the first replica's for [`Paddock::start_replica`]).
    certs: PathBuf,
    store: StoreKind,
    url: String,
    log: PathBuf,
    name: String,
    pids_file: PathBuf,
    serve_args: Vec<OsString>,
    child: Mutex<Option<Child>>,
    tenants: Mutex<BTreeMap<String, PathBuf>>,
    restarts: Mutex<u32>,
    /// The name of the fleet's leader Lease.
    lease: String,
    pub startup: Duration,
}

impl Paddock {
    /// `paddock ca init`, then `paddock serve` against `cp`'s apiserver (with paddock's etcd for
    /// [`StoreKind::Etcd`]); waits for `/readyz` (at most 60 s).
    pub fn start(cp: &ControlPlane, store: StoreKind) -> Result<Self> {
        Self::start_named(cp, store, "paddock")
    }

    /// Like [`Paddock::start`], with its own directory name under the test bed (for replicas).
    pub fn start_named(cp: &ControlPlane, store: StoreKind, name: &str) -> Result<Self> {
        Self::start_with_args(cp, store, name, &[])
    }

    /// Like [`Paddock::start_named`], with more `paddock serve` flags (the benchmarks' knobs).
    pub fn start_with_args(
        cp: &ControlPlane,
        store: StoreKind,
        name: &str,
        extra_args: &[String],
    ) -> Result<Self> {
        Self::start_inner(cp, store, name, extra_args, None, None)
    }

    /// Another replica of `first`: the same certificates and store kind (etcd, or the store
    /// flags in `extra_args` for [`StoreKind::Args`]), its own port, log and process. Its
    /// admin kubeconfig points at itself.
    pub fn start_replica(
        cp: &ControlPlane,
        first: &Paddock,
        name: &str,
        extra_args: &[String],
    ) -> Result<Self> {
        Self::start_inner(cp, first.store, name, extra_args, Some(first), None)
    }

    /// Like [`Paddock::start_replica`], running another `paddock` binary (the benchmark's
    /// before/after comparison: an older build next to the current one, same tenants).
    pub fn start_replica_with_binary(
        cp: &ControlPlane,
        first: &Paddock,
        name: &str,
        extra_args: &[String],
        bin: &Path,
    ) -> Result<Self> {
        let bin = Some(bin.to_path_buf());
        Self::start_inner(cp, first.store, name, extra_args, Some(first), bin)
    }

    fn start_inner(
        cp: &ControlPlane,
        store: StoreKind,
        name: &str,
        extra_args: &[String],
        first: Option<&Paddock>,
        bin: Option<PathBuf>,
    ) -> Result<Self> {
        let bin_is_current = bin.is_none();
        let bin = match bin {
            Some(b) => b,
            None => paddock_binary()?,
        };
        let dir = cp.dir().join(name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let port = free_port()?;
        let url = format!("https://127.0.0.1:{port}");
        let log = cp.dir().join("logs").join(format!("{name}.log"));
        let certs = match first {
            Some(f) => {
                let certs = f.certs.clone();
                rewrite_server(&f.admin_kubeconfig(), &url, &dir.join("admin.kubeconfig"))?;
                certs
            }
            None => {
                let certs = dir.join("certs");
                let mut init = Command::new(&bin);
                clean_env(&mut init);
                init.args(["ca", "init", "--dir"])
                    .arg(&certs)
                    .args(["--server-url", &url]);
                let out = process::run(&mut init, None, Duration::from_secs(60))?;
                if !out.success() {
                    bail!("{}", cli_failure(&describe(&init), &out, None));
                }
                certs
            }
        };

        let mut args: Vec<OsString> = vec![
            "serve".into(),
            "--listen".into(),
            format!("127.0.0.1:{port}").into(),
            "--certs-dir".into(),
            certs.clone().into(),
            "--public-url".into(),
            url.clone().into(),
        ];
        if !extra_args.iter().any(|a| a.starts_with("--log-format")) {
            args.extend(["--log-format".into(), "json".into()]);
        }
        match store {
            StoreKind::Etcd => {
                for a in [
                    "--store",
                    "etcd",
                    "--etcd-endpoints",
                    cp.paddock_etcd_endpoints()?,
                    "--etcd-prefix",
                    "/paddock-e2e",
                ] {
                    args.push(a.into());
                }
            }
            StoreKind::Embedded => {
                args.extend(["--store".into(), "embedded".into(), "--data-dir".into()]);
                args.push(dir.join("data").into());
            }
            StoreKind::Args => {}
        }
        // The cluster admin unless the caller gives a credential (the self-check tests).
        if !extra_args.iter().any(|a| a == "--upstream-kubeconfig") {
            args.extend(["--upstream-kubeconfig".into(), cp.admin_kubeconfig().into()]);
        }
        // Tests stop paddock at once; the HA tests ask for the drain delay explicitly.
        if !extra_args.iter().any(|a| a.starts_with("--shutdown-delay")) {
            args.extend(["--shutdown-delay".into(), "0s".into()]);
        }
        // The leader election (docs/operations.md "Leadership"): one Lease per fleet (a
        // replica shares its first's), and an identity that survives a restart, so that a
        // restarted paddock leads again at once instead of waiting out its own old Lease. An
        // older binary (the benchmark's before/after) predates the flags.
        let lease = match first {
            Some(f) => f.lease.clone(),
            None => format!("paddock-leader-{name}"),
        };
        if bin_is_current {
            if !extra_args.iter().any(|a| a == "--leader-name") {
                args.extend(["--leader-name".into(), lease.clone().into()]);
            }
            if !extra_args.iter().any(|a| a == "--leader-identity") {
                args.extend(["--leader-identity".into(), format!("e2e-{name}").into()]);
            }
        }
        args.extend(extra_args.iter().map(OsString::from));
        let mut me = Self {
            lease,
            bin,
            dir,
            certs,
            store,
            url,
            log,
            name: name.to_owned(),
            pids_file: cp.dir().join("pids"),
            serve_args: args,
            child: Mutex::new(None),
            tenants: Mutex::new(BTreeMap::new()),
            startup: Duration::ZERO,
            restarts: Mutex::new(0),
        };
        let t0 = Instant::now();
        me.spawn_serve()?;
        me.wait_ready(Duration::from_secs(60))
            .context("paddock did not become ready")?;
        me.startup = t0.elapsed();
        Ok(me)
    }

    /// Starts `paddock serve` with the recorded arguments, appending to the log file.
    fn spawn_serve(&self) -> Result<()> {
        let mut serve = Command::new(&self.bin);
        serve.args(&self.serve_args);
        clean_env(&mut serve);
        serve.env(
            "RUST_LOG",
            std::env::var("PADDOCK_E2E_RUST_LOG").unwrap_or_else(|_| "info".into()),
        );
        let logf = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("opening {}", self.log.display()))?;
        let logf2 = logf.try_clone()?;
        serve
            .stdin(Stdio::null())
            .stdout(Stdio::from(logf))
            .stderr(Stdio::from(logf2));
        let line = describe(&serve);
        let child = serve
            .spawn()
            .with_context(|| format!("cannot start {line}"))?;
        // The reaper of the test bed stops it too if this test process is killed.
        let start = process::proc_start_time(child.id()).unwrap_or_else(|| "0".into());
        let mut f = OpenOptions::new()
            .append(true)
            .open(&self.pids_file)
            .context("opening the pids file")?;
        writeln!(f, "{} {} {start}", self.name, child.id()).context("writing the pids file")?;
        let mut g = self
            .child
            .lock()
            .map_err(|_| anyhow::anyhow!("child lock poisoned"))?;
        *g = Some(child);
        Ok(())
    }

    /// If paddock has exited, starts it again (same certificates, store and port) and returns
    /// how it had ended; `None` if it was running.
    pub fn ensure_running(&self) -> Result<Option<String>> {
        let Some(status) = self.exited() else {
            return Ok(None);
        };
        if let Ok(mut n) = self.restarts.lock() {
            *n += 1;
        }
        let _ = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.log)
            .and_then(|mut f| {
                writeln!(
                    f,
                    "==== e2e harness: paddock had exited ({status}); restarting it ===="
                )
            });
        self.spawn_serve()?;
        self.wait_ready(Duration::from_secs(60))
            .context("restarted paddock did not become ready")?;
        Ok(Some(status))
    }

    /// How many times [`Paddock::ensure_running`] had to restart it.
    pub fn restarts(&self) -> u32 {
        self.restarts.lock().map(|n| *n).unwrap_or(0)
    }

    /// Waits until `/readyz` answers `ok` (at most `timeout`).
    pub fn wait_ready(&self, timeout: Duration) -> Result<()> {
        let certs = &self.certs;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                bail!(
                    "paddock exited ({status}) during startup; tail of {}:\n{}",
                    self.log.display(),
                    indent(&tail_file(&self.log, 40), "    | ")
                );
            }
            let mut curl = Command::new("curl");
            curl.args(["-sS", "--max-time", "3", "--cacert"])
                .arg(certs.join("ca.crt"))
                .arg("--cert")
                .arg(certs.join("admin.crt"))
                .arg("--key")
                .arg(certs.join("admin.key"))
                .arg(format!("{}/readyz", self.url));
            let out = process::run(&mut curl, None, Duration::from_secs(5))?;
            // `ok`, or `ok: clusters ...` once clusters are registered (docs/clusters.md).
            if out.success() && out.stdout.trim().starts_with("ok") {
                return Ok(());
            }
            let last = format!("{}{}", out.stdout.trim(), out.stderr.trim());
            if Instant::now() >= deadline {
                bail!(
                    "/readyz not ok after {:?} (last answer: {last}); tail of {}:\n{}",
                    timeout,
                    self.log.display(),
                    indent(&tail_file(&self.log, 40), "    | ")
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `Some(status)` if the process has exited.
    pub fn exited(&self) -> Option<String> {
        let mut g = self.child.lock().ok()?;
        let child = g.as_mut()?;
        match child.try_wait() {
            Ok(Some(s)) => Some(s.to_string()),
            Ok(None) => None,
            Err(e) => Some(e.to_string()),
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The platform admin's kubeconfig written by `paddock ca init` (for a replica: the same
    /// credential, pointing at the replica).
    pub fn admin_kubeconfig(&self) -> PathBuf {
        let own = self.dir.join("admin.kubeconfig");
        if own.is_file() {
            own
        } else {
            self.certs.join("admin.kubeconfig")
        }
    }

    /// The certificates directory (tenant CA, serving certificate, admin credential).
    pub fn certs_dir(&self) -> &Path {
        &self.certs
    }

    /// The listening port.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    }

    /// The process id, if it runs.
    pub fn pid(&self) -> Option<u32> {
        let g = self.child.lock().ok()?;
        g.as_ref().map(Child::id)
    }

    /// SIGKILL, and waits for the process to be gone.
    pub fn kill(&self) -> Result<()> {
        let mut g = self
            .child
            .lock()
            .map_err(|_| anyhow::anyhow!("child lock poisoned"))?;
        if let Some(mut child) = g.take() {
            child.kill().context("SIGKILL")?;
            child.wait().context("waiting after SIGKILL")?;
        }
        Ok(())
    }

    /// SIGTERM, then waits (at most `limit`) for the process to exit on its own; returns how
    /// long that took and the exit status.
    pub fn terminate(&self, limit: Duration) -> Result<(Duration, String)> {
        let mut g = self
            .child
            .lock()
            .map_err(|_| anyhow::anyhow!("child lock poisoned"))?;
        let Some(mut child) = g.take() else {
            bail!("{} is not running", self.name);
        };
        let t0 = Instant::now();
        process::signal(child.id(), "TERM");
        match process::wait_timeout(&mut child, limit)? {
            (Some(status), false) => Ok((t0.elapsed(), status.to_string())),
            _ => bail!("{} did not exit within {limit:?} of SIGTERM", self.name),
        }
    }

    /// Starts the stopped process again (same flags, port, certificates and store) and waits
    /// for `/readyz`.
    pub fn restart(&self) -> Result<Duration> {
        let t0 = Instant::now();
        self.spawn_serve()?;
        self.wait_ready(Duration::from_secs(60))
            .context("restarted paddock did not become ready")?;
        Ok(t0.elapsed())
    }

    /// Runs an admin command of the paddock CLI (`tenant ...`, `user ...`, `cert ...`) with the
    /// platform-admin kubeconfig; returns what happened.
    pub fn cli_raw(&self, args: &[String], timeout: Duration) -> Result<(String, Output)> {
        self.cli_raw_with(&self.admin_kubeconfig(), args, timeout)
    }

    /// [`Paddock::cli_raw`] with another admin kubeconfig (e.g. one pointing at a load
    /// balancer in front of the replicas).
    pub fn cli_raw_with(
        &self,
        kubeconfig: &Path,
        args: &[String],
        timeout: Duration,
    ) -> Result<(String, Output)> {
        let mut cmd = Command::new(&self.bin);
        cmd.args(args).arg("--kubeconfig").arg(kubeconfig);
        clean_env(&mut cmd);
        let line = describe(&cmd);
        let out = process::run(&mut cmd, None, timeout)?;
        Ok((line, out))
    }

    /// Runs an admin command and requires success; returns stdout.
    pub fn cli(&self, args: &[&str]) -> Result<String> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let (line, out) = self.cli_raw(&args, Duration::from_secs(60))?;
        if !out.success() {
            bail!("{}", cli_failure(&line, &out, Some(&self.log)));
        }
        Ok(out.stdout)
    }

    /// The tenant admin's kubeconfig for `id`, creating the tenant on first use
    /// (`paddock tenant create <id>`).
    pub fn tenant(&self, id: &str) -> Result<PathBuf> {
        self.tenant_with(id, &[])
    }

    /// Registers control plane `plane` as cluster `name` with its apiserver's admission client
    /// CA (paddock's webhook installed there too), and waits until it is ready with the
    /// webhook.
    pub fn add_cluster_with_webhook(
        &self,
        name: &str,
        plane: &crate::testbed::ControlPlane,
    ) -> Result<()> {
        let kubeconfig = plane.admin_kubeconfig();
        self.cli(&[
            "cluster",
            "add",
            name,
            "--from-kubeconfig",
            kubeconfig.to_str().context("kubeconfig path")?,
            "--admission-client-ca",
            plane.var("ADMISSION_CLIENT_CA")?,
        ])?;
        let ready = |me: &Paddock| -> Result<bool> {
            let v: serde_json::Value =
                serde_json::from_str(&me.cli(&["cluster", "get", name, "-o", "json"])?)?;
            let c = v.as_array().and_then(|a| a.first()).unwrap_or(&v);
            Ok(c["status"]["ready"] == true && c["spec"]["admissionWebhook"] == true)
        };
        crate::process::poll_within(
            Duration::from_secs(120),
            Duration::from_millis(500),
            &format!("cluster {name} ready with paddock's webhook"),
            || ready(self),
        )?;
        Ok(())
    }

    /// [`Paddock::tenant`], created (on first use) with more `tenant create` flags, e.g.
    /// `--clusters east`.
    pub fn tenant_with(&self, id: &str, create_flags: &[&str]) -> Result<PathBuf> {
        let mut tenants = self
            .tenants
            .lock()
            .map_err(|_| anyhow::anyhow!("tenant cache poisoned"))?;
        if let Some(p) = tenants.get(id) {
            return Ok(p.clone());
        }
        let mut args = vec!["tenant", "create", id];
        args.extend_from_slice(create_flags);
        let kubeconfig = self.cli(&args)?;
        let dir = self.dir.join("tenants");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{id}.kubeconfig"));
        std::fs::write(&path, kubeconfig).with_context(|| format!("writing {}", path.display()))?;
        tenants.insert(id.to_owned(), path.clone());
        Ok(path)
    }

    /// A kubeconfig for user `user` (with `groups`) of tenant `id`, issued on first use with
    /// `paddock user issue` (the tenant is created first if needed).
    pub fn user(&self, id: &str, user: &str, groups: &[String]) -> Result<PathBuf> {
        self.tenant(id)?;
        let key = format!("{id}/{user}");
        let mut tenants = self
            .tenants
            .lock()
            .map_err(|_| anyhow::anyhow!("tenant cache poisoned"))?;
        if let Some(p) = tenants.get(&key) {
            return Ok(p.clone());
        }
        let mut args = vec!["user", "issue", id, user];
        for g in groups {
            args.push("--group");
            args.push(g);
        }
        let kubeconfig = self.cli(&args)?;
        let path = self
            .dir
            .join("tenants")
            .join(format!("{id}-{user}.kubeconfig"));
        std::fs::write(&path, kubeconfig).with_context(|| format!("writing {}", path.display()))?;
        tenants.insert(key, path.clone());
        Ok(path)
    }

    /// kubectl as user `user` of tenant `id`.
    pub fn kubectl_user(&self, id: &str, user: &str, groups: &[String]) -> Result<Kubectl> {
        let kc = self.user(id, user, groups)?;
        Ok(Kubectl::new(kc)?
            .cache_dir(self.dir.join("kubectl-cache").join(format!("{id}-{user}")))
            .log(&self.log))
    }

    /// kubectl as `id`'s tenant admin (creating the tenant on first use).
    pub fn kubectl_tenant(&self, id: &str) -> Result<Kubectl> {
        let kc = self.tenant(id)?;
        Ok(Kubectl::new(kc)?
            .cache_dir(self.dir.join("kubectl-cache").join(id))
            .log(&self.log))
    }

    /// kubectl as paddock's platform admin (the admin API, `tenants.paddock.io`).
    pub fn kubectl_admin(&self) -> Result<Kubectl> {
        Ok(Kubectl::new(self.admin_kubeconfig())?
            .cache_dir(self.dir.join("kubectl-cache").join("_admin"))
            .log(&self.log))
    }

    /// Stops paddock: TERM, then KILL after 5 s.
    pub fn stop(&self) {
        let Ok(mut g) = self.child.lock() else {
            return;
        };
        if let Some(mut child) = g.take() {
            if let Ok(None) = child.try_wait() {
                process::signal(child.id(), "TERM");
                if let Ok((None, _)) = process::wait_timeout(&mut child, Duration::from_secs(5)) {
                    let _ = child.kill();
                }
            }
            let _ = child.wait();
        }
    }
}

impl Drop for Paddock {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies a kubeconfig with every `server:` replaced by `url`.
pub fn rewrite_server(src: &Path, url: &str, dst: &Path) -> Result<()> {
    let text =
        std::fs::read_to_string(src).with_context(|| format!("reading {}", src.display()))?;
    let mut out = String::new();
    for line in text.lines() {
        match line.find("server:") {
            Some(i) if line[..i].trim().is_empty() => {
                out.push_str(&line[..i]);
                out.push_str("server: ");
                out.push_str(url);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    std::fs::write(dst, out).with_context(|| format!("writing {}", dst.display()))
}

/// paddock reads `PADDOCK_*` variables as settings: the harness passes flags only.
fn clean_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PADDOCK_") {
            cmd.env_remove(k);
        }
    }
}

fn cli_failure(line: &str, out: &Output, log: Option<&Path>) -> String {
    let mut s = format!(
        "paddock CLI failed\n  command: {line}\n  exit: {:?}{}\n  stdout:\n{}\n  stderr:\n{}\n",
        out.code,
        if out.timed_out { " (timed out)" } else { "" },
        indent(&truncate(&out.stdout, 3000), "    | "),
        indent(&truncate(&out.stderr, 3000), "    | ")
    );
    if let Some(log) = log {
        s.push_str(&format!(
            "  tail of {}:\n{}\n",
            log.display(),
            indent(&tail_file(log, 30), "    | ")
        ));
    }
    s
}
