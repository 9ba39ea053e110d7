//! Each user's own view (issue 40 acceptance 2; docs/security.md "Each user's own view").
//!
//! Tenant `viewsa` has five namespaces with a pod each; user alice (group `devs`, a
//! certificate from `paddock user issue`) is bound in two of them (`n1` by user, `n2` by
//! group), bob in none. Through paddock: `get ns`, `get ns -w` (a namespace bound later
//! appears, one unbound disappears), `get pods -A` and `get pods -A -w` show exactly alice's
//! namespaces; bob gets empty lists, never a 403; `auth whoami` and `auth can-i --list` answer
//! as the apiserver does for the identity paddock asserts. Each scenario also runs straight at
//! the apiserver as that identity (`--as`/`--as-group` built from paddock's own impersonation
//! headers), printed beside paddock's answer: there the cluster's own answer is a 403.
//! Attack cases, each with a positive control: alice's identity bound by upstream name in
//! another tenant's namespace and in a platform namespace (effective straight at the
//! apiserver, invisible through paddock); the other tenant's own `alice` and group `devs`
//! (its alice sees them, ours never); a certificate group naming the other tenant's group.
//! The tenant admin's answers are unchanged. About 90 s.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use paddock_core::TenantId;
use paddock_core::identity::As;
use paddock_e2e::identity_check::as_flags;
use paddock_e2e::process::Output;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

const T: &str = "viewsa";
const OTHER: &str = "viewsb";
const NAMESPACES: [&str; 5] = ["n1", "n2", "n3", "n4", "n5"];
const IMAGE: &str = "--image=registry.example/app:1";

#[derive(Default)]
struct Checks {
    failed: Vec<String>,
    passed: usize,
}

impl Checks {
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

/// The first `n` columns of each row of kubectl's table output, header skipped.
fn rows(out: &str, n: usize) -> BTreeSet<String> {
    out.lines()
        .skip(1)
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

/// Runs `args` for `timeout` in the background while `during` runs; the watch's output.
fn watch_while(
    k: &Kubectl,
    args: &[&str],
    timeout: Duration,
    during: impl FnOnce() -> Result<()>,
) -> Result<Output> {
    std::thread::scope(|s| {
        let w = s.spawn(|| run(k, args, &[], timeout + Duration::from_secs(20)));
        std::thread::sleep(Duration::from_secs(3));
        during()?;
        w.join()
            .map_err(|_| anyhow::anyhow!("the watch thread panicked"))?
    })
}

#[test]
fn each_user_sees_its_own_namespaces_and_objects() -> Result<()> {
    let cp = ControlPlane::start()?;
    let p = Paddock::start(&cp, StoreKind::Embedded)?;
    let admin = p.kubectl_tenant(T)?;
    let other = p.kubectl_tenant(OTHER)?;
    let up = cp.kubectl_admin()?;
    let t0 = Instant::now();
    for ns in NAMESPACES {
        admin.run(&["create", "namespace", ns])?;
        admin.run(&["run", &format!("pod-{ns}"), IMAGE, "-n", ns])?;
    }
    for ns in ["n1", "n3"] {
        other.run(&["create", "namespace", ns])?;
        other.run(&["run", &format!("other-pod-{ns}"), IMAGE, "-n", ns])?;
    }
    // The other tenant's own alice and group devs, bound in its namespaces.
    other.run(&[
        "create",
        "rolebinding",
        "b-alice",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "n3",
    ])?;
    other.run(&[
        "create",
        "rolebinding",
        "b-devs",
        "--clusterrole=view",
        "--group=devs",
        "-n",
        "n1",
    ])?;
    // The platform binds our alice's upstream identity by name outside the tenant.
    up.run(&["create", "namespace", "plat-views"])?;
    up.run(&["run", "plat-pod", IMAGE, "-n", "plat-views"])?;
    for ns in [format!("{OTHER}-n3"), "plat-views".to_owned()] {
        up.run(&[
            "create",
            "rolebinding",
            "leak",
            "--clusterrole=view",
            &format!("--user=paddock:{T}:alice"),
            "-n",
            &ns,
        ])?;
    }
    admin.run(&[
        "create",
        "rolebinding",
        "alice-n1",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "n1",
    ])?;
    admin.run(&[
        "create",
        "rolebinding",
        "devs-n2",
        "--clusterrole=view",
        "--group=devs",
        "-n",
        "n2",
    ])?;
    println!("set-up: {:.1} s", t0.elapsed().as_secs_f64());

    let devs = vec!["devs".to_owned()];
    let alice = p.kubectl_user(T, "alice", &devs)?;
    let bob = p.kubectl_user(T, "bob", &[])?;
    let tid = TenantId::parse(T).map_err(|e| anyhow::anyhow!("{e}"))?;
    let alice_up = as_flags(&tid, "alice", &devs, As::Real)?;
    let bob_up = as_flags(&tid, "bob", &[], As::Real)?;
    let short = Duration::from_secs(30);
    let mut c = Checks::default();

    println!("\n== get ns, get pods -A: through paddock and straight at the apiserver ==");
    let ns_of = |k: &Kubectl| -> Result<(Output, BTreeSet<String>)> {
        let o = run(k, &["get", "ns"], &[], short)?;
        let names = rows(&o.stdout, 1);
        Ok((o, names))
    };
    let pods_of = |k: &Kubectl| -> Result<(Output, BTreeSet<String>)> {
        let o = run(k, &["get", "pods", "-A"], &[], short)?;
        let names = rows(&o.stdout, 2);
        Ok((o, names))
    };
    // The RoleBindings were written a moment ago: the apiserver's authorizer may lag them.
    let settle = Instant::now();
    paddock_e2e::process::poll_within(
        Duration::from_secs(15),
        Duration::from_millis(500),
        "alice's view of n1 and n2",
        || Ok(ns_of(&alice)?.1 == set(&["n1", "n2"])),
    )?;
    println!(
        "  alice's view complete {:.1} s after her second RoleBinding",
        settle.elapsed().as_secs_f64()
    );
    let (a_ns, a_names) = ns_of(&alice)?;
    let d_ns = run(&up, &["get", "ns"], &alice_up, short)?;
    side_by_side("alice: get ns", &a_ns, &d_ns);
    c.check(
        "alice: get ns lists exactly n1 and n2",
        a_ns.success() && a_names == set(&["n1", "n2"]),
        format!("{a_names:?}"),
    );
    c.check(
        "alice straight at the apiserver: get ns 403",
        forbidden(&d_ns),
        gist(&d_ns),
    );
    let (a_pods, a_pod_rows) = pods_of(&alice)?;
    let d_pods = run(&up, &["get", "pods", "-A"], &alice_up, short)?;
    side_by_side("alice: get pods -A", &a_pods, &d_pods);
    c.check(
        "alice: get pods -A shows n1's and n2's pods only",
        a_pods.success() && a_pod_rows == set(&["n1 pod-n1", "n2 pod-n2"]),
        format!("{a_pod_rows:?}"),
    );
    c.check(
        "alice straight at the apiserver: get pods -A 403",
        forbidden(&d_pods),
        gist(&d_pods),
    );
    for (what, args) in [
        ("get ns", vec!["get", "ns"]),
        ("get pods -A", vec!["get", "pods", "-A"]),
    ] {
        let b = run(&bob, &args, &[], short)?;
        let d = run(&up, &args, &bob_up, short)?;
        side_by_side(&format!("bob (no binding): {what}"), &b, &d);
        c.check(
            &format!("bob: {what} is an empty list, not a 403"),
            b.success() && b.stdout.trim().is_empty() && b.stderr.contains("No resources found"),
            gist(&b),
        );
        c.check(
            &format!("bob straight at the apiserver: {what} 403"),
            forbidden(&d),
            gist(&d),
        );
    }

    println!("\n== attacks, each with its control ==");
    let leak_words = ["plat-views", "plat-pod", "other-pod", OTHER];
    let all = format!(
        "{}{}{}{}",
        a_ns.stdout, a_ns.stderr, a_pods.stdout, a_pods.stderr
    );
    let upstream_works =
        |ns: &str| -> Result<Output> { run(&up, &["get", "pods", "-n", ns], &alice_up, short) };
    for (what, ns, pod) in [
        (
            "another tenant's namespace",
            format!("{OTHER}-n3"),
            "other-pod-n3",
        ),
        ("a platform namespace", "plat-views".to_owned(), "plat-pod"),
    ] {
        let control = upstream_works(&ns)?;
        c.check(
            &format!("alice bound by upstream name in {what}: never in her view"),
            !leak_words.iter().any(|w| all.contains(w))
                && control.success()
                && control.stdout.contains(pod),
            format!(
                "view {a_names:?} / pods {a_pod_rows:?}; control straight at the apiserver: {}",
                gist(&control)
            ),
        );
    }
    let b_alice = p.kubectl_user(OTHER, "alice", &devs)?;
    let (_, b_names) = ns_of(&b_alice)?;
    c.check(
        "the other tenant's alice and devs: its alice sees its n1 and n3, ours sees neither",
        b_names == set(&["n1", "n3"]) && a_names == set(&["n1", "n2"]),
        format!("{OTHER}'s alice {b_names:?}, {T}'s alice {a_names:?}"),
    );
    let mallory_groups = vec![format!("paddock:{OTHER}:devs"), format!("{OTHER}-devs")];
    match p.kubectl_user(T, "mallory", &mallory_groups) {
        Ok(mallory) => {
            let (m_ns, m_names) = ns_of(&mallory)?;
            let (m_pods, m_rows) = pods_of(&mallory)?;
            c.check(
                "a certificate naming the other tenant's group devs: nothing of it in the view",
                m_ns.success()
                    && m_names.is_empty()
                    && m_pods.success()
                    && m_rows.is_empty()
                    && b_names.contains("n1"),
                format!("ns {m_names:?}, pods {m_rows:?}; control: {OTHER}'s devs see {b_names:?}"),
            );
        }
        Err(e) => c.check(
            "a certificate naming the other tenant's group: refused at issue",
            true,
            format!("{e:#}")
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        ),
    }

    println!("\n== get pods -A -w: alice's namespaces only; bob's watch open and empty ==");
    let a_watch_args = [
        "get",
        "pods",
        "-A",
        "-w",
        "--output-watch-events",
        "--request-timeout=12s",
    ];
    let (a_watch, b_watch) = std::thread::scope(|s| -> Result<(Output, Output)> {
        let b = s.spawn(|| run(&bob, &a_watch_args, &[], Duration::from_secs(40)));
        let a = watch_while(&alice, &a_watch_args, Duration::from_secs(12), || {
            admin.run(&["run", "late-n2", IMAGE, "-n", "n2"])?;
            admin.run(&["run", "late-n4", IMAGE, "-n", "n4"])?;
            Ok(())
        })?;
        let b = b
            .join()
            .map_err(|_| anyhow::anyhow!("bob's watch panicked"))??;
        Ok((a, b))
    })?;
    let a_events = rows(&a_watch.stdout, 3);
    let d_watch = run(
        &up,
        &["get", "pods", "-A", "-w", "--request-timeout=3s"],
        &alice_up,
        short,
    )?;
    side_by_side("alice: get pods -A -w", &a_watch, &d_watch);
    let seen = |ns: &str, pod: &str| a_events.iter().any(|r| r.ends_with(&format!("{ns} {pod}")));
    c.check(
        "alice: -A -w shows n1's and n2's pods and one created in n2, nothing of n4",
        seen("n1", "pod-n1")
            && seen("n2", "pod-n2")
            && seen("n2", "late-n2")
            && !a_watch.stdout.contains("n4")
            && !leak_words.iter().any(|w| a_watch.stdout.contains(w)),
        format!("{a_events:?}"),
    );
    c.check(
        "alice straight at the apiserver: -A -w 403",
        forbidden(&d_watch),
        gist(&d_watch),
    );
    c.check(
        "bob: -A -w open, nothing shown, no 403",
        rows(&b_watch.stdout, 3).is_empty() && !b_watch.stderr.contains("forbidden"),
        gist(&b_watch),
    );

    println!("\n== get ns -w: n3 bound while watching appears, n1 unbound disappears ==");
    let ns_watch_args = [
        "get",
        "ns",
        "-w",
        "--output-watch-events",
        "--request-timeout=20s",
    ];
    let bound_at = std::sync::Mutex::new(None);
    let n_watch = watch_while(&alice, &ns_watch_args, Duration::from_secs(20), || {
        admin.run(&[
            "create",
            "rolebinding",
            "alice-n3",
            "--clusterrole=view",
            "--user=alice",
            "-n",
            "n3",
        ])?;
        admin.run(&["delete", "rolebinding", "alice-n1", "-n", "n1"])?;
        *bound_at.lock().map_err(|_| anyhow::anyhow!("poisoned"))? = Some(Instant::now());
        Ok(())
    })?;
    let d_nwatch = run(
        &up,
        &["get", "ns", "-w", "--request-timeout=3s"],
        &alice_up,
        short,
    )?;
    side_by_side("alice: get ns -w", &n_watch, &d_nwatch);
    let events: Vec<String> = n_watch
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    println!("    events through paddock: {events:?}");
    let want = ["ADDED n1", "ADDED n2", "ADDED n3", "DELETED n1"];
    let in_order = want
        .iter()
        .map(|w| events.iter().position(|e| e == w))
        .collect::<Vec<_>>();
    c.check(
        "alice: get ns -w shows n1, n2, then n3 ADDED and n1 DELETED, nothing else",
        in_order.iter().all(Option::is_some)
            && in_order[2] > in_order[1]
            && in_order[3] > in_order[1]
            && events.len() == 4,
        format!("{events:?}"),
    );
    c.check(
        "alice straight at the apiserver: get ns -w 403",
        forbidden(&d_nwatch),
        gist(&d_nwatch),
    );
    // How long a list takes to show the change (the decisions' memory is 3 s).
    let since = bound_at
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .unwrap_or_else(Instant::now);
    let (_, after) = ns_of(&alice)?;
    c.check(
        "alice: get ns after the change lists n2 and n3",
        after == set(&["n2", "n3"]),
        format!(
            "{after:?}, {:.1} s after the change",
            since.elapsed().as_secs_f64()
        ),
    );
    let (_, after_pods) = pods_of(&alice)?;
    c.check(
        "alice: get pods -A after the change: n2's and n3's",
        after_pods == set(&["n2 pod-n2", "n2 late-n2", "n3 pod-n3"]),
        format!("{after_pods:?}"),
    );

    println!(
        "\n== auth whoami, auth can-i --list: as the apiserver answers the asserted identity =="
    );
    let who = run(&alice, &["auth", "whoami", "-o", "json"], &[], short)?;
    let d_who = run(&up, &["auth", "whoami", "-o", "json"], &alice_up, short)?;
    side_by_side("alice: auth whoami", &who, &d_who);
    let user_of = |o: &Output| -> (String, BTreeSet<String>) {
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap_or_default();
        let groups = v["status"]["userInfo"]["groups"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|g| g.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        (
            v["status"]["userInfo"]["username"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            groups,
        )
    };
    let (w_user, w_groups) = user_of(&who);
    let (d_user, d_groups) = user_of(&d_who);
    let prefix = format!("paddock:{T}:");
    let mapped_down: BTreeSet<String> = d_groups
        .iter()
        .filter(|g| !g.starts_with("paddock:tenant"))
        .map(|g| g.strip_prefix(&prefix).unwrap_or(g).to_owned())
        .collect();
    c.check(
        "alice: whoami is the apiserver's answer in the tenant's names",
        w_user == "alice"
            && d_user == format!("{prefix}alice")
            && w_groups == mapped_down
            && w_groups == set(&["devs", "system:authenticated"]),
        format!("through {w_user} {w_groups:?}; straight {d_user} {d_groups:?}"),
    );
    for ns in ["n2", "n4"] {
        let list = run(&alice, &["auth", "can-i", "--list", "-n", ns], &[], short)?;
        let d_list = run(
            &up,
            &["auth", "can-i", "--list", "-n", &format!("{T}-{ns}")],
            &alice_up,
            short,
        )?;
        side_by_side(&format!("alice: auth can-i --list -n {ns}"), &list, &d_list);
        let (l, d) = (rows(&list.stdout, 4), rows(&d_list.stdout, 4));
        c.check(
            &format!("alice: can-i --list -n {ns} is the apiserver's"),
            list.success() && l == d && !l.is_empty(),
            format!(
                "{} rules; differences {:?}",
                l.len(),
                l.symmetric_difference(&d).collect::<Vec<_>>()
            ),
        );
    }

    println!("\n== the tenant admin's answers are unchanged ==");
    let (ad_ns, ad_names) = ns_of(&admin)?;
    let (_, ad_pods) = pods_of(&admin)?;
    c.check(
        "admin: get ns lists every namespace of the tenant",
        ad_ns.success()
            && NAMESPACES.iter().all(|n| ad_names.contains(*n))
            && ad_names.contains("default"),
        format!("{ad_names:?}"),
    );
    c.check(
        "admin: get pods -A lists all seven pods",
        ad_pods.len() == 7,
        format!("{ad_pods:?}"),
    );

    println!(
        "\n{} checks passed, {} failed, {:.0} s",
        c.passed,
        c.failed.len(),
        t0.elapsed().as_secs_f64()
    );
    if !c.failed.is_empty() {
        bail!(
            "{} checks failed:\n  {}",
            c.failed.len(),
            c.failed.join("\n  ")
        );
    }
    Ok(())
}
