//! The local control plane: tests/testbed/build.sh + up.sh/down.sh driven from Rust.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::kubectl::Kubectl;
use crate::process::{self, indent, proc_start_time, tail_lines};

/// The workspace root (this crate lives in `<root>/tests/e2e`).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.to_path_buf())
}

/// `tests/testbed` in the workspace.
pub fn testbed_scripts() -> PathBuf {
    workspace_root().join("tests").join("testbed")
}

/// Parses `KEY=VALUE` / `KEY='VALUE'` lines (what build.sh --print-env and up.sh's env file hold).
pub fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            if l.is_empty() || l.starts_with('#') {
                return None;
            }
            let (k, v) = l.split_once('=')?;
            let v = v
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .unwrap_or(v);
            Some((k.trim().to_owned(), v.to_owned()))
        })
        .collect()
}

/// Builds (or finds in the cache) the control-plane binaries; returns their bin directories
/// (`PADDOCK_K8S_BIN`, `PADDOCK_ETCD_BIN`, `PADDOCK_KWOK_BIN`, with `e2e` also `PADDOCK_E2E_BIN`).
pub fn build_binaries(e2e: bool) -> Result<BTreeMap<String, String>> {
    build_binaries_with(if e2e { &["--e2e"] } else { &[] })
}

/// [`build_binaries`] with build.sh's own flags (`--e2e`, `--node`, ...).
pub fn build_binaries_with(flags: &[&str]) -> Result<BTreeMap<String, String>> {
    let mut cmd = Command::new("bash");
    cmd.arg(testbed_scripts().join("build.sh"))
        .arg("--print-env")
        .args(flags);
    // A cold build takes 20-40 min on 2 cores; bounded nonetheless.
    let out = process::run(&mut cmd, None, Duration::from_secs(100 * 60))?;
    if !out.success() {
        bail!(
            "tests/testbed/build.sh failed (exit {:?}{}):\n{}",
            out.code,
            if out.timed_out { ", timed out" } else { "" },
            tail_lines(&out.stderr, 60)
        );
    }
    Ok(parse_env(&out.stdout))
}

/// A running control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
/// with two nodes, and paddock's etcd) in a temp dir. Dropping it runs down.sh.
pub struct ControlPlane {
    dir: PathBuf,
    env: BTreeMap<String, String>,
    keep: bool,
    pub startup: Duration,
}

impl ControlPlane {
    /// Starts a fresh control plane. The test process is the owner: if it dies, up.sh's reaper
    /// tears everything down and removes the directory.
    /// `PADDOCK_E2E_KEEP=1` keeps it running after the test (no reaper; stop it with down.sh).
    pub fn start() -> Result<Self> {
        let bins = build_binaries(false)?;
        Self::start_retrying(&bins, &[])
    }

    /// [`ControlPlane::start`] plus the real node (tests/testbed/node.sh): a kubelet, kube-proxy
    /// and containerd in a network namespace of their own, the node `paddock-node-0` labelled
    /// `paddock.test/pool=real` and tainted `paddock.test/real-node=true:NoSchedule`, with the
    /// locally built images `paddock.test/busybox:1.35` and `paddock.test/pause:3.10`.
    pub fn start_real_node() -> Result<Self> {
        let bins = build_binaries_with(&["--node"])?;
        // Built (or found cached) before up.sh, whose own time limit is for starting only.
        let mut images = Command::new("bash");
        images.arg(testbed_scripts().join("images.sh"));
        let out = process::run(&mut images, None, Duration::from_secs(15 * 60))?;
        if !out.success() {
            bail!(
                "tests/testbed/images.sh failed:\n{}",
                tail_lines(&out.stderr, 40)
            );
        }
        Self::start_retrying(&bins, &["--real-node"])
    }

    fn start_retrying(bins: &BTreeMap<String, String>, flags: &[&str]) -> Result<Self> {
        match Self::start_with(bins, flags) {
            // Ports are picked free and then released; another process may take one in between.
            Err(e) if format!("{e:#}").contains("address already in use") => {
                eprintln!("a port was taken during startup; trying once more");
                Self::start_with(bins, flags)
            }
            r => r,
        }
    }

    /// Starts `n` independent control planes at once (a fleet for the multi-cluster tests,
    /// docs/clusters.md): each in its own directory with its own free ports, certificates,
    /// etcd and paddock etcd, all from the same cached binaries. Dropping one tears down only
    /// that one.
    pub fn start_many(n: usize) -> Result<Vec<Self>> {
        let bins = build_binaries(false)?;
        let started: Vec<Result<Self>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|_| s.spawn(|| Self::start_retrying(&bins, &[])))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("control plane start panicked")))
                })
                .collect()
        });
        // On any failure the ones that started are dropped (torn down) here.
        started.into_iter().collect()
    }

    fn start_with(bins: &BTreeMap<String, String>, flags: &[&str]) -> Result<Self> {
        let keep = std::env::var("PADDOCK_E2E_KEEP").is_ok_and(|v| v == "1");
        let dir = tempfile::Builder::new()
            .prefix("paddock-testbed-")
            .tempdir()
            .context("creating the test bed directory")?
            .keep();
        let t0 = Instant::now();
        let mut cmd = Command::new("bash");
        cmd.arg(testbed_scripts().join("up.sh"))
            .arg(&dir)
            .args(flags);
        if !keep {
            cmd.arg("--owner-pid").arg(std::process::id().to_string());
        }
        for (k, v) in bins {
            cmd.env(k, v);
        }
        let out = process::run(&mut cmd, None, Duration::from_secs(180))?;
        let startup = t0.elapsed();
        if !out.success() {
            // up.sh tears down on failure; make sure, then report.
            let _ = run_down(&dir);
            bail!(
                "tests/testbed/up.sh failed (exit {:?}{}):\n{}",
                out.code,
                if out.timed_out { ", timed out" } else { "" },
                tail_lines(&out.stderr, 80)
            );
        }
        eprintln!("{}", indent(out.stderr.trim_end(), "  "));
        let env_text = std::fs::read_to_string(dir.join("env"))
            .with_context(|| format!("reading {}/env", dir.display()))?;
        let env = parse_env(&env_text);
        if keep {
            eprintln!(
                "PADDOCK_E2E_KEEP=1: the control plane stays up in {}; stop it with tests/testbed/down.sh {}",
                dir.display(),
                dir.display()
            );
        }
        Ok(Self {
            dir,
            env,
            keep,
            startup,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A value from `<dir>/env`.
    pub fn var(&self, key: &str) -> Result<&str> {
        self.env
            .get(key)
            .map(String::as_str)
            .with_context(|| format!("{key} missing from {}/env", self.dir.display()))
    }

    pub fn env(&self) -> &BTreeMap<String, String> {
        &self.env
    }

    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.dir.join("admin.kubeconfig")
    }

    pub fn apiserver_url(&self) -> Result<&str> {
        self.var("APISERVER_URL")
    }

    pub fn paddock_etcd_endpoints(&self) -> Result<&str> {
        self.var("PADDOCK_ETCD_ENDPOINTS")
    }

    /// `paddock serve` flags that turn on its admission webhook with the test bed's
    /// apiserver client certificate (tests/testbed/up.sh); the listener takes a free port.
    pub fn admission_args(&self) -> Result<Vec<String>> {
        Ok(vec![
            "--admission-listen".into(),
            "127.0.0.1:0".into(),
            "--admission-client-ca".into(),
            self.var("ADMISSION_CLIENT_CA")?.into(),
            "--admission-client-name".into(),
            self.var("ADMISSION_CLIENT_NAME")?.into(),
        ])
    }

    /// kubectl (the pinned one) as the upstream cluster admin.
    pub fn kubectl_admin(&self) -> Result<Kubectl> {
        Ok(Kubectl::new(self.admin_kubeconfig())?.cache_dir(self.dir.join("kubectl-cache/admin")))
    }

    /// PIDs recorded in `<dir>/pids` that still run (same start time as recorded).
    pub fn live_pids(&self) -> Vec<(String, u32)> {
        live_recorded_pids(&self.dir)
    }

    /// Records an extra process so that down.sh (and the reaper) stop it too.
    pub fn record_pid(&self, name: &str, pid: u32) -> Result<()> {
        let start = proc_start_time(pid).unwrap_or_else(|| "0".into());
        let mut f = OpenOptions::new()
            .append(true)
            .open(self.dir.join("pids"))
            .context("opening the pids file")?;
        writeln!(f, "{name} {pid} {start}").context("writing the pids file")?;
        Ok(())
    }

    /// Stops everything and removes the directory now; returns what was still alive afterwards.
    pub fn stop(mut self) -> Result<Vec<(String, u32)>> {
        self.keep = false;
        let recorded = read_pids(&self.dir);
        run_down(&self.dir)?;
        let left = recorded
            .into_iter()
            .filter(|(_, pid, start)| proc_start_time(*pid).as_deref() == Some(start.as_str()))
            .map(|(n, p, _)| (n, p))
            .collect();
        // Drop does nothing more: the directory is gone.
        Ok(left)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if self.keep || !self.dir.exists() {
            return;
        }
        if let Err(e) = run_down(&self.dir) {
            eprintln!("tearing down {}: {e:#}", self.dir.display());
        }
    }
}

fn run_down(dir: &Path) -> Result<()> {
    let mut cmd = Command::new("bash");
    cmd.arg(testbed_scripts().join("down.sh")).arg(dir);
    let out = process::run(&mut cmd, None, Duration::from_secs(60))?;
    if !out.success() {
        bail!("down.sh failed: {}{}", out.stdout, out.stderr);
    }
    Ok(())
}

/// `(name, pid, start time)` lines of `<dir>/pids`.
pub fn read_pids(dir: &Path) -> Vec<(String, u32, String)> {
    std::fs::read_to_string(dir.join("pids"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next()?.to_owned();
            let pid = it.next()?.parse().ok()?;
            let start = it.next()?.to_owned();
            Some((name, pid, start))
        })
        .collect()
}

fn live_recorded_pids(dir: &Path) -> Vec<(String, u32)> {
    read_pids(dir)
        .into_iter()
        .filter(|(_, pid, start)| proc_start_time(*pid).as_deref() == Some(start.as_str()))
        .map(|(n, p, _)| (n, p))
        .collect()
}
