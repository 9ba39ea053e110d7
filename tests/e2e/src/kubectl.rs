//! The pinned kubectl, run with one kubeconfig.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::process::{self, Output, describe, indent, tail_file, truncate};

/// Finds the version-pinned kubectl: `$PADDOCK_KUBECTL`, else `kubectl.1.33` next to the real
/// file behind `kubectl` on PATH, else `kubectl` itself.
pub fn find_kubectl() -> Result<PathBuf> {
    if let Ok(p) = std::env::var("PADDOCK_KUBECTL") {
        return Ok(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").context("PATH is not set")?;
    let kubectl = std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .context("kubectl is not on PATH (set PADDOCK_KUBECTL)")?;
    let real = std::fs::canonicalize(&kubectl).unwrap_or_else(|_| kubectl.clone());
    if let Some(pinned) = real.parent().map(|d| d.join("kubectl.1.33"))
        && pinned.is_file()
    {
        return Ok(pinned);
    }
    Ok(kubectl)
}

/// kubectl with a fixed kubeconfig and discovery cache; failures carry the command, its output
/// and, when set, the tail of paddock's log.
#[derive(Debug, Clone)]
pub struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
    cache_dir: Option<PathBuf>,
    log: Option<PathBuf>,
    timeout: Duration,
}

impl Kubectl {
    pub fn new(kubeconfig: impl Into<PathBuf>) -> Result<Self> {
        Ok(Self {
            bin: find_kubectl()?,
            kubeconfig: kubeconfig.into(),
            cache_dir: None,
            log: None,
            timeout: Duration::from_secs(60),
        })
    }

    /// A discovery/HTTP cache of its own (kubectl keys ~/.kube/cache by server URL only, so two
    /// identities on one paddock URL would otherwise share discovery).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// A log file whose tail is shown when a command fails (paddock's).
    pub fn log(mut self, log: impl Into<PathBuf>) -> Self {
        self.log = Some(log.into());
        self
    }

    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub fn bin(&self) -> &Path {
        &self.bin
    }

    fn command(&self, args: &[String], env: &BTreeMap<String, String>) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg(format!("--kubeconfig={}", self.kubeconfig.display()));
        if let Some(c) = &self.cache_dir {
            cmd.arg(format!("--cache-dir={}", c.display()));
        }
        cmd.args(args);
        cmd.env_remove("KUBECONFIG");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs kubectl; returns whatever happened (no judgement).
    pub fn run_raw(
        &self,
        args: &[String],
        stdin: Option<&str>,
        env: &BTreeMap<String, String>,
        timeout: Option<Duration>,
    ) -> Result<(String, Output)> {
        let mut cmd = self.command(args, env);
        let line = describe(&cmd);
        let out = process::run(&mut cmd, stdin, timeout.unwrap_or(self.timeout))?;
        Ok((line, out))
    }

    /// Runs kubectl and requires exit 0; returns stdout.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        self.run_stdin(args, None)
    }

    /// Like [`Kubectl::run`], with data on stdin (`-f -`).
    pub fn run_stdin(&self, args: &[&str], stdin: Option<&str>) -> Result<String> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        let (line, out) = self.run_raw(&args, stdin, &BTreeMap::new(), None)?;
        if !out.success() {
            bail!(
                "{}",
                self.failure_report(&line, stdin, &out, "expected exit 0")
            );
        }
        Ok(out.stdout)
    }

    /// The message shown when a command does not do what was expected.
    pub fn failure_report(
        &self,
        line: &str,
        stdin: Option<&str>,
        out: &Output,
        why: &str,
    ) -> String {
        let mut s = format!(
            "{why}\n  command: {line}\n  exit: {}{} after {:.1}s\n",
            out.code
                .map_or_else(|| "none".to_owned(), |c| c.to_string()),
            if out.timed_out { " (timed out)" } else { "" },
            out.elapsed.as_secs_f64()
        );
        if let Some(i) = stdin {
            s.push_str(&format!(
                "  stdin:\n{}\n",
                indent(&truncate(i, 2000), "    | ")
            ));
        }
        s.push_str(&format!(
            "  stdout:\n{}\n  stderr:\n{}\n",
            indent(&truncate(&out.stdout, 4000), "    | "),
            indent(&truncate(&out.stderr, 4000), "    | ")
        ));
        if let Some(log) = &self.log {
            s.push_str(&format!(
                "  tail of {}:\n{}\n",
                log.display(),
                indent(&truncate(&tail_file(log, 30), 6000), "    | ")
            ));
        }
        s
    }
}

impl Kubectl {
    /// The same kubeconfig and cache with another kubectl binary (a pinned version).
    pub fn with_bin(mut self, bin: impl Into<PathBuf>) -> Self {
        self.bin = bin.into();
        self
    }
}
