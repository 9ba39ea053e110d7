//! k9s driven in tmux, directly (the upstream admin) and through
//! paddock (a tenant admin): its namespace view, the pods of all namespaces, and cluster-scoped
//! views (namespaces, nodes, ClusterRoles, CRDs). k9s asks a SelfSubjectAccessReview (protobuf)
//! before each view and shows "access denied" when told no; each screen must show the expected
//! rows and none of "access denied", "forbidden", "error".
//!
//! Not in `make test`: k9s is built from the Go module proxy (minutes, tests/testbed/tools.sh
//! k9s) and a terminal UI is read by polling its screen. `make test-k9s` runs it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use paddock_e2e::process;
use paddock_e2e::testbed::testbed_scripts;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};

const TENANT: &str = "k9stst";
const BAD: [&str; 3] = ["access denied", "forbidden", "Forbidden"];

fn k9s_binary() -> Result<PathBuf> {
    let mut cmd = Command::new("bash");
    cmd.arg(testbed_scripts().join("tools.sh")).arg("k9s");
    let out = process::run(&mut cmd, None, Duration::from_secs(30 * 60))?;
    if !out.success() {
        bail!("tools.sh k9s failed: {}", out.stderr);
    }
    Ok(PathBuf::from(out.stdout.trim()))
}

fn tmux(args: &[&str]) -> Result<String> {
    let out = Command::new("tmux")
        .args(args)
        .output()
        .context("running tmux")?;
    if !out.status.success() {
        bail!(
            "tmux {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One k9s in a tmux session of its own (own socket, config and XDG dirs).
struct Session {
    name: String,
}

impl Session {
    fn start(k9s: &Path, kubeconfig: &Path, dir: &Path, name: &str) -> Result<Self> {
        let cfg = dir.join("k9s-config");
        std::fs::create_dir_all(&cfg)?;
        std::fs::write(
            cfg.join("config.yaml"),
            "k9s:\n  skipLatestRevCheck: true\n  ui:\n    logoless: true\n    enableMouse: false\n",
        )?;
        let env = format!(
            "env -u KUBECONFIG K9S_CONFIG_DIR={c} XDG_CONFIG_HOME={c} XDG_DATA_HOME={c}/data XDG_STATE_HOME={c}/state XDG_CACHE_HOME={c}/cache TERM=xterm-256color",
            c = cfg.display()
        );
        let line = format!(
            "{env} {} --kubeconfig {} --namespace default",
            k9s.display(),
            kubeconfig.display()
        );
        let name = format!("paddock-{name}-{}", std::process::id());
        tmux(&[
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "220",
            "-y",
            "60",
            &line,
        ])?;
        let s = Session { name };
        s.wait_ready()?;
        Ok(s)
    }

    /// Keys typed before k9s has drawn its first view are lost (it takes seconds to start on a
    /// loaded machine): wait for its header and first table.
    fn wait_ready(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let s = self.screen()?;
            if s.contains("K8s Rev") && s.contains("pods(") {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("k9s did not start; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn screen(&self) -> Result<String> {
        tmux(&["capture-pane", "-p", "-t", &self.name])
    }

    fn keys(&self, keys: &[&str]) -> Result<()> {
        let mut args = vec!["send-keys", "-t", self.name.as_str()];
        args.extend_from_slice(keys);
        tmux(&args).map(|_| ())
    }

    /// Types a k9s command (`:ns`) and waits until the screen shows every one of `want` and
    /// none of [`BAD`] (bounded; a wrong screen fails with its content).
    /// Whether the screen shows `text` within `wait`.
    fn wait_for(&self, text: &str, wait: Duration) -> Result<bool> {
        let until = Instant::now() + wait;
        while Instant::now() < until {
            if self.screen()?.contains(text) {
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(false)
    }

    /// A keystroke k9s drops while busy redrawing is typed again: the command is re-sent
    /// every 10 s until the screen is right (bounded).
    fn view(&self, command: &str, extra_keys: &[&str], want: &[&str]) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // An Escape followed at once by `:` reads as Alt-`:` to the terminal library: wait,
            // then type `:` and only go on once the command prompt shows.
            self.keys(&["Escape"])?;
            std::thread::sleep(Duration::from_millis(1000));
            self.keys(&[":"])?;
            if !self.wait_for("🐶>", Duration::from_secs(3))? {
                if Instant::now() > deadline {
                    bail!(
                        "view {command}: no command prompt; screen:\n{}",
                        self.screen()?
                    );
                }
                continue;
            }
            self.keys(&[command, "Enter"])?;
            for k in extra_keys {
                std::thread::sleep(Duration::from_millis(1000));
                self.keys(&[k])?;
            }
            let retype = Instant::now() + Duration::from_secs(10);
            while Instant::now() < retype {
                let s = self.screen()?;
                let bad = BAD.iter().find(|b| s.contains(*b));
                if bad.is_none() && want.iter().all(|w| s.contains(w)) {
                    return Ok(());
                }
                if Instant::now() > deadline {
                    bail!("view {command}: expected {want:?}, no {BAD:?}; screen:\n{s}");
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = tmux(&["kill-session", "-t", &self.name]);
    }
}

fn scenario(k9s: &Path, kubeconfig: &Path, dir: &Path, name: &str) -> Result<()> {
    let s = Session::start(k9s, kubeconfig, dir, name)?;
    s.view("ns", &[], &["k9s-demo", "default"])?;
    s.view("pods", &["0"], &["k9s-demo", "web"])?;
    s.view("nodes", &[], &["kwok-node-0"])?;
    s.view("clusterroles", &[], &["cluster-admin", "k9s-reader"])?;
    // k9s 0.51 lists a CRD by its plural with the group in a column of its own.
    s.view("crds", &[], &["widgets", " k9s.example.com "])?;
    s.view("deploy", &["0"], &["k9s-demo", "web"])?;
    Ok(())
}

const OBJECTS: &str = r#"apiVersion: v1
kind: Namespace
metadata: {name: k9s-demo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: k9s-demo}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: registry.example/web:1}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: k9s-reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.k9s.example.com}
spec:
  group: k9s.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"#;

#[test]
#[ignore = "k9s is built from the Go module proxy (minutes); run with `make test-k9s`"]
fn k9s_views_directly_and_through_paddock() -> Result<()> {
    let k9s = k9s_binary()?;
    let cp = ControlPlane::start().context("starting the control plane")?;
    let paddock = Paddock::start(&cp, StoreKind::Etcd)?;
    let admin = cp.kubectl_admin()?;
    let tenant = paddock.kubectl_tenant(TENANT)?;
    for k in [&admin, &tenant] {
        k.run_stdin(&["apply", "-f", "-"], Some(OBJECTS))?;
    }
    let mut problems = Vec::new();
    let direct = scenario(
        &k9s,
        &cp.admin_kubeconfig(),
        &cp.dir().join("k9s-admin"),
        "direct",
    );
    if let Err(e) = &direct {
        problems.push(format!("directly: {e:#}"));
    }
    let through = scenario(
        &k9s,
        &paddock.tenant(TENANT)?,
        &cp.dir().join("k9s-tenant"),
        "tenant",
    );
    match (&direct, &through) {
        (Ok(()), Err(e)) => problems.push(format!("through paddock: {e:#}")),
        (Err(_), Err(e)) => eprintln!("through paddock (fails directly too): {e:#}"),
        _ => {}
    }
    eprintln!(
        "k9s: directly {}, through paddock {}",
        if direct.is_ok() { "pass" } else { "FAIL" },
        if through.is_ok() { "pass" } else { "FAIL" }
    );
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    Ok(())
}
