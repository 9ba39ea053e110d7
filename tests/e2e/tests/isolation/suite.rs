//! The isolation suite's run, shared by the one-cluster suite (`isolation.rs`) and the
//! spanning one (`clusters_isolation.rs`): the world (platform, victim and attacker objects),
//! the attack table with controls, the bypass against every apiserver, the deletion test.

use super::*;

use std::path::{Path, PathBuf};

use paddock_e2e::forwarder::{Claims, Forwarder};
use paddock_upstream::upstream::{Upstream, UpstreamCredential};

/// Where the suite runs.
pub(crate) struct Arena<'a> {
    pub(crate) paddock: &'a Paddock,
    /// The admin of the apiserver the attacker's and victim's namespaces live on (`Who::Up`).
    pub(crate) up: Kubectl,
    /// That apiserver's admin kubeconfig (its server and CA: the pod token straight at it).
    pub(crate) direct_kubeconfig: PathBuf,
    /// Every apiserver the bypass runs against (key, its admin), the platform's objects on each.
    pub(crate) bypass_at: Vec<(&'static str, Kubectl)>,
    /// The cluster the world's tenant namespaces are placed on (`paddock.io/cluster`).
    pub(crate) place_on: Option<&'static str>,
    /// Cases after the shared table (the spanning surface).
    pub(crate) extra_cases: Vec<Case>,
    /// File name of the table under target/.
    pub(crate) report: &'static str,
    /// Front-proxy mode (paddock started with `upstream_identity_mode = "front-proxy"`): the
    /// front-proxy client certificate and key, with which the bypass at `up` asserts the
    /// attacker's identity as paddock does; None: the bypass impersonates it.
    pub(crate) front_proxy: Option<(PathBuf, PathBuf)>,
}

/// The front-proxy bypass: a forwarder to the apiserver of `kubeconfig` with the front-proxy
/// certificate, asserting the identity kubectl's `--as` flags name (the attacker's, as in the
/// impersonation bypass) as `X-Remote-*` headers.
fn front_proxy_bypass(kubeconfig: &Path, (cert, key): &(PathBuf, PathBuf)) -> Result<Forwarder> {
    let cred = UpstreamCredential::from_kubeconfig(kubeconfig)?;
    let up = Upstream::new(cred, Duration::from_secs(60))?
        .with_front_proxy(&std::fs::read(cert)?, &std::fs::read(key)?)?;
    Forwarder::start(up, Claims::FromClientImpersonation)
}

/// The front-proxy bypass gives the apiserver the identity the impersonation bypass does:
/// `auth whoami` with the same `--as` flags, both ways.
fn same_identity_both_ways(world: &World) -> Result<()> {
    let whoami = |k: &Kubectl| -> Result<serde_json::Value> {
        let mut args = world.as_a.clone();
        args.extend(["auth", "whoami", "-o", "json"].map(String::from));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let v: serde_json::Value = serde_json::from_str(&k.run(&refs)?)?;
        Ok(v["status"]["userInfo"].clone())
    };
    for (key, fp) in &world.front_proxy {
        let (imp, front) = (whoami(&world.kc[key])?, whoami(fp)?);
        if imp != front || front["username"] != "paddock:alphaa:admin" {
            bail!("the bypass at {key}: impersonated {imp}, as front proxy {front}");
        }
    }
    Ok(())
}

/// The attacker's own certificate through paddock, each request claiming to be the cluster's
/// admin, in `system:masters`, of the victim's tenant, in front-proxy headers.
fn x_remote_claims(tenant_kubeconfig: &Path) -> Result<Forwarder> {
    let cred = UpstreamCredential::from_kubeconfig(tenant_kubeconfig)?;
    let claims = [
        ("x-remote-user", "system:admin"),
        ("x-remote-group", "system:masters"),
        ("x-remote-group", "paddock:tenant:bravoo"),
        ("x-remote-extra-paddock.io%2ftenant", "bravoo"),
    ];
    Forwarder::start(
        Upstream::new(cred, Duration::from_secs(60))?,
        Claims::Add(
            claims
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
        ),
    )
}

impl Arena<'_> {
    /// The world's objects, their namespaces labelled with the cluster to place them on.
    pub(crate) fn placed(&self, objects: &str) -> String {
        let Some(c) = self.place_on else {
            return objects.to_owned();
        };
        objects
            .replace(
                "kind: Namespace\nmetadata: {name: vault-ns}",
                &format!("kind: Namespace\nmetadata: {{name: vault-ns, labels: {{paddock.io/cluster: {c}}}}}"),
            )
            .replace(
                "labels: {team: alpha}",
                &format!("labels: {{team: alpha, paddock.io/cluster: {c}}}"),
            )
    }
}

/// One bypass step straight at the apiserver of `key`; its cell of the table.
fn bypass_one(
    world: &World,
    t: &mut Tally,
    id: &str,
    key: &'static str,
    s: &Step,
    note: Option<&'static str>,
) -> Result<String> {
    t.bypass_total += 1;
    let (_, out) = world.run_bypass_at(key, s)?;
    if out.success() {
        let msg = format!(
            "{id} at {key}: `{}` got through: {}",
            s.args.join(" "),
            note.unwrap_or("NOT EXPECTED")
        );
        if note.is_none() {
            t.failures.push(format!("BYPASS GOT THROUGH {msg}"));
        }
        t.bypass_through.push(msg);
        Ok(format!(
            "{key}: through ({})",
            if note.is_some() {
                "harmless, see note"
            } else {
                "FAIL"
            }
        ))
    } else {
        t.bypass_refused += 1;
        Ok(format!(
            "{key}: refused: {}",
            first_line(&out).replace('|', "/")
        ))
    }
}

/// Runs the attack table (with `extra_cases` after it), the bypass against every apiserver of
/// `bypass_at`, and `deletion`; prints the table and fails naming every failed check.
pub(crate) fn run_suite(
    arena: &Arena<'_>,
    deletion: impl FnOnce() -> Result<String>,
) -> Result<()> {
    let paddock = arena.paddock;
    let up = arena.up.clone();
    let ka = paddock.kubectl_tenant(A)?;
    let kb = paddock.kubectl_tenant(B)?;
    // The victim may run privileged pods (pod_security_setting_cases); the attacker may not.
    paddock.cli(&[
        "tenant",
        "policy",
        B,
        "--patch",
        r#"{"podSecurity":"privileged"}"#,
    ])?;
    // The victim has a FlowSchema of its own (paddock's plumbing, which the attacker must not
    // read: policy_cases "apf-get-plumbing"); tenants without `apfFlow: tenant` have none.
    paddock.cli(&["tenant", "set-limits", B, "apfFlow=tenant"])?;

    // ---- the world ---------------------------------------------------------------------------
    for (_, k) in &arena.bypass_at {
        k.run_stdin(&["apply", "-f", "-"], Some(PLATFORM))?;
    }
    kb.run_stdin(
        &["apply", "-f", "-"],
        Some(&arena.placed(&victim_objects())),
    )?;
    ka.run_stdin(
        &["apply", "-f", "-"],
        Some(&arena.placed(&attacker_objects())),
    )?;
    let crd_ready = |k: &Kubectl| -> Result<bool> {
        let (_, o) = k.run_raw(&split("get gadgets -A"), None, &BTreeMap::new(), None)?;
        Ok(o.success())
    };
    wait_until("the gadgets CRDs", Duration::from_secs(60), || {
        Ok(crd_ready(&ka)? && crd_ready(&kb)?)
    })?;
    kb.run_stdin(&["apply", "-f", "-"], Some(&gadget("b-gadget", "vault-ns")))?;
    ka.run_stdin(&["apply", "-f", "-"], Some(&gadget("a-gadget", "web")))?;
    ka.run_stdin(
        &["create", "-n", "web", "-f", "-"],
        Some(&pod("a-pod", PLAIN, NOOP)),
    )?;
    kb.run_stdin(
        &["create", "-n", "vault-ns", "-f", "-"],
        Some(&pod("b-pod", PLAIN, NOOP)),
    )?;
    ka.run(&[
        "create",
        "rolebinding",
        "robot-view",
        "-n",
        "web",
        "--clusterrole=view",
        "--serviceaccount=web:robot",
    ])?;

    let dir = paddock.dir().join("isolation");
    std::fs::create_dir_all(&dir)?;
    let a_token = up
        .run(&[
            "create",
            "token",
            "robot",
            "-n",
            "alphaa-web",
            "--duration=1h",
        ])?
        .trim()
        .to_owned();
    let plat_token = up
        .run(&[
            "create",
            "token",
            "plat-sa",
            "-n",
            "plat-core",
            "--duration=1h",
        ])?
        .trim()
        .to_owned();
    let b_token = up
        .run(&[
            "create",
            "token",
            "b-sa",
            "-n",
            "bravoo-vault-ns",
            "--duration=1h",
        ])?
        .trim()
        .to_owned();
    let a_kc = paddock.tenant(A)?;
    let mut kc: BTreeMap<&'static str, Kubectl> = BTreeMap::new();
    let cache = |n: &str| paddock.dir().join("kubectl-cache").join(n);
    kc.insert("a", ka.clone());
    kc.insert("b", kb.clone());
    kc.insert("up", up.clone());
    kc.insert(
        "a-sa-paddock",
        Kubectl::new(token_kubeconfig(&dir, "a-sa-paddock", &a_kc, &a_token)?)?
            .cache_dir(cache("a-sa-paddock"))
            .log(paddock.log_path()),
    );
    kc.insert(
        "plat-sa-paddock",
        Kubectl::new(token_kubeconfig(
            &dir,
            "plat-sa-paddock",
            &a_kc,
            &plat_token,
        )?)?
        .cache_dir(cache("plat-sa-paddock")),
    );
    kc.insert(
        "a-sa-direct",
        Kubectl::new(token_kubeconfig(
            &dir,
            "a-sa-direct",
            &arena.direct_kubeconfig,
            &a_token,
        )?)?
        .cache_dir(cache("a-sa-direct")),
    );
    kc.insert(
        "a-user",
        paddock.kubectl_user(A, "ann", &["auditors".to_owned()])?,
    );
    for (key, k) in &arena.bypass_at {
        kc.insert(key, k.clone());
    }
    // Kept for the run: the forwarders stop when dropped.
    let x_remote = x_remote_claims(&a_kc)?;
    kc.insert(
        "a-x-remote",
        Kubectl::new(x_remote.kubeconfig(&dir, "a-x-remote")?)?.cache_dir(cache("a-x-remote")),
    );
    let mut front_proxy = BTreeMap::new();
    let bypass_fp = match &arena.front_proxy {
        Some(files) => {
            let f = front_proxy_bypass(&arena.direct_kubeconfig, files)?;
            front_proxy.insert(
                "up",
                Kubectl::new(f.kubeconfig(&dir, "bypass-front-proxy")?)?
                    .cache_dir(cache("bypass-front-proxy")),
            );
            Some(f)
        }
        None => None,
    };
    let world = World {
        front_proxy,
        kc,
        as_a: vec![
            "--as=paddock:alphaa:admin".into(),
            "--as-group=paddock:alphaa:tenant-admins".into(),
            "--as-group=paddock:tenant:alphaa".into(),
            "--as-group=system:authenticated".into(),
        ],
    };

    same_identity_both_ways(&world)?;

    // ---- attacks through paddock, with controls --------------------------------------------------
    let mut all = cases();
    // A tenant's TokenReview is asked of its home cluster only: tokens of its pods on another
    // cluster (the spanning suite places the world on `east`) are not that cluster's, so the
    // controls would not hold there (docs/security.md "TokenReviews").
    if arena.place_on.is_none() {
        all.extend(token_review_cases(&a_token, &b_token, &plat_token));
        all.extend(user_view_cases());
    }
    all.extend(arena.extra_cases.iter().cloned());
    let mut t = Tally::default();
    t.rows
        .push("| # | case | covers | attack | result | control | bypass |".to_owned());
    t.rows.push("|---|---|---|---|---|---|---|".into());
    for (i, c) in all.iter().enumerate() {
        for s in &c.setup {
            world.must(s).with_context(|| format!("case {}", c.id))?;
        }
        // Attack: every step but the last is preparation; the last decides.
        let mut attack_res = Err("no attack step".to_owned());
        let mut attack_line = String::new();
        for (j, s) in c.attack.iter().enumerate() {
            let (_, out) = world.run(s)?;
            if j + 1 < c.attack.len() {
                continue;
            }
            attack_line = first_line(&out);
            attack_res = judge(s, &out, &c.expect);
        }
        t.attacks += 1;
        let attack_ok = attack_res.is_ok();
        if attack_ok {
            t.attacks_held += 1;
        } else if let Err(e) = &attack_res {
            t.failures.push(format!("ATTACK GOT THROUGH {}: {e}", c.id));
        }
        // Control.
        let mut control_res = Err("no control step".to_owned());
        for (j, s) in c.control.iter().enumerate() {
            let (line, out) = world.run(s)?;
            if j + 1 < c.control.len() {
                if !out.success() {
                    control_res = Err(format!(
                        "control preparation failed: {line}: {}",
                        out.stderr.trim()
                    ));
                    break;
                }
                continue;
            }
            control_res = judge(s, &out, &c.control_expect);
        }
        if control_res.is_ok() {
            t.controls_ok += 1;
        } else if let Err(e) = &control_res {
            t.failures.push(format!("CONTROL FAILED {}: {e}", c.id));
        }
        // Bypass, straight at every apiserver.
        let bypass_cell = match &c.bypass {
            None => "n/a (gateway only)".to_owned(),
            Some((s, note)) => {
                let mut cells = Vec::new();
                for (key, _) in &arena.bypass_at {
                    cells.push(bypass_one(&world, &mut t, c.id, key, s, *note)?);
                }
                cells.join("; ")
            }
        };
        let attack_cmd = c
            .attack
            .last()
            .map(|s| s.args.join(" "))
            .unwrap_or_default();
        t.rows.push(format!(
            "| {} | {}: {} | {} | `{}` | {} | {} | {} |",
            i + 1,
            c.id,
            c.what,
            c.covers,
            attack_cmd.replace('|', "/"),
            match &attack_res {
                Ok(()) => format!("held: {}", attack_line.replace('|', "/")),
                Err(e) => format!("**GOT THROUGH**: {}", e.replace('|', "/")),
            },
            match &control_res {
                Ok(()) => "ok".to_owned(),
                Err(e) => format!("**FAILED**: {}", e.replace('|', "/")),
            },
            bypass_cell
        ));
    }

    // ---- deletion ------------------------------------------------------------------------------
    let deletion = deletion();
    drop((x_remote, bypass_fp));

    eprintln!("\n==== isolation cases ({} attack cases)\n", all.len());
    for r in &t.rows {
        eprintln!("{r}");
    }
    eprintln!(
        "\nattacks held: {}/{}; controls ok: {}/{}; bypass refused: {}/{}",
        t.attacks_held,
        t.attacks,
        t.controls_ok,
        all.len(),
        t.bypass_refused,
        t.bypass_total
    );
    for b in &t.bypass_through {
        eprintln!("bypass got through: {b}");
    }
    match &deletion {
        Ok(summary) => eprintln!("\n==== deletion: {summary}"),
        Err(e) => eprintln!("\n==== deletion FAILED: {e:#}"),
    }
    let report = workspace_root().join("target").join(arena.report);
    let _ = std::fs::write(&report, t.rows.join("\n") + "\n");
    eprintln!("table written to {}", report.display());
    if let Err(e) = &deletion {
        t.failures.push(format!("DELETION FAILED: {e:#}"));
    }
    if !t.failures.is_empty() {
        // The last lines name every failed check (CI shows only the tail).
        bail!(
            "{} isolation failure(s):\n{}",
            t.failures.len(),
            t.failures.join("\n")
        );
    }
    if selected_all() && all.len() < 60 {
        bail!(
            "only {} attack cases; the suite needs at least 60",
            all.len()
        );
    }
    Ok(())
}
