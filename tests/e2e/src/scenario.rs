//! Scenarios as data: `tests/e2e/scenarios/*.yaml`, one scenario per file.
//!
//! ```yaml
//! description: what it shows
//! tenants: [foofoo]            # created on first use with `paddock tenant create`
//! users: {alice: [devs]}        # users of the first tenant (`paddock user issue`), with groups
//! steps:
//!   - as: tenant                # tenant | tenant2 | <a tenant id> | <a user> | admin-upstream | paddock-admin
//!     run: get ns -o name       # kubectl arguments (a leading `kubectl` is allowed), shell-quoted
//!     stdin: |                  # optional, for `-f -`
//!       ...
//!     env: {KUBE_EDITOR: "..."} # optional extra environment
//!     expect:
//!       exit: 0                 # default 0; or "nonzero" / "any"
//!       stdout_contains: [...]
//!       stdout_not_contains: [...]
//!       stderr_contains: [...]
//!       stdout_equals: "..."    # after trimming
//!       stdout_lines: [...]     # exactly these non-empty lines, in any order
//!     eventually: 60            # retry (every second) until the expectation holds, at most 60 s
//!     timeout: 60               # kill the command after this many seconds (default 60)
//!   - paddock: tenant get foofoo   # the paddock admin CLI instead of kubectl
//!   - only: paddock             # run this step in one mode only (see `direct`)
//!     run: ...
//! cleanup:                      # always run after the steps, failures only reported
//!   - run: delete ns scratch --wait=false
//! direct: true                  # run twice: first straight at the apiserver as the upstream
//!                               # admin (`as: tenant` steps), then through paddock as the tenant
//! ```
//! `${tenant}`, `${tenant2}`, … and `${paddock_url}`, `${apiserver_url}` are substituted in
//! `run`, `paddock`, `stdin` and every expected string; `${mode}` is `direct` or `paddock`.
//!
//! A `direct` scenario is the proof that an expectation is what a cluster answers: the same
//! steps, with the same expectations, pass against the apiserver as its admin before they are
//! asked of paddock, so a failure is paddock's only when the direct run passes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::kubectl::Kubectl;
use crate::paddock::Paddock;
use crate::process::{Output, split_words};
use crate::testbed::ControlPlane;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(skip)]
    pub name: String,
    #[serde(skip)]
    pub file: PathBuf,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tenants: Vec<String>,
    /// Users of the first tenant (name -> groups), issued with `paddock user issue`;
    /// a step runs as one with `as: <name>`.
    #[serde(default)]
    pub users: BTreeMap<String, Vec<String>>,
    pub steps: Vec<Step>,
    #[serde(default)]
    pub cleanup: Vec<Step>,
    /// A reason to skip the scenario (kept in the file, reported as skipped).
    #[serde(default)]
    pub skip: Option<String>,
    /// Run the steps directly against the apiserver as its admin too (see the module docs).
    #[serde(default)]
    pub direct: bool,
}

/// Where a scenario's `as: tenant` steps go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Through paddock, as the tenant.
    Paddock,
    /// Straight at the apiserver, as the upstream admin.
    Direct,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Paddock => "paddock",
            Mode::Direct => "direct",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    #[serde(rename = "as", default)]
    pub who: Option<String>,
    #[serde(default)]
    pub run: Option<String>,
    #[serde(default)]
    pub paddock: Option<String>,
    #[serde(default)]
    pub stdin: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub expect: Expect,
    #[serde(default)]
    pub eventually: Option<u64>,
    #[serde(default)]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub note: Option<String>,
    /// `paddock` or `direct`: run this step in that mode only.
    #[serde(default)]
    pub only: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub exit: Option<ExitExpect>,
    #[serde(default)]
    pub stdout_contains: Vec<String>,
    #[serde(default)]
    pub stdout_not_contains: Vec<String>,
    #[serde(default)]
    pub stderr_contains: Vec<String>,
    #[serde(default)]
    pub stderr_not_contains: Vec<String>,
    #[serde(default)]
    pub stdout_equals: Option<String>,
    #[serde(default)]
    pub stdout_lines: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ExitExpect {
    Code(i32),
    Word(String),
}

/// Loads every `*.yaml` in `dir`, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    files.iter().map(|f| load_file(f)).collect()
}

pub fn load_file(file: &Path) -> Result<Scenario> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut s: Scenario = serde_norway::from_str(&text)
        .with_context(|| format!("parsing scenario {}", file.display()))?;
    s.name = file
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    s.file = file.to_path_buf();
    for (i, step) in s.steps.iter().chain(&s.cleanup).enumerate() {
        match (&step.run, &step.paddock) {
            (Some(_), None) | (None, Some(_)) => {}
            _ => bail!(
                "{}: step {} needs exactly one of `run` and `paddock`",
                file.display(),
                i + 1
            ),
        }
        if let Some(o) = &step.only
            && o != "paddock"
            && o != "direct"
        {
            bail!(
                "{}: step {}: only must be \"paddock\" or \"direct\"",
                file.display(),
                i + 1
            );
        }
        if let Some(ExitExpect::Word(w)) = &step.expect.exit
            && w != "nonzero"
            && w != "any"
        {
            bail!(
                "{}: step {}: exit must be a number, \"nonzero\" or \"any\"",
                file.display(),
                i + 1
            );
        }
    }
    Ok(s)
}

/// What a scenario did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub name: String,
    pub status: Status,
    pub steps_passed: usize,
    pub steps_total: usize,
    pub elapsed: Duration,
    /// The first failure (with command, output and paddock's log tail).
    pub failure: Option<String>,
    /// Problems in cleanup steps (reported, do not fail the scenario).
    pub cleanup_problems: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Passed,
    Failed,
    Skipped,
}

/// Where scenarios run: the control plane, and paddock if it came up.
pub struct Env<'a> {
    pub cp: &'a ControlPlane,
    pub paddock: Result<&'a Paddock, String>,
}

impl Env<'_> {
    fn vars(&self, sc: &Scenario, mode: Mode) -> BTreeMap<String, String> {
        let mut v = BTreeMap::new();
        v.insert("mode".to_owned(), mode.name().to_owned());
        for (i, t) in sc.tenants.iter().enumerate() {
            if i == 0 {
                v.insert("tenant".to_owned(), t.clone());
            }
            v.insert(format!("tenant{}", i + 1), t.clone());
        }
        if let Ok(p) = &self.paddock {
            v.insert("paddock_url".to_owned(), p.url().to_owned());
        }
        if let Ok(u) = self.cp.apiserver_url() {
            v.insert("apiserver_url".to_owned(), u.to_owned());
        }
        v
    }

    fn paddock(&self) -> Result<&Paddock> {
        self.paddock
            .as_ref()
            .map(|p| *p)
            .map_err(|e| anyhow::anyhow!("paddock is not running: {e}"))
    }

    fn kubectl_for(&self, sc: &Scenario, who: &str, mode: Mode) -> Result<Kubectl> {
        if mode == Mode::Direct {
            return match who {
                "tenant" | "admin-upstream" => self.cp.kubectl_admin(),
                _ => bail!("`as: {who}` has no direct form: mark the step `only: paddock`"),
            };
        }
        match who {
            "admin-upstream" => self.cp.kubectl_admin(),
            "paddock-admin" => self.paddock()?.kubectl_admin(),
            user if sc.users.contains_key(user) => {
                let id = sc
                    .tenants
                    .first()
                    .context("`users` need a tenant: list one in `tenants`")?;
                self.paddock()?.kubectl_user(id, user, &sc.users[user])
            }
            _ => {
                let id = if who == "tenant" {
                    sc.tenants.first().cloned()
                } else if let Some(n) = who.strip_prefix("tenant")
                    && let Ok(n) = n.parse::<usize>()
                {
                    sc.tenants.get(n.wrapping_sub(1)).cloned()
                } else if sc.tenants.iter().any(|t| t == who) {
                    Some(who.to_owned())
                } else {
                    None
                };
                let id = id.with_context(|| {
                    format!(
                        "`as: {who}` names no tenant of this scenario (tenants: {:?})",
                        sc.tenants
                    )
                })?;
                self.paddock()?.kubectl_tenant(&id)
            }
        }
    }

    /// Runs one scenario in every mode it asks for (through paddock; directly first when it
    /// says `direct: true`), one outcome per mode.
    pub fn run_all(&self, sc: &Scenario) -> Vec<Outcome> {
        if sc.direct {
            vec![
                self.run_in(sc, Mode::Direct),
                self.run_in(sc, Mode::Paddock),
            ]
        } else {
            vec![self.run_in(sc, Mode::Paddock)]
        }
    }

    /// Runs one scenario through paddock.
    pub fn run(&self, sc: &Scenario) -> Outcome {
        self.run_in(sc, Mode::Paddock)
    }

    /// Runs one scenario: its steps until the first failure, then always its cleanup steps.
    pub fn run_in(&self, sc: &Scenario, mode: Mode) -> Outcome {
        let t0 = Instant::now();
        let steps: Vec<&Step> = sc.steps.iter().filter(|s| s.runs_in(mode)).collect();
        let mut out = Outcome {
            name: if sc.direct {
                format!("{} [{}]", sc.name, mode.name())
            } else {
                sc.name.clone()
            },
            status: Status::Passed,
            steps_passed: 0,
            steps_total: steps.len(),
            elapsed: Duration::ZERO,
            failure: None,
            cleanup_problems: Vec::new(),
        };
        if let Some(why) = &sc.skip {
            out.status = Status::Skipped;
            out.failure = Some(why.clone());
            return out;
        }
        let vars = self.vars(sc, mode);
        for (i, step) in steps.iter().enumerate() {
            match self.run_step(sc, step, &vars, mode) {
                Ok(()) => out.steps_passed += 1,
                Err(e) => {
                    out.status = Status::Failed;
                    out.failure = Some(format!(
                        "step {}/{}{}: {e:#}",
                        i + 1,
                        steps.len(),
                        step.note
                            .as_ref()
                            .map(|n| format!(" ({n})"))
                            .unwrap_or_default()
                    ));
                    break;
                }
            }
        }
        for (i, step) in sc.cleanup.iter().filter(|s| s.runs_in(mode)).enumerate() {
            if let Err(e) = self.run_step(sc, step, &vars, mode) {
                out.cleanup_problems.push(format!(
                    "cleanup step {}: {}",
                    i + 1,
                    first_line(&format!("{e:#}"))
                ));
            }
        }
        out.elapsed = t0.elapsed();
        out
    }

    fn run_step(
        &self,
        sc: &Scenario,
        step: &Step,
        vars: &BTreeMap<String, String>,
        mode: Mode,
    ) -> Result<()> {
        let who = step.who.as_deref().unwrap_or("tenant");
        let timeout = Duration::from_secs(step.timeout.unwrap_or(60));
        let stdin = step.stdin.as_deref().map(|s| subst(s, vars)).transpose()?;
        let expect = step.expect.substituted(vars)?;
        let deadline = step
            .eventually
            .map(|s| Instant::now() + Duration::from_secs(s));
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let (line, out, reporter, shown_stdin) = if let Some(cli) = &step.paddock {
                let args = split_words(&subst(cli, vars)?)?;
                let args: Vec<String> = match args.first().map(String::as_str) {
                    Some("paddock") => args[1..].to_vec(),
                    _ => args,
                };
                let p = self.paddock()?;
                let (line, out) = p.cli_raw(&args, timeout)?;
                (line, out, p.kubectl_admin()?, None)
            } else {
                let run = step.run.as_deref().unwrap_or_default();
                let args = split_words(&subst(run, vars)?)?;
                let args: Vec<String> = match args.first().map(String::as_str) {
                    Some("kubectl") => args[1..].to_vec(),
                    _ => args,
                };
                let k = self.kubectl_for(sc, who, mode)?;
                let (line, out) = k.run_raw(&args, stdin.as_deref(), &step.env, Some(timeout))?;
                (line, out, k, stdin.as_deref())
            };
            match expect.check(&out) {
                Ok(()) => return Ok(()),
                Err(why) => {
                    if let Some(d) = deadline
                        && Instant::now() + Duration::from_secs(1) < d
                    {
                        std::thread::sleep(Duration::from_secs(1));
                        continue;
                    }
                    let why = if attempts > 1 {
                        format!("{why} (still so after {attempts} attempts)")
                    } else {
                        why
                    };
                    bail!(
                        "{}",
                        reporter.failure_report(&line, shown_stdin, &out, &why)
                    );
                }
            }
        }
    }
}

impl Step {
    fn runs_in(&self, mode: Mode) -> bool {
        self.only.as_deref().is_none_or(|o| o == mode.name())
    }
}

impl Expect {
    fn substituted(&self, vars: &BTreeMap<String, String>) -> Result<Expect> {
        let all = |v: &Vec<String>| v.iter().map(|s| subst(s, vars)).collect::<Result<Vec<_>>>();
        Ok(Expect {
            exit: self.exit.clone(),
            stdout_contains: all(&self.stdout_contains)?,
            stdout_not_contains: all(&self.stdout_not_contains)?,
            stderr_contains: all(&self.stderr_contains)?,
            stderr_not_contains: all(&self.stderr_not_contains)?,
            stdout_equals: self
                .stdout_equals
                .as_deref()
                .map(|s| subst(s, vars))
                .transpose()?,
            stdout_lines: self.stdout_lines.as_ref().map(all).transpose()?,
        })
    }

    /// `Ok` if `out` meets every expectation, else what did not hold.
    pub fn check(&self, out: &Output) -> std::result::Result<(), String> {
        let mut why = Vec::new();
        match &self.exit {
            None => {
                if out.code != Some(0) {
                    why.push("expected exit 0".to_owned());
                }
            }
            Some(ExitExpect::Code(c)) => {
                if out.code != Some(*c) {
                    why.push(format!("expected exit {c}"));
                }
            }
            Some(ExitExpect::Word(w)) if w == "nonzero" => {
                if out.code == Some(0) || out.timed_out {
                    why.push("expected a non-zero exit".to_owned());
                }
            }
            Some(ExitExpect::Word(_)) => {}
        }
        for s in &self.stdout_contains {
            if !out.stdout.contains(s.as_str()) {
                why.push(format!("stdout does not contain {s:?}"));
            }
        }
        for s in &self.stdout_not_contains {
            if out.stdout.contains(s.as_str()) {
                why.push(format!("stdout contains {s:?}"));
            }
        }
        for s in &self.stderr_contains {
            if !out.stderr.contains(s.as_str()) {
                why.push(format!("stderr does not contain {s:?}"));
            }
        }
        for s in &self.stderr_not_contains {
            if out.stderr.contains(s.as_str()) {
                why.push(format!("stderr contains {s:?}"));
            }
        }
        if let Some(e) = &self.stdout_equals
            && out.stdout.trim() != e.trim()
        {
            why.push(format!("stdout is not {:?}", e.trim()));
        }
        if let Some(lines) = &self.stdout_lines {
            let mut want: Vec<&str> = lines.iter().map(|l| l.trim()).collect();
            let mut got: Vec<&str> = out
                .stdout
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            want.sort_unstable();
            got.sort_unstable();
            if want != got {
                why.push(format!(
                    "stdout lines are {got:?}, expected exactly {want:?}"
                ));
            }
        }
        if why.is_empty() {
            Ok(())
        } else {
            Err(why.join("; "))
        }
    }
}

/// Replaces `${name}` with `vars[name]`; an unknown name is an error.
pub fn subst(s: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after
            .find('}')
            .with_context(|| format!("unterminated ${{ in {s:?}"))?;
        let name = &after[..end];
        let v = vars
            .get(name)
            .with_context(|| format!("unknown variable ${{{name}}} in {s:?}"))?;
        out.push_str(v);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().to_owned()
}

/// Prints a one-line-per-scenario summary; returns the number that failed.
pub fn print_summary(outcomes: &[Outcome]) -> usize {
    let mut failed = 0;
    eprintln!("\n==== paddock e2e scenarios ====");
    for o in outcomes {
        let tag = match o.status {
            Status::Passed => "PASS",
            Status::Failed => {
                failed += 1;
                "FAIL"
            }
            Status::Skipped => "SKIP",
        };
        let detail = match o.status {
            Status::Failed | Status::Skipped => o
                .failure
                .as_deref()
                .map(|f| format!("  — {}", first_line(f)))
                .unwrap_or_default(),
            Status::Passed => String::new(),
        };
        eprintln!(
            "{tag}  {:<28} {:>2}/{:<2} steps {:>6.1}s{detail}",
            o.name,
            o.steps_passed,
            o.steps_total,
            o.elapsed.as_secs_f64()
        );
        for c in &o.cleanup_problems {
            eprintln!("        ({c})");
        }
    }
    let passed = outcomes
        .iter()
        .filter(|o| o.status == Status::Passed)
        .count();
    let skipped = outcomes
        .iter()
        .filter(|o| o.status == Status::Skipped)
        .count();
    eprintln!(
        "==== {passed} passed, {failed} failed, {skipped} skipped of {} scenarios ====",
        outcomes.len()
    );
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, stdout: &str) -> Output {
        Output {
            code: Some(code),
            stdout: stdout.to_owned(),
            stderr: String::new(),
            timed_out: false,
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn expectations() {
        let e = Expect {
            stdout_lines: Some(vec!["namespace/b".into(), "namespace/a".into()]),
            stdout_not_contains: vec!["foofoo-".into()],
            ..Expect::default()
        };
        assert!(e.check(&out(0, "namespace/a\nnamespace/b\n")).is_ok());
        assert!(e.check(&out(0, "namespace/a\n")).is_err());
        assert!(e.check(&out(1, "namespace/a\nnamespace/b\n")).is_err());
        let nz = Expect {
            exit: Some(ExitExpect::Word("nonzero".into())),
            ..Expect::default()
        };
        assert!(nz.check(&out(1, "")).is_ok());
        assert!(nz.check(&out(0, "")).is_err());
    }

    #[test]
    fn substitution() -> Result<()> {
        let mut v = BTreeMap::new();
        v.insert("tenant".to_owned(), "foofoo".to_owned());
        assert_eq!(
            subst("get ns ${tenant}-default", &v)?,
            "get ns foofoo-default"
        );
        assert!(subst("${nope}", &v).is_err());
        Ok(())
    }

    #[test]
    fn scenario_files_parse() -> Result<()> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let all = load_dir(&dir)?;
        assert!(!all.is_empty());
        Ok(())
    }
}
