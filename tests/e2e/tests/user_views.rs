//! Each user's own view (issue 40 acceptance 2; docs/security.md "Each user's own view").
//!
//! Tenant `viewsa` has five namespaces with a pod each; user alice (group `devs`, a
//! certificate from `paddock user issue`) is bound in two of them (`n1` by user, `n2` by
//! group), bob in none. Through paddock: `get ns`, `get ns -w` (a namespace bound later
//! appears, one unbound disappears; how long each took is measured), `get pods -A` and `get
//! pods -A -w` show exactly alice's namespaces; bob gets empty lists, never a 403; `auth
//! whoami` and `auth can-i --list` answer as the apiserver does for the identity paddock
//! asserts. Each scenario also runs straight at the apiserver as that identity (`--as` /
//! `--as-group` built from paddock's own impersonation headers), printed beside paddock's
//! answer: there the cluster's own answer is a 403.
//!
//! Attack cases, each with a positive control: alice's identity bound by upstream name in
//! another tenant's namespace and in a platform namespace (effective straight at the
//! apiserver, invisible through paddock); the other tenant's own `alice` and group `devs` (its
//! alice sees them, ours never); a certificate group naming the other tenant's group. The
//! tenant admin's answers are unchanged, and the apiserver's bill is counted (rules reviews
//! per `get ns`, none for an admin, none while nobody asks). About 90 s.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use paddock_core::TenantId;
use paddock_core::identity::As;
use paddock_e2e::identity_check::as_flags;
use paddock_e2e::process::Output;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

const T: &str = "viewsa";
const OTHER: &str = "viewsb";
const NAMESPACES: [&str; 5] = ["n1", "n2", "n3", "n4", "n5"];
const IMAGE: &str = "--image=registry.example/app:1";
const SHORT: Duration = Duration::from_secs(30);
/// Words only another tenant or the platform uses: never in alice's output.
const LEAK_WORDS: [&str; 4] = ["plat-views", "plat-pod", "other-pod", OTHER];

/// The test bed: paddock, the clients, and the checks so far.
struct Bed {
    p: Paddock,
    admin: Kubectl,
    up: Kubectl,
    alice: Kubectl,
    bob: Kubectl,
    /// alice's and bob's identities straight at the apiserver.
    alice_up: Vec<String>,
    bob_up: Vec<String>,
    failed: Vec<String>,
    passed: usize,
}

impl Bed {
    fn check(&mut self, what: &str, ok: bool, detail: impl std::fmt::Display) {
        println!("  [{}] {what}: {detail}", if ok { "ok" } else { "FAIL" });
        if ok {
            self.passed += 1;
        } else {
            self.failed.push(format!("{what}: {detail}"));
        }
    }
}

fn run(k: &Kubectl, args: &[&str], up_as: &[String], timeout: Duration) -> Result<Output> {
    let mut a: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    a.extend(up_as.iter().cloned());
    Ok(k.run_raw(&a, None, &BTreeMap::new(), Some(timeout))?.1)
}

/// The first `n` columns of each row of kubectl's table output, headers skipped (a watch
/// prints one again when the columns widen).
fn rows(out: &str, n: usize) -> BTreeSet<String> {
    out.lines()
        .filter(|l| !l.starts_with("NAME") && !l.starts_with("EVENT"))
        .map(|l| l.split_whitespace().take(n).collect::<Vec<_>>().join(" "))
        .filter(|r| !r.is_empty())
        .collect()
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// A refusal as kubectl shows it: exit non-zero and the apiserver's "forbidden".
fn forbidden(o: &Output) -> bool {
    !o.success() && o.stderr.contains("forbidden")
}

/// One line for the side-by-side table: exit and the gist of the output.
fn gist(o: &Output) -> String {
    let text = if o.success() { &o.stdout } else { &o.stderr };
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let short: String = one.chars().take(110).collect();
    format!("exit {} | {short}", o.code.unwrap_or(-1))
}

fn side_by_side(what: &str, through: &Output, direct: &Output) {
    println!(
        "  {what}\n    through paddock : {}\n    straight at API : {}",
        gist(through),
        gist(direct)
    );
}

fn ns_of(k: &Kubectl) -> Result<(Output, BTreeSet<String>)> {
    let o = run(k, &["get", "ns"], &[], SHORT)?;
    let names = rows(&o.stdout, 1);
    Ok((o, names))
}

fn pods_of(k: &Kubectl) -> Result<(Output, BTreeSet<String>)> {
    let o = run(k, &["get", "pods", "-A"], &[], SHORT)?;
    let names = rows(&o.stdout, 2);
    Ok((o, names))
}

/// Five namespaces of the tenant with a pod each, two of the other tenant with its own alice
/// and devs bound, and our alice's upstream identity bound by the platform outside the tenant.
fn set_up(p: &Paddock, admin: &Kubectl, up: &Kubectl) -> Result<()> {
    let other = p.kubectl_tenant(OTHER)?;
    for ns in NAMESPACES {
        admin.run(&["create", "namespace", ns])?;
        admin.run(&["run", &format!("pod-{ns}"), IMAGE, "-n", ns])?;
    }
    for ns in ["n1", "n3"] {
        other.run(&["create", "namespace", ns])?;
        other.run(&["run", &format!("other-pod-{ns}"), IMAGE, "-n", ns])?;
    }
    let view = "--clusterrole=view";
    other.run(&[
        "create",
        "rolebinding",
        "b-alice",
        view,
        "--user=alice",
        "-n",
        "n3",
    ])?;
    other.run(&[
        "create",
        "rolebinding",
        "b-devs",
        view,
        "--group=devs",
        "-n",
        "n1",
    ])?;
    up.run(&["create", "namespace", "plat-views"])?;
    up.run(&["run", "plat-pod", IMAGE, "-n", "plat-views"])?;
    let ours = format!("--user=paddock:{T}:alice");
    for ns in [format!("{OTHER}-n3"), "plat-views".to_owned()] {
        up.run(&["create", "rolebinding", "leak", view, &ours, "-n", &ns])?;
    }
    admin.run(&[
        "create",
        "rolebinding",
        "alice-n1",
        view,
        "--user=alice",
        "-n",
        "n1",
    ])?;
    admin.run(&[
        "create",
        "rolebinding",
        "devs-n2",
        view,
        "--group=devs",
        "-n",
        "n2",
    ])?;
    Ok(())
}

#[test]
fn each_user_sees_its_own_namespaces_and_objects() -> Result<()> {
    let cp = ControlPlane::start()?;
    let p = Paddock::start(&cp, StoreKind::Embedded)?;
    let admin = p.kubectl_tenant(T)?;
    let up = cp.kubectl_admin()?;
    let t0 = Instant::now();
    set_up(&p, &admin, &up)?;
    println!("set-up: {:.1} s", t0.elapsed().as_secs_f64());
    let devs = vec!["devs".to_owned()];
    let tid = TenantId::parse(T).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut bed = Bed {
        alice: p.kubectl_user(T, "alice", &devs)?,
        bob: p.kubectl_user(T, "bob", &[])?,
        alice_up: as_flags(&tid, "alice", &devs, As::Real)?,
        bob_up: as_flags(&tid, "bob", &[], As::Real)?,
        p,
        admin,
        up,
        failed: Vec::new(),
        passed: 0,
    };
    let (a_names, a_pods) = lists(&mut bed)?;
    attacks(&mut bed, &a_names, &a_pods)?;
    pods_watch(&mut bed)?;
    namespaces_watch(&mut bed)?;
    whoami_and_can_i(&mut bed)?;
    admin_unchanged(&mut bed)?;
    bill(&mut bed)?;
    println!(
        "\n{} checks passed, {} failed, {:.0} s",
        bed.passed,
        bed.failed.len(),
        t0.elapsed().as_secs_f64()
    );
    if !bed.failed.is_empty() {
        bail!(
            "{} checks failed:\n  {}",
            bed.failed.len(),
            bed.failed.join("\n  ")
        );
    }
    Ok(())
}

/// `get ns` and `get pods -A` for alice and bob, through paddock and straight at the
/// apiserver; alice's namespace and pod rows.
fn lists(bed: &mut Bed) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    println!("\n== get ns, get pods -A: through paddock and straight at the apiserver ==");
    // The RoleBindings were written a moment ago: the apiserver's authorizer may lag them.
    let settle = Instant::now();
    paddock_e2e::process::poll_within(
        Duration::from_secs(15),
        Duration::from_millis(500),
        "alice's view of n1 and n2",
        || Ok(ns_of(&bed.alice)?.1 == set(&["n1", "n2"])),
    )?;
    println!(
        "  alice's view complete {:.1} s after her second RoleBinding",
        settle.elapsed().as_secs_f64()
    );
    let (a_ns, a_names) = ns_of(&bed.alice)?;
    let d_ns = run(&bed.up, &["get", "ns"], &bed.alice_up, SHORT)?;
    side_by_side("alice: get ns", &a_ns, &d_ns);
    let exact = a_ns.success() && a_names == set(&["n1", "n2"]);
    bed.check(
        "alice: get ns lists exactly n1 and n2",
        exact,
        format!("{a_names:?}"),
    );
    bed.check(
        "alice straight at the apiserver: get ns 403",
        forbidden(&d_ns),
        gist(&d_ns),
    );
    let (a_pods, a_rows) = pods_of(&bed.alice)?;
    let d_pods = run(&bed.up, &["get", "pods", "-A"], &bed.alice_up, SHORT)?;
    side_by_side("alice: get pods -A", &a_pods, &d_pods);
    let exact = a_pods.success() && a_rows == set(&["n1 pod-n1", "n2 pod-n2"]);
    bed.check(
        "alice: get pods -A shows n1's and n2's pods only",
        exact,
        format!("{a_rows:?}"),
    );
    bed.check(
        "alice straight at the apiserver: get pods -A 403",
        forbidden(&d_pods),
        gist(&d_pods),
    );
    for (what, args) in [
        ("get ns", vec!["get", "ns"]),
        ("get pods -A", vec!["get", "pods", "-A"]),
    ] {
        let b = run(&bed.bob, &args, &[], SHORT)?;
        let d = run(&bed.up, &args, &bed.bob_up, SHORT)?;
        side_by_side(&format!("bob (no binding): {what}"), &b, &d);
        let empty =
            b.success() && b.stdout.trim().is_empty() && b.stderr.contains("No resources found");
        bed.check(
            &format!("bob: {what} is an empty list, not a 403"),
            empty,
            gist(&b),
        );
        bed.check(
            &format!("bob straight at the apiserver: {what} 403"),
            forbidden(&d),
            gist(&d),
        );
    }
    let shown = format!(
        "{}{}{}{}",
        a_ns.stdout, a_ns.stderr, a_pods.stdout, a_pods.stderr
    );
    bed.check(
        "alice's lists name nothing of the other tenant or the platform",
        !LEAK_WORDS.iter().any(|w| shown.contains(w)),
        "checked for plat-views, plat-pod, other-pod, viewsb",
    );
    Ok((a_names, a_rows))
}

/// The attacks, each with its positive control.
fn attacks(bed: &mut Bed, a_names: &BTreeSet<String>, a_pods: &BTreeSet<String>) -> Result<()> {
    println!("\n== attacks, each with its control ==");
    let places = [
        (
            "another tenant's namespace",
            format!("{OTHER}-n3"),
            "other-pod-n3",
        ),
        ("a platform namespace", "plat-views".to_owned(), "plat-pod"),
    ];
    for (what, ns, pod) in places {
        let control = run(&bed.up, &["get", "pods", "-n", &ns], &bed.alice_up, SHORT)?;
        bed.check(
            &format!("alice bound by upstream name in {what}: never in her view"),
            a_names == &set(&["n1", "n2"]) && control.success() && control.stdout.contains(pod),
            format!(
                "view {a_names:?} / pods {a_pods:?}; control straight at the apiserver: {}",
                gist(&control)
            ),
        );
    }
    let devs = vec!["devs".to_owned()];
    let b_alice = bed.p.kubectl_user(OTHER, "alice", &devs)?;
    let (_, b_names) = ns_of(&b_alice)?;
    bed.check(
        "the other tenant's alice and devs: its alice sees its n1 and n3, ours sees neither",
        b_names == set(&["n1", "n3"]) && a_names == &set(&["n1", "n2"]),
        format!("{OTHER}'s alice {b_names:?}, {T}'s alice {a_names:?}"),
    );
    let named_like = vec![format!("paddock:{OTHER}:devs"), format!("{OTHER}-devs")];
    match bed.p.kubectl_user(T, "mallory", &named_like) {
        Ok(mallory) => {
            let (m_ns, m_names) = ns_of(&mallory)?;
            let (m_pods, m_rows) = pods_of(&mallory)?;
            bed.check(
                "a certificate naming the other tenant's group devs: nothing of it in the view",
                m_ns.success()
                    && m_names.is_empty()
                    && m_pods.success()
                    && m_rows.is_empty()
                    && b_names.contains("n1"),
                format!("ns {m_names:?}, pods {m_rows:?}; control: {OTHER}'s devs see {b_names:?}"),
            );
        }
        Err(e) => {
            let first = format!("{e:#}")
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
            bed.check(
                "a certificate naming the other tenant's group: refused at issue",
                true,
                first,
            );
        }
    }
    Ok(())
}

/// Runs kubectl with `args` (a watch ending by its `--request-timeout`) while `during` runs
/// 3 s after it started; every output line with the time it came, from `during`'s end.
fn timed_watch(
    k: &Kubectl,
    args: &[&str],
    during: impl FnOnce() -> Result<()>,
) -> Result<(Vec<(f64, String)>, String)> {
    let mut child = std::process::Command::new(k.bin())
        .arg(format!("--kubeconfig={}", k.kubeconfig().display()))
        .args(args)
        .env_remove("KUBECONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("starting kubectl")?;
    let stdout = child.stdout.take().context("kubectl stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send((Instant::now(), line));
        }
    });
    std::thread::sleep(Duration::from_secs(3));
    let done = during();
    let changed = Instant::now();
    let out = child.wait_with_output().context("waiting for kubectl")?;
    let _ = reader.join();
    done?;
    let lines = rx
        .try_iter()
        .map(|(at, l)| {
            let secs = at.saturating_duration_since(changed).as_secs_f64()
                - changed.saturating_duration_since(at).as_secs_f64();
            (secs, l)
        })
        .collect();
    Ok((lines, String::from_utf8_lossy(&out.stderr).into_owned()))
}

/// `get pods -A -w`: alice's namespaces only, a pod created in one of them arrives, one in
/// another never; bob's watch stays open and empty.
fn pods_watch(bed: &mut Bed) -> Result<()> {
    println!("\n== get pods -A -w: alice's namespaces only; bob's watch open and empty ==");
    let args = [
        "get",
        "pods",
        "-A",
        "-w",
        "--output-watch-events",
        "--request-timeout=12s",
    ];
    let (a_lines, b_watch) = std::thread::scope(|s| -> Result<_> {
        let b = s.spawn(|| run(&bed.bob, &args, &[], SHORT));
        let a = timed_watch(&bed.alice, &args, || {
            bed.admin.run(&["run", "late-n2", IMAGE, "-n", "n2"])?;
            bed.admin.run(&["run", "late-n4", IMAGE, "-n", "n4"])?;
            Ok(())
        })?;
        let b = b
            .join()
            .map_err(|_| anyhow::anyhow!("bob's watch panicked"))??;
        Ok((a, b))
    })?;
    let text: String = a_lines.0.iter().map(|(_, l)| format!("{l}\n")).collect();
    let events = rows(&text, 3);
    let d_watch = run(
        &bed.up,
        &["get", "pods", "-A", "-w", "--request-timeout=3s"],
        &bed.alice_up,
        SHORT,
    )?;
    println!(
        "    through paddock : {events:?}\n    straight at API : {}",
        gist(&d_watch)
    );
    let seen = |ns: &str, pod: &str| events.iter().any(|r| r.ends_with(&format!("{ns} {pod}")));
    let late = a_lines
        .0
        .iter()
        .find(|(_, l)| l.contains("late-n2"))
        .map(|(t, _)| *t);
    bed.check(
        "alice: -A -w shows n1's and n2's pods and one created in n2, nothing of n4",
        seen("n1", "pod-n1")
            && seen("n2", "pod-n2")
            && seen("n2", "late-n2")
            && !text.contains("n4")
            && !LEAK_WORDS.iter().any(|w| text.contains(w)),
        format!("late-n2 shown {late:?} s from the return of the second create (late-n4's)"),
    );
    bed.check(
        "alice straight at the apiserver: -A -w 403",
        forbidden(&d_watch),
        gist(&d_watch),
    );
    let quiet = rows(&b_watch.stdout, 3).is_empty() && !b_watch.stderr.contains("forbidden");
    bed.check(
        "bob: -A -w open, nothing shown, no 403",
        quiet,
        gist(&b_watch),
    );
    Ok(())
}

/// `get ns -w`: n3 bound while watching appears, n1 unbound disappears; each measured.
fn namespaces_watch(bed: &mut Bed) -> Result<()> {
    println!("\n== get ns -w: n3 bound while watching appears, n1 unbound disappears ==");
    let args = [
        "get",
        "ns",
        "-w",
        "--output-watch-events",
        "--request-timeout=20s",
    ];
    let view = "--clusterrole=view";
    let (lines, _) = timed_watch(&bed.alice, &args, || {
        bed.admin.run(&[
            "create",
            "rolebinding",
            "alice-n3",
            view,
            "--user=alice",
            "-n",
            "n3",
        ])?;
        bed.admin
            .run(&["delete", "rolebinding", "alice-n1", "-n", "n1"])?;
        Ok(())
    })?;
    let d_watch = run(
        &bed.up,
        &["get", "ns", "-w", "--request-timeout=3s"],
        &bed.alice_up,
        SHORT,
    )?;
    let events: Vec<(f64, String)> = lines
        .iter()
        .filter(|(_, l)| !l.starts_with("EVENT"))
        .map(|(t, l)| {
            (
                *t,
                l.split_whitespace().take(2).collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    println!(
        "    through paddock : {events:?} (s after the change)\n    straight at API : {}",
        gist(&d_watch)
    );
    let names: Vec<&str> = events.iter().map(|(_, e)| e.as_str()).collect();
    let at = |e: &str| events.iter().find(|(_, x)| x == e).map(|(t, _)| *t);
    bed.check(
        "alice: get ns -w shows n1, n2, then n3 ADDED and n1 DELETED, nothing else",
        names == ["ADDED n1", "ADDED n2", "ADDED n3", "DELETED n1"]
            || names == ["ADDED n1", "ADDED n2", "DELETED n1", "ADDED n3"],
        format!(
            "ADDED n3 {:.1?} s, DELETED n1 {:.1?} s after the change",
            at("ADDED n3"),
            at("DELETED n1")
        ),
    );
    bed.check(
        "alice straight at the apiserver: get ns -w 403",
        forbidden(&d_watch),
        gist(&d_watch),
    );
    let (_, after) = ns_of(&bed.alice)?;
    bed.check(
        "alice: get ns after the change lists n2 and n3",
        after == set(&["n2", "n3"]),
        format!("{after:?}"),
    );
    let (_, after_pods) = pods_of(&bed.alice)?;
    let want = set(&["n2 pod-n2", "n2 late-n2", "n3 pod-n3"]);
    bed.check(
        "alice: get pods -A after the change: n2's and n3's",
        after_pods == want,
        format!("{after_pods:?}"),
    );
    Ok(())
}

/// The user and groups of a `kubectl auth whoami -o json` answer.
fn user_of(o: &Output) -> (String, BTreeSet<String>) {
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_default();
    let groups = v["status"]["userInfo"]["groups"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|g| g.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let user = v["status"]["userInfo"]["username"]
        .as_str()
        .unwrap_or_default();
    (user.to_owned(), groups)
}

/// `auth whoami` and `auth can-i --list` through paddock against the apiserver's answers for
/// the asserted identity.
fn whoami_and_can_i(bed: &mut Bed) -> Result<()> {
    println!(
        "\n== auth whoami, auth can-i --list: as the apiserver answers the asserted identity =="
    );
    let who = run(&bed.alice, &["auth", "whoami", "-o", "json"], &[], SHORT)?;
    let d_who = run(
        &bed.up,
        &["auth", "whoami", "-o", "json"],
        &bed.alice_up,
        SHORT,
    )?;
    let (w_user, w_groups) = user_of(&who);
    let (d_user, d_groups) = user_of(&d_who);
    println!(
        "    through paddock : {w_user} {w_groups:?}\n    straight at API : {d_user} {d_groups:?}"
    );
    let prefix = format!("paddock:{T}:");
    let mapped_down: BTreeSet<String> = d_groups
        .iter()
        .filter(|g| !g.starts_with("paddock:tenant"))
        .map(|g| g.strip_prefix(&prefix).unwrap_or(g).to_owned())
        .collect();
    bed.check(
        "alice: whoami is the apiserver's answer in the tenant's names",
        w_user == "alice"
            && d_user == format!("{prefix}alice")
            && w_groups == mapped_down
            && w_groups == set(&["devs", "system:authenticated"]),
        format!("{w_user} {w_groups:?}"),
    );
    for ns in ["n2", "n4"] {
        let list = run(
            &bed.alice,
            &["auth", "can-i", "--list", "-n", ns],
            &[],
            SHORT,
        )?;
        let up_ns = format!("{T}-{ns}");
        let d_list = run(
            &bed.up,
            &["auth", "can-i", "--list", "-n", &up_ns],
            &bed.alice_up,
            SHORT,
        )?;
        side_by_side(&format!("alice: auth can-i --list -n {ns}"), &list, &d_list);
        let (l, d) = (rows(&list.stdout, 4), rows(&d_list.stdout, 4));
        let diff: Vec<_> = l.symmetric_difference(&d).collect();
        bed.check(
            &format!("alice: can-i --list -n {ns} is the apiserver's"),
            list.success() && l == d && !l.is_empty(),
            format!("{} rules each; differences {diff:?}", l.len()),
        );
    }
    Ok(())
}

/// The tenant admin's answers: every namespace, every pod.
fn admin_unchanged(bed: &mut Bed) -> Result<()> {
    println!("\n== the tenant admin's answers are unchanged ==");
    let (ad_ns, ad_names) = ns_of(&bed.admin)?;
    let (_, ad_pods) = pods_of(&bed.admin)?;
    bed.check(
        "admin: get ns lists every namespace of the tenant",
        ad_ns.success()
            && NAMESPACES.iter().all(|n| ad_names.contains(*n))
            && ad_names.contains("default"),
        format!("{ad_names:?}"),
    );
    bed.check(
        "admin: get pods -A lists all seven pods",
        ad_pods.len() == 7,
        format!("{ad_pods:?}"),
    );
    Ok(())
}

/// The apiserver's count of rules reviews (`apiserver_request_total`).
fn rules_reviews(up: &Kubectl) -> Result<f64> {
    let text = up.run(&["get", "--raw", "/metrics"])?;
    let mut n = 0.0;
    for line in text.lines() {
        if line.starts_with("apiserver_request_total{")
            && line.contains("resource=\"selfsubjectrulesreviews\"")
        {
            let (_, value) = line.rsplit_once("} ").context("metric line")?;
            n += value.trim().parse::<f64>()?;
        }
    }
    Ok(n)
}

/// What a user's view costs the apiserver: rules reviews per `get ns` (the tenant's namespaces
/// plus one), none for a repeat within the memory, none for an admin, none while idle.
fn bill(bed: &mut Bed) -> Result<()> {
    println!("\n== the apiserver's bill: rules reviews ==");
    let count = |b: &Bed| rules_reviews(&b.up);
    std::thread::sleep(Duration::from_secs(4));
    let n0 = count(bed)?;
    ns_of(&bed.admin)?;
    let n1 = count(bed)?;
    ns_of(&bed.alice)?;
    let n2 = count(bed)?;
    ns_of(&bed.alice)?;
    let n3 = count(bed)?;
    std::thread::sleep(Duration::from_secs(6));
    let n4 = count(bed)?;
    let (_, admin_names) = ns_of(&bed.admin)?;
    let tenant_namespaces = admin_names.len() as f64;
    bed.check(
        "bill: admin get ns 0 reviews; alice's first get ns one per namespace plus one, a repeat 0, idle 6 s 0",
        n1 - n0 == 0.0 && n2 - n1 == tenant_namespaces + 1.0 && n3 - n2 == 0.0 && n4 - n3 == 0.0,
        format!(
            "admin {}, alice {} (tenant of {tenant_namespaces} namespaces), repeat {}, idle {}",
            n1 - n0,
            n2 - n1,
            n3 - n2,
            n4 - n3
        ),
    );
    Ok(())
}
