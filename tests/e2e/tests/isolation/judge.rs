//! Running steps and judging their outputs: leaks of others' names, expectations, tallies.

use super::*;

pub(crate) struct World {
    pub(crate) kc: BTreeMap<&'static str, Kubectl>,
    pub(crate) as_a: Vec<String>,
    /// Front-proxy mode: by apiserver key, the kubectl whose requests a forwarder sends on
    /// with the front-proxy certificate, the identity of its `--as` flags (`as_a`, and a
    /// step's own) asserted as `X-Remote-*` (`suite::front_proxy_bypass`); empty: the bypass
    /// impersonates.
    pub(crate) front_proxy: BTreeMap<&'static str, Kubectl>,
}

impl World {
    pub(crate) fn run(&self, s: &Step) -> Result<(String, Output)> {
        self.run_bypass_at("up", s)
    }

    /// Runs `s`; a `Who::Bypass` step goes straight at the apiserver whose admin is `bypass`.
    pub(crate) fn run_bypass_at(&self, bypass: &str, s: &Step) -> Result<(String, Output)> {
        let (key, extra): (&str, &[String]) = match s.who {
            Who::A => ("a", &[]),
            Who::B => ("b", &[]),
            Who::Up => ("up", &[]),
            // Front-proxy mode: the same flags, asserted as `X-Remote-*` by a forwarder.
            Who::Bypass if self.front_proxy.contains_key(bypass) => {
                return run_with(&self.front_proxy[bypass], &self.as_a, s);
            }
            Who::Bypass => (bypass, &self.as_a),
            Who::AXRemote => ("a-x-remote", &[]),
            Who::AUser => ("a-user", &[]),
            Who::ASaPaddock => ("a-sa-paddock", &[]),
            Who::ASaDirect => ("a-sa-direct", &[]),
            Who::PlatSaPaddock => ("plat-sa-paddock", &[]),
        };
        let k = self
            .kc
            .get(key)
            .with_context(|| format!("no kubectl {key}"))?;
        run_with(k, extra, s)
    }

    pub(crate) fn must(&self, s: &Step) -> Result<String> {
        let (line, out) = self.run(s)?;
        if !out.success() {
            bail!("setup step failed: {line}\n{}\n{}", out.stdout, out.stderr);
        }
        Ok(out.stdout)
    }
}

/// Runs `s` with kubectl `k`, `extra` flags first.
fn run_with(k: &Kubectl, extra: &[String], s: &Step) -> Result<(String, Output)> {
    let mut args: Vec<String> = extra.to_vec();
    args.extend(s.args.iter().cloned());
    k.run_raw(
        &args,
        s.stdin.as_deref(),
        &BTreeMap::new(),
        Some(Duration::from_secs(30)),
    )
}

/// Markers of others that appear in the output but not in what the attacker typed.
pub(crate) fn leaks(s: &Step, out: &Output) -> Vec<&'static str> {
    if s.who == Who::Up {
        // The platform admin's verification reads see everything by design.
        return Vec::new();
    }
    let typed = format!("{} {}", s.args.join(" "), s.stdin.as_deref().unwrap_or(""));
    let text = format!("{}\n{}", out.stdout, out.stderr);
    MARKERS
        .iter()
        .copied()
        .filter(|m| !typed.contains(m) && text.contains(m))
        .collect()
}

/// Judges the decisive step; Ok(()) when it does what `e` says.
pub(crate) fn judge(s: &Step, out: &Output, e: &Expect) -> std::result::Result<(), String> {
    let leaked = leaks(s, out);
    let text = format!("{}\n{}", out.stdout, out.stderr);
    let short = |t: &str| t.trim().lines().take(3).collect::<Vec<_>>().join(" | ");
    match e {
        Expect::Refused if out.success() => Err(format!("succeeded: {}", short(&out.stdout))),
        Expect::RefusedWith(_) if out.success() => {
            Err(format!("succeeded: {}", short(&out.stdout)))
        }
        Expect::RefusedWith(w) if !text.contains(w) => {
            Err(format!("refused without {w:?}: {}", short(&out.stderr)))
        }
        Expect::Ok | Expect::OkWith(_) | Expect::OkWithout(_) | Expect::OkExactly(_)
            if !out.success() =>
        {
            Err(format!("failed: {}", short(&out.stderr)))
        }
        Expect::OkWith(w) if !out.stdout.contains(w) => {
            Err(format!("output lacks {w:?}: {}", short(&out.stdout)))
        }
        Expect::OkWithout(w) if out.stdout.contains(w) => Err(format!("output contains {w:?}")),
        Expect::OkExactly(w) if out.stdout.trim() != *w => {
            Err(format!("output is not {w:?}: {}", short(&out.stdout)))
        }
        Expect::Shows(w) if !out.stdout.contains(w) => {
            Err(format!("output lacks {w:?}: {}", short(&text)))
        }
        Expect::Says(w) if !text.to_lowercase().contains(w) => {
            Err(format!("output does not say {w:?}: {}", short(&text)))
        }
        _ if !leaked.is_empty() => Err(format!("output names {leaked:?}: {}", short(&text))),
        _ => Ok(()),
    }
}

pub(crate) fn first_line(out: &Output) -> String {
    let t = if out.success() {
        &out.stdout
    } else {
        &out.stderr
    };
    let l = t.trim().lines().next().unwrap_or("").to_owned();
    if l.len() > 90 {
        format!(
            "{}…",
            &l[..l.char_indices().nth(88).map_or(l.len(), |(i, _)| i)]
        )
    } else {
        l
    }
}

pub(crate) fn wait_until(
    what: &str,
    timeout: Duration,
    f: impl FnMut() -> Result<bool>,
) -> Result<()> {
    paddock_e2e::process::poll_within(timeout, Duration::from_millis(500), what, f).map(drop)
}

#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) rows: Vec<String>,
    pub(crate) failures: Vec<String>,
    pub(crate) attacks: usize,
    pub(crate) attacks_held: usize,
    pub(crate) controls_ok: usize,
    pub(crate) bypass_total: usize,
    pub(crate) bypass_refused: usize,
    pub(crate) bypass_through: Vec<String>,
}
