//! Client programs the suite builds itself, cache-aware: Go programs of the repository (built
//! into `target/go-bin/`, rebuilt only when their sources change) and tools from the Go module
//! proxy (tests/testbed/tools.sh, cached beside the control plane).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::process::{self, tail_lines};
use crate::testbed::{testbed_scripts, workspace_root};

/// The cargo target directory (`CARGO_TARGET_DIR` or `<root>/target`).
pub fn target_dir() -> PathBuf {
    let root = workspace_root();
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_relative() { root.join(t) } else { t })
        .unwrap_or_else(|| root.join("target"))
}

/// FNV-1a over the module's sources (`go.mod`, `go.sum`, `*.go`, in name order): the cache key.
fn source_hash(dir: &Path) -> Result<u64> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "go")
                || p.file_name()
                    .is_some_and(|n| n == "go.mod" || n == "go.sum")
        })
        .collect();
    names.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in names {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let data = std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
        for b in name.unwrap_or_default().bytes().chain([0]).chain(data) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    Ok(h)
}

/// Builds the Go program in `<root>/<rel>` (a module of its own) into
/// `target/go-bin/<name>-<hash of its sources>`, unless that file exists. The module proxy is
/// the only source of dependencies (`go.sum` is committed, `-mod=readonly`).
pub fn go_program(rel: &str, name: &str) -> Result<PathBuf> {
    let dir = workspace_root().join(rel);
    let out_dir = target_dir().join("go-bin");
    let bin = out_dir.join(format!("{name}-{:016x}", source_hash(&dir)?));
    if bin.is_file() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&out_dir)?;
    let tmp = out_dir.join(format!(".{name}-{}.tmp", std::process::id()));
    let mut cmd = Command::new("go");
    cmd.current_dir(&dir)
        .args(["build", "-mod=readonly", "-trimpath", "-o"])
        .arg(&tmp)
        .arg(".")
        .env("GOTOOLCHAIN", "local")
        .env("CGO_ENABLED", "0");
    eprintln!("building {rel} (go build; first time from the module proxy)");
    let out = process::run(&mut cmd, None, Duration::from_secs(30 * 60))
        .context("running go (is Go installed?)")?;
    if !out.success() {
        let _ = std::fs::remove_file(&tmp);
        bail!(
            "go build in {rel} failed (exit {:?}):\n{}",
            out.code,
            tail_lines(&out.stderr, 60)
        );
    }
    // Readers only ever see a complete binary.
    std::fs::rename(&tmp, &bin).with_context(|| format!("moving into {}", bin.display()))?;
    Ok(bin)
}

/// helm 3 (tests/testbed/tools.sh helm: built from the Go module proxy, cached).
pub fn helm() -> Result<PathBuf> {
    testbed_tool("helm")
}

/// h2spec, the HTTP/2 conformance suite (tests/testbed/tools.sh h2spec: built from the Go
/// module proxy with its dependencies pinned, cached).
pub fn h2spec() -> Result<PathBuf> {
    testbed_tool("h2spec")
}

/// kubelogin as `kubectl-oidc_login`, the `kubectl oidc-login` exec credential plugin
/// (tests/testbed/tools.sh kubelogin: built from the Go module proxy, cached).
pub fn kubelogin() -> Result<PathBuf> {
    testbed_tool("kubelogin")
}

/// A Python with prometheus_client from PyPI (tests/testbed/tools.sh pyprom: a cached venv),
/// the metering test's Prometheus exposition parser.
pub fn pyprom() -> Result<PathBuf> {
    testbed_tool("pyprom")
}

fn testbed_tool(name: &str) -> Result<PathBuf> {
    let mut cmd = Command::new("bash");
    cmd.arg(testbed_scripts().join("tools.sh")).arg(name);
    let out = process::run(&mut cmd, None, Duration::from_secs(30 * 60))?;
    if !out.success() {
        bail!(
            "tests/testbed/tools.sh {name} failed (exit {:?}):\n{}",
            out.code,
            tail_lines(&out.stderr, 40)
        );
    }
    let path = PathBuf::from(out.stdout.trim());
    if !path.is_file() {
        bail!("tools.sh printed {path:?}, which is not a file");
    }
    Ok(path)
}

/// The Python client (`kubernetes` from PyPI, pinned) in a venv under `target/py-kubernetes-<v>`,
/// created on first use with `python3 -m venv` and pip (PyPI is the only source); a venv left
/// half-made by an interrupted run (no `.installed` marker) is made again. Returns its python.
pub fn python_kubernetes() -> Result<PathBuf> {
    const VERSION: &str = "33.1.0";
    let venv = target_dir().join(format!("py-kubernetes-{VERSION}"));
    let python = venv.join("bin").join("python");
    let ready = venv.join(".installed");
    if ready.is_file() {
        return Ok(python);
    }
    let _ = std::fs::remove_dir_all(&venv);
    let run = |cmd: &mut Command, what: &str| -> Result<()> {
        let out = process::run(cmd, None, Duration::from_secs(10 * 60))?;
        if !out.success() {
            bail!(
                "{what} failed (exit {:?}):\n{}",
                out.code,
                tail_lines(&out.stderr, 40)
            );
        }
        Ok(())
    };
    run(
        Command::new("python3").arg("-m").arg("venv").arg(&venv),
        "python3 -m venv (Debian: apt-get install python3-venv)",
    )?;
    run(
        Command::new(venv.join("bin").join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("kubernetes=={VERSION}")),
        "pip install kubernetes",
    )?;
    std::fs::write(&ready, VERSION)?;
    Ok(python)
}
