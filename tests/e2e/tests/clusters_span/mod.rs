//! The spanning tenant of `make test-clusters` (docs/clusters.md "Spanning tenants"): a
//! tenant on both control planes, driven with real kubectl. Its namespaces land where their
//! label asks; `get ns`, `get pods -A`, `get configmaps -A -w`, a CRD and its CRs, and a
//! ClusterRoleBinding work as on one cluster; the other tenants and it cannot name each
//! other's objects on either cluster; with east down, its namespaces there answer 503 naming
//! east and its merged lists fail naming east, while its namespaces on default keep working.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::{Kubectl, Paddock, process, tools};

use super::{eventually, tenant_on, upstream_has};

mod applied;
mod first_writes;

const NAMESPACES: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: here\n  labels: {paddock.io/cluster: default}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: there\n  labels: {paddock.io/cluster: east}\n";

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: widgets, singular: widget, kind: Widget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n";

fn fails_with(k: &Kubectl, args: &[&str], want: &[&str]) -> Result<String> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (line, out) = k.run_raw(&args, None, &Default::default(), None)?;
    ensure!(!out.success(), "{line} succeeded: {}", out.stdout);
    for w in want {
        ensure!(
            out.stderr.contains(w),
            "{line}: {:?} lacks {w:?}",
            out.stderr
        );
    }
    Ok(out.stderr)
}

/// Creates the spanning tenant and runs its one-cluster scenarios across both clusters.
pub fn spanning_tenant(p: &Paddock, up_a: &Kubectl, up_b: &Kubectl) -> Result<Kubectl> {
    let t0 = Instant::now();
    let ts = tenant_on(p, "spanns", "default,east")?;
    eprintln!(
        "spanning tenant created on default and east in {:?}",
        t0.elapsed()
    );
    let rec: serde_json::Value =
        serde_json::from_str(&p.cli(&["tenant", "get", "spanns", "-o", "json"])?)?;
    ensure!(
        rec["spec"]["clusters"] == serde_json::json!(["default", "east"]),
        "spanning tenant record: {rec}"
    );

    // Namespaces land where their label asks; a label naming no cluster of the tenant is a
    // 400 naming the label; an unlabelled one lands on exactly one cluster.
    ts.run_stdin(&["apply", "-f", "-"], Some(NAMESPACES))?;
    let bad = NAMESPACES
        .replace("here", "nowhere")
        .replace("default}", "west}");
    let bad = bad.split("---").next().context("one namespace")?;
    let args: Vec<String> = ["apply", "-f", "-"].map(String::from).to_vec();
    let (_, out) = ts.run_raw(&args, Some(bad), &Default::default(), None)?;
    ensure!(
        !out.success()
            && out
                .stderr
                .contains("does not name a cluster of this tenant"),
        "a namespace labelled for a cluster the tenant is not on: {}",
        out.stderr
    );
    for (ns, on_a) in [("spanns-here", true), ("spanns-there", false)] {
        ensure!(
            upstream_has(up_a, &["get", "ns", ns])? == on_a,
            "{ns} on default: {}",
            !on_a
        );
        ensure!(
            upstream_has(up_b, &["get", "ns", ns])? != on_a,
            "{ns} on east: {on_a}"
        );
    }
    for up in [up_a, up_b] {
        ensure!(
            !upstream_has(up, &["get", "ns", "spanns-nowhere"])?,
            "refused namespace created"
        );
    }
    ts.run(&["create", "namespace", "auto"])?;
    let auto_a = upstream_has(up_a, &["get", "ns", "spanns-auto"])?;
    let auto_b = upstream_has(up_b, &["get", "ns", "spanns-auto"])?;
    ensure!(
        auto_a != auto_b,
        "an unlabelled namespace on default={auto_a} east={auto_b}"
    );
    let label = ts.run(&[
        "get",
        "ns",
        "there",
        "-o",
        r"jsonpath={.metadata.labels.paddock\.io/cluster}",
    ])?;
    ensure!(
        label == "east",
        "the tenant's view of its namespace's cluster: {label:?}"
    );
    applied::server_side_applied(&ts, up_a, up_b)?;

    // get ns merges both clusters, each namespace once.
    let nss = ts.run(&["get", "ns", "-o", "name"])?;
    for ns in ["here", "there", "auto", "default", "kube-system"] {
        let n = nss
            .lines()
            .filter(|l| *l == format!("namespace/{ns}"))
            .count();
        ensure!(n == 1, "get ns shows {ns} {n} times: {nss}");
    }
    ensure!(
        !nss.contains("alphaa") && !nss.contains("bravob"),
        "get ns shows another tenant: {nss}"
    );

    // Objects in each namespace; -A lists merge both clusters.
    for ns in ["here", "there"] {
        ts.run(&[
            "-n",
            ns,
            "create",
            "configmap",
            &format!("cfg-{ns}"),
            "--from-literal=a=b",
        ])?;
        ts.run(&[
            "-n",
            ns,
            "run",
            "web",
            "--image=registry.k8s.io/pause:3.10",
            "--restart=Never",
        ])?;
    }
    ensure!(
        upstream_has(
            up_b,
            &["-n", "spanns-there", "get", "configmap", "cfg-there"]
        )?,
        "the configmap of a namespace on east is not on east"
    );
    let cms = ts.run(&["get", "configmaps", "-A", "-o", "name"])?;
    ensure!(
        cms.contains("cfg-here") && cms.contains("cfg-there"),
        "get cm -A: {cms}"
    );
    let pods = ts.run(&["get", "pods", "-A", "--no-headers"])?;
    ensure!(
        pods.lines().filter(|l| l.contains(" web ")).count() == 2
            && pods.contains("here")
            && pods.contains("there"),
        "get pods -A: {pods}"
    );
    let raw: serde_json::Value =
        serde_json::from_str(&ts.run(&["get", "--raw", "/api/v1/configmaps"])?)?;
    let rv = raw["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    ensure!(
        rv.starts_with("span."),
        "merged list resourceVersion {rv:?}"
    );
    // A single cluster's resourceVersion orders nothing across clusters: 410, list again.
    let item_rv = raw["items"][0]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("1");
    fails_with(
        &ts,
        &[
            "get",
            "--raw",
            &format!("/api/v1/configmaps?watch=true&resourceVersion={item_rv}"),
        ],
        &["too old resource version"],
    )?;

    watch_across_clusters(p, &ts)?;
    crd_across_clusters(&ts, up_b)?;
    binding_across_clusters(&ts, up_b)?;
    helm_across_clusters(p, &ts, up_b)?;
    shared_kinds_by_name(&ts, up_a, up_b)?;
    let generated = first_writes::generate_name_across_clusters(&ts, up_a, up_b)?;
    eprintln!("generated namespaces on the spanning tenant: {generated:?}");
    first_writes::crd_first_across_clusters(&ts)?;
    eprintln!("spanning tenant scenarios passed in {:?}", t0.elapsed());
    Ok(ts)
}

const SHARED_EAST: &str = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: east-only-sc}\nprovisioner: example.com/none\n---\napiVersion: v1\nkind: Node\nmetadata: {name: east-only-node}\n";

/// A node or storage class that only one cluster has is found by name, whichever of the
/// tenant's clusters has it (as its list shows it); an absent one is the apiserver's 404.
fn shared_kinds_by_name(ts: &Kubectl, up_a: &Kubectl, up_b: &Kubectl) -> Result<()> {
    up_b.run_stdin(&["apply", "-f", "-"], Some(SHARED_EAST))?;
    for (kind, name) in [("storageclass", "east-only-sc"), ("node", "east-only-node")] {
        ensure!(
            !upstream_has(up_a, &["get", kind, name])?,
            "{kind} {name} is on default too"
        );
        let list = ts.run(&["get", kind, "-o", "name"])?;
        ensure!(list.contains(name), "get {kind} lacks {name}: {list}");
        let one = ts.run(&["get", kind, name, "-o", "name"])?;
        ensure!(
            one.trim().ends_with(name),
            "get {kind} {name} by name through paddock: {one:?}"
        );
        let absent = format!("{name}-absent");
        let args: Vec<String> = ["get", kind, &absent].map(String::from).to_vec();
        let (_, via) = ts.run_raw(&args, None, &Default::default(), None)?;
        let (_, direct) = up_a.run_raw(&args, None, &Default::default(), None)?;
        ensure!(
            !via.success() && via.stderr.trim() == direct.stderr.trim(),
            "get {kind} {absent}: through paddock {:?}, direct {:?}",
            via.stderr.trim(),
            direct.stderr.trim()
        );
    }
    up_b.run(&["delete", "storageclass", "east-only-sc"])?;
    up_b.run(&["delete", "node", "east-only-node"])?;
    Ok(())
}

/// `get configmaps -A -w` sees events of both clusters after its list (the watch starts from
/// the list's per-cluster resourceVersion).
fn watch_across_clusters(p: &Paddock, ts: &Kubectl) -> Result<()> {
    let mut child = Command::new(ts.bin())
        .arg("--kubeconfig")
        .arg(ts.kubeconfig())
        .arg("--cache-dir")
        .arg(p.dir().join("kubectl-cache").join("spanns-watch"))
        .args(["get", "configmaps", "-A", "-w", "-o", "name"])
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting kubectl get -A -w")?;
    let out = child.stdout.take().context("watch stdout")?;
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    let wait_for = |want: &str, seen: &mut Vec<String>| -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        // `-o name` prints each event as the object's name (the list's items first).
        let (name, times) = want
            .split_once('*')
            .map_or((want, 1), |(n, t)| (n, t.parse().unwrap_or(1)));
        while seen.iter().filter(|l| l.as_str() == name).count() < times {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx
                .recv_timeout(left)
                .with_context(|| format!("no {want:?} from get -A -w; saw {seen:?}"))?;
            seen.push(line);
        }
        Ok(())
    };
    let result = (|| {
        // The initial list (both clusters), then events of both after it.
        wait_for("configmap/cfg-there", &mut seen)?;
        wait_for("configmap/cfg-here", &mut seen)?;
        ts.run(&["-n", "there", "create", "configmap", "w-there"])?;
        ts.run(&["-n", "here", "create", "configmap", "w-here"])?;
        ts.run(&["-n", "there", "delete", "configmap", "w-there"])?;
        wait_for("configmap/w-here", &mut seen)?;
        // Added, then deleted: two events of a namespace on east.
        wait_for("configmap/w-there*2", &mut seen)?;
        Ok(())
    })();
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// A CRD is on both clusters; its CRs work in namespaces of either.
fn crd_across_clusters(ts: &Kubectl, up_b: &Kubectl) -> Result<()> {
    ts.run_stdin(&["apply", "-f", "-"], Some(CRD))?;
    ts.run(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=60s",
        "crd/widgets.example.com",
    ])?;
    let crds = up_b.run(&["get", "crd", "-o", "name"])?;
    ensure!(
        crds.lines()
            .any(|l| l.contains("widgets") && l.contains("spanns")),
        "the tenant's CRD is not on east: {crds}"
    );
    for ns in ["here", "there"] {
        let cr = format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w1, namespace: {ns}}}\nspec: {{size: 3}}\n"
        );
        // East reads its discovery again on a miss; its apiserver serves the new CRD soon.
        eventually(Duration::from_secs(60), || {
            ts.run_stdin(&["apply", "-f", "-"], Some(&cr)).map(|_| ())
        })
        .with_context(|| format!("creating a Widget in {ns}"))?;
    }
    let all = ts.run(&["get", "widgets", "-A", "--no-headers"])?;
    ensure!(all.lines().count() == 2, "get widgets -A: {all}");
    ensure!(
        upstream_has(
            up_b,
            &[
                "-n",
                "spanns-there",
                "get",
                "widgets.spanns-example.com",
                "w1"
            ]
        )?,
        "the Widget of a namespace on east is not on east"
    );
    Ok(())
}

/// A ClusterRoleBinding grants its subject the role in the tenant's namespaces on both
/// clusters; a user without one is refused on both.
fn binding_across_clusters(ts: &Kubectl, up_b: &Kubectl) -> Result<()> {
    ts.run(&[
        "create",
        "clusterrole",
        "cm-reader",
        "--verb=get,list",
        "--resource=configmaps",
    ])?;
    ts.run(&[
        "create",
        "clusterrolebinding",
        "dev-reads",
        "--clusterrole=cm-reader",
        "--user=dev",
    ])?;
    let on_b = up_b.run(&["get", "clusterrolebindings", "-o", "name"])?;
    ensure!(
        on_b.lines().any(|l| l.contains("dev-reads")),
        "the tenant's ClusterRoleBinding is not on east: {on_b}"
    );
    for ns in ["here", "there"] {
        eventually(Duration::from_secs(60), || {
            let got = ts.run(&["--as", "dev", "-n", ns, "get", "configmaps", "-o", "name"])?;
            ensure!(got.contains(&format!("cfg-{ns}")), "dev in {ns}: {got}");
            Ok(())
        })
        .with_context(|| format!("the binding does not reach {ns}"))?;
        fails_with(
            ts,
            &["--as", "dev2", "-n", ns, "get", "configmaps"],
            &["forbidden"],
        )?;
    }
    Ok(())
}

/// Isolation on both clusters: the spanning tenant and the one-cluster tenants cannot name
/// each other's namespaces, objects or cluster-scoped objects.
pub fn isolation(ts: &Kubectl, ta: &Kubectl, tb: &Kubectl) -> Result<()> {
    // Positive controls: each reads its own.
    ts.run(&["-n", "there", "get", "configmap", "cfg-there"])?;
    tb.run(&["-n", "shop", "get", "configmap", "cfg"])?;
    for (who, k, ns) in [
        ("spanns", ts, "bravob-shop"),
        ("spanns", ts, "alphaa-shop"),
        ("bravob", tb, "spanns-there"),
        ("bravob", tb, "there"),
        ("alphaa", ta, "spanns-here"),
        ("alphaa", ta, "here"),
    ] {
        let args: Vec<String> = ["-n", ns, "get", "configmaps", "-o", "name"]
            .map(String::from)
            .to_vec();
        let (_, out) = k.run_raw(&args, None, &Default::default(), None)?;
        ensure!(
            !out.success() || out.stdout.trim().is_empty(),
            "{who} read namespace {ns}: {}",
            out.stdout
        );
    }
    for k in [ta, tb] {
        let crds = k.run(&["get", "crd", "-o", "name"])?;
        ensure!(
            !crds.contains("widgets"),
            "another tenant sees the spanning tenant's CRD: {crds}"
        );
        let crbs = k.run(&["get", "clusterrolebindings", "-o", "name"])?;
        ensure!(
            !crbs.contains("dev-reads"),
            "another tenant sees its binding: {crbs}"
        );
        let cms = k.run(&["get", "configmaps", "-A", "-o", "name"])?;
        ensure!(
            !cms.contains("cfg-there") && !cms.contains("cfg-here"),
            "get -A of another tenant: {cms}"
        );
    }
    let cms = ts.run(&["get", "configmaps", "-A", "-o", "name"])?;
    ensure!(
        !cms.contains("configmap/cfg\n") && !cms.ends_with("configmap/cfg"),
        "spanns sees another's configmap: {cms}"
    );
    // The same CRD name in another tenant on east is its own: neither sees the other's CRs.
    tb.run_stdin(&["apply", "-f", "-"], Some(CRD))?;
    eventually(Duration::from_secs(60), || {
        let theirs = tb.run(&["get", "widgets", "-A", "-o", "name"])?;
        ensure!(theirs.trim().is_empty(), "bravob sees widgets: {theirs}");
        Ok(())
    })?;
    let mine = ts.run(&["get", "widgets", "-A", "-o", "name"])?;
    ensure!(
        mine.lines().count() == 2,
        "the spanning tenant's widgets: {mine}"
    );
    // Writing another tenant's names through the spanning tenant lands in its own space.
    fails_with(
        ts,
        &["-n", "bravob-shop", "create", "configmap", "x"],
        &["not found"],
    )?;
    Ok(())
}

/// With east down: namespaces on default keep working, those on east answer 503 naming
/// east, merged lists fail naming east.
pub fn with_east_down(ts: &Kubectl) -> Result<()> {
    ts.run(&["-n", "here", "get", "configmap", "cfg-here", "-o", "name"])
        .context("a namespace of the spanning tenant on default failed with east down")?;
    fails_with(
        ts,
        &["-n", "there", "get", "configmap", "cfg-there"],
        &["cluster \"east\"", "ServiceUnavailable"],
    )?;
    let merged = fails_with(ts, &["get", "ns"], &["cluster \"east\""])?;
    eprintln!("east down: spanning tenant's get ns: {}", merged.trim());
    fails_with(ts, &["get", "configmaps", "-A"], &["cluster \"east\""])?;
    ts.run(&["-n", "here", "create", "configmap", "while-down"])
        .context("a write in a namespace on default with east down")?;
    // A cluster-scoped write is the home's answer; east gets it from the resync on return.
    ts.run(&[
        "create",
        "clusterrole",
        "while-down-role",
        "--verb=get",
        "--resource=secrets",
    ])
    .context("a ClusterRole written with east down")?;
    Ok(())
}

/// East back: everything of the spanning tenant works again.
pub fn after_east_returns(ts: &Kubectl, up_b: &Kubectl) -> Result<()> {
    eventually(Duration::from_secs(60), || {
        ts.run(&["-n", "there", "get", "configmap", "cfg-there", "-o", "name"])?;
        let nss = ts.run(&["get", "ns", "-o", "name"])?;
        ensure!(nss.contains("namespace/there"), "{nss}");
        let cms = ts.run(&["get", "configmaps", "-A", "-o", "name"])?;
        ensure!(
            cms.contains("while-down") && cms.contains("cfg-there"),
            "{cms}"
        );
        Ok(())
    })
    .context("the spanning tenant did not work again after east returned")?;
    // The resync (every 30 s) copies the ClusterRole written while east was down.
    let copied = eventually(Duration::from_secs(120), || {
        let roles = up_b.run(&["get", "clusterroles", "-o", "name"])?;
        ensure!(roles.contains("while-down-role"), "not on east yet");
        Ok(())
    })
    .context("the resync did not copy a ClusterRole written while east was down")?;
    eprintln!("east back: the ClusterRole written while it was down copied there after {copied:?}");
    Ok(())
}

/// Deleting the spanning tenant removes its objects from both clusters, even when paddock
/// is killed right after the deletion started: the restarted paddock resumes it whole (the
/// other cluster first, then the home).
pub fn deletion(p: &Paddock, up_a: &Kubectl, up_b: &Kubectl) -> Result<()> {
    let del: Vec<String> = ["tenant", "delete", "spanns"].map(String::from).to_vec();
    let (line, out) = p.cli_raw(&del, Duration::from_secs(300))?;
    ensure!(out.success(), "{line}: {}", out.stderr);
    p.kill()?;
    p.restart()?;
    let gone = eventually(Duration::from_secs(300), || {
        let get: Vec<String> = ["tenant", "get", "spanns"].map(String::from).to_vec();
        let (_, out) = p.cli_raw(&get, Duration::from_secs(30))?;
        ensure!(!out.success(), "tenant spanns still there: {}", out.stdout);
        Ok(())
    })
    .context("the deletion interrupted by a kill did not finish after the restart")?;
    eprintln!(
        "spanning tenant's deletion, interrupted by a kill, finished {gone:?} after the restart"
    );
    for (up, ns) in [(up_a, "spanns-here"), (up_b, "spanns-there")] {
        ensure!(
            !upstream_has(up, &["get", "ns", ns])?,
            "{ns} left after the tenant's deletion"
        );
    }
    // The generated ones too (first_writes.rs), on either cluster.
    for up in [up_a, up_b] {
        eventually(Duration::from_secs(120), || {
            let left = up.run(&["get", "ns", "-o", "name"])?;
            ensure!(!left.contains("spanns-"), "left after the deletion: {left}");
            Ok(())
        })?;
    }
    let crbs = up_b.run(&["get", "clusterrolebindings", "-o", "name"])?;
    ensure!(
        !crbs.contains("dev-reads"),
        "the tenant's binding left on east: {crbs}"
    );
    let crds = up_b.run(&["get", "crd", "-o", "name"])?;
    ensure!(
        !crds.contains("spanns"),
        "the tenant's CRD left on east: {crds}"
    );
    Ok(())
}

/// helm through the spanning tenant: a release in a namespace on east and one on default,
/// listed together by `helm list -A`, upgraded and uninstalled.
fn helm_across_clusters(p: &Paddock, ts: &Kubectl, up_b: &Kubectl) -> Result<()> {
    let chart = p.dir().join("span-chart");
    std::fs::create_dir_all(chart.join("templates"))?;
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: spanchart\nversion: 0.1.0\n",
    )?;
    std::fs::write(chart.join("values.yaml"), "greeting: hello\n")?;
    std::fs::write(
        chart.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
    )?;
    let helm_bin = tools::helm()?;
    let home = p.dir().join("span-helm");
    let helm = |args: &[&str]| -> Result<String> {
        let mut cmd = Command::new(&helm_bin);
        cmd.arg("--kubeconfig")
            .arg(ts.kubeconfig())
            .args(args)
            .env_remove("KUBECONFIG")
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_DATA_HOME", home.join("data"));
        let out = process::run(&mut cmd, None, Duration::from_secs(180))?;
        ensure!(out.success(), "helm {args:?}: {}{}", out.stdout, out.stderr);
        Ok(out.stdout)
    };
    let chart = chart.to_str().context("chart path")?;
    helm(&["install", "east-rel", chart, "-n", "there", "--wait"])?;
    helm(&["install", "home-rel", chart, "-n", "here", "--wait"])?;
    ensure!(
        upstream_has(
            up_b,
            &["-n", "spanns-there", "get", "configmap", "east-rel-cfg"]
        )?,
        "the release's configmap is not on east"
    );
    let list = helm(&["list", "-A", "-q"])?;
    ensure!(
        list.contains("east-rel") && list.contains("home-rel"),
        "helm list -A: {list}"
    );
    helm(&[
        "upgrade",
        "east-rel",
        chart,
        "-n",
        "there",
        "--set",
        "greeting=again",
    ])?;
    let got = ts.run(&[
        "-n",
        "there",
        "get",
        "configmap",
        "east-rel-cfg",
        "-o",
        "jsonpath={.data.greeting}",
    ])?;
    ensure!(got == "again", "after helm upgrade: {got:?}");
    helm(&["uninstall", "east-rel", "-n", "there"])?;
    helm(&["uninstall", "home-rel", "-n", "here"])?;
    ensure!(
        !upstream_has(
            up_b,
            &["-n", "spanns-there", "get", "configmap", "east-rel-cfg"]
        )?,
        "the release's configmap left on east after helm uninstall"
    );
    eprintln!(
        "spanning tenant: helm install/list -A/upgrade/uninstall across both clusters passed"
    );
    Ok(())
}
