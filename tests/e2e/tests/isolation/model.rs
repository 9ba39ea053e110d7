//! The case model: who runs a step, what a step expects, and which cases a run selects.

pub(crate) const A: &str = "alphaa";
pub(crate) const B: &str = "bravoo";
/// Names only the victim and the platform use: none may appear in an attacker's output
/// unless the attacker typed it itself.
pub(crate) const MARKERS: &[&str] = &[
    "bravoo",
    "vault-ns",
    "crown-jewels",
    "b-gadget",
    "b-role",
    "vaultitems",
    "plat-core",
    "plat-token",
    "plat-reader",
    "plat-hole",
    "b-pv",
];

/// Who runs a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Who {
    /// Tenant alphaa's admin through paddock.
    A,
    /// Tenant bravoo's admin through paddock.
    B,
    /// The upstream cluster admin (setup and checks only).
    Up,
    /// alphaa's impersonated identity straight at the apiserver (bypass).
    Bypass,
    /// A pod of alphaa (service account web/robot token) through paddock.
    ASaPaddock,
    /// The same token straight at the apiserver.
    ASaDirect,
    /// A platform service account's token through paddock.
    PlatSaPaddock,
    /// Tenant alphaa's user `ann` (group `auditors`, admin of `web`, not a tenant admin)
    /// through paddock: each user's own view.
    AUser,
    /// Tenant alphaa's admin through paddock, its requests carrying `X-Remote-User:
    /// system:admin`, `X-Remote-Group: system:masters` and `X-Remote-Extra-*` naming the
    /// victim (a header-adding forwarder in front of paddock: kubectl has no flag for them).
    AXRemote,
}

#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub(crate) who: Who,
    pub(crate) args: Vec<String>,
    pub(crate) stdin: Option<String>,
}

pub(crate) fn step(who: Who, args: &str) -> Step {
    Step {
        who,
        args: split(args),
        stdin: None,
    }
}

pub(crate) fn step_in(who: Who, args: &str, stdin: &str) -> Step {
    Step {
        who,
        args: split(args),
        stdin: Some(stdin.to_owned()),
    }
}

/// Splits on spaces; `'...'` keeps spaces (no escapes needed here).
pub(crate) fn split(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What the last step of an attack or control must show.
#[derive(Debug, Clone)]
pub(crate) enum Expect {
    /// Non-zero exit, and no marker of others in the output.
    Refused,
    /// Any exit, but no marker of others in the output (filtered reads).
    NoLeak,
    /// Non-zero exit with this text in the output.
    RefusedWith(&'static str),
    /// Exit 0.
    Ok,
    /// Exit 0 with this text in stdout.
    OkWith(&'static str),
    /// Exit 0 and stdout does not contain this text.
    OkWithout(&'static str),
    /// Exit 0 and stdout is this text (trimmed).
    OkExactly(&'static str),
    /// Any exit (a watch ended by its timeout), stdout contains this text.
    Shows(&'static str),
    /// Any exit (kubectl cordon exits 0 on a refused patch), the output says this
    /// (case-insensitive).
    Says(&'static str),
}

#[derive(Clone)]
pub(crate) struct Case {
    pub(crate) id: &'static str,
    /// MTB check ids and kubezoo-teardown §7.2 holes covered.
    pub(crate) covers: &'static str,
    pub(crate) what: &'static str,
    pub(crate) setup: Vec<Step>,
    pub(crate) attack: Vec<Step>,
    pub(crate) expect: Expect,
    pub(crate) control: Vec<Step>,
    pub(crate) control_expect: Expect,
    /// The attack with translation bypassed (upstream names), and why it must be refused
    /// (None: refusal required) or why getting through is harmless (Some(note)).
    pub(crate) bypass: Option<(Step, Option<&'static str>)>,
}

pub(crate) fn case(id: &'static str, covers: &'static str, what: &'static str) -> Case {
    Case {
        id,
        covers,
        what,
        setup: Vec::new(),
        attack: Vec::new(),
        expect: Expect::Refused,
        control: Vec::new(),
        control_expect: Expect::Ok,
        bypass: None,
    }
}

impl Case {
    pub(crate) fn setup(mut self, s: Step) -> Self {
        self.setup.push(s);
        self
    }
    pub(crate) fn attack(mut self, s: Step, e: Expect) -> Self {
        self.attack.push(s);
        self.expect = e;
        self
    }
    pub(crate) fn then(mut self, s: Step) -> Self {
        // A preparatory step of the attack (may succeed), before the decisive one.
        self.attack.push(s);
        self
    }
    pub(crate) fn control(mut self, s: Step, e: Expect) -> Self {
        self.control.push(s);
        self.control_expect = e;
        self
    }
    pub(crate) fn control_pre(mut self, s: Step) -> Self {
        self.control.push(s);
        self
    }
    pub(crate) fn bypass(mut self, s: Step) -> Self {
        self.bypass = Some((s, None));
        self
    }
    pub(crate) fn bypass_note(mut self, s: Step, note: &'static str) -> Self {
        self.bypass = Some((s, Some(note)));
        self
    }
}

pub(crate) fn selected(id: &str) -> bool {
    match std::env::var("PADDOCK_ISOLATION_CASES") {
        Ok(f) if !f.trim().is_empty() => f.split(',').any(|w| id.contains(w.trim())),
        _ => true,
    }
}

pub(crate) fn selected_all() -> bool {
    std::env::var("PADDOCK_ISOLATION_CASES").map_or(true, |v| v.trim().is_empty())
}
