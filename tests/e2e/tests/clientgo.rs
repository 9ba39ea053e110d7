//! client-go with protobuf bodies over every creatable built-in kind.
//!
//! Builds tests/clientgo (client-go v0.33, `ContentType = application/vnd.kubernetes.protobuf`)
//! cache-aware into target/go-bin, runs it directly as the upstream admin and then through
//! paddock as a tenant admin on one control plane, and compares the two per-kind, per-verb
//! tables (create, get, update, list, watch, delete, and "stored": the object read back by the
//! upstream admin carries the translated fields).
//!
//! The test fails when
//! - anything fails directly (a fixture is wrong, or a creatable kind has no fixture);
//! - a cell passes directly and fails through paddock, unless the kind is in the list of known
//!   failures in docs/testing.md (between the `clientgo-known-failures` markers), and
//! - a listed cell passes (the list must shrink with the fix, it cannot go stale);
//! - a refusal by policy (a Status for a verb the tenant's discovery does not offer, or a 403
//!   naming paddock's policy) hits a kind that the policy gives the tenant: every namespaced
//!   built-in kind and the tenant-owned cluster-scoped ones (docs/translation.md, "Catalog and
//!   policy").

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use paddock_e2e::process::{self, indent, tail_file, tail_lines};
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::{ControlPlane, Paddock, StoreKind, tools};
use serde_json::Value;

const TENANT: &str = "cgotst";

/// Cluster-scoped kinds a tenant owns (docs/translation.md, "Catalog and policy"): a refusal by
/// policy of these is a failure, as for every namespaced kind.
const TENANT_OWNED_CLUSTER: &[&str] = &[
    "/namespaces",
    "/persistentvolumes",
    "rbac.authorization.k8s.io/clusterroles",
    "rbac.authorization.k8s.io/clusterrolebindings",
    "apiextensions.k8s.io/customresourcedefinitions",
    "admissionregistration.k8s.io/mutatingwebhookconfigurations",
    "admissionregistration.k8s.io/validatingwebhookconfigurations",
    "admissionregistration.k8s.io/validatingadmissionpolicies",
    "admissionregistration.k8s.io/validatingadmissionpolicybindings",
    "authorization.k8s.io/selfsubjectaccessreviews",
    "authorization.k8s.io/subjectaccessreviews",
    "authorization.k8s.io/localsubjectaccessreviews",
    "authorization.k8s.io/selfsubjectrulesreviews",
    "authentication.k8s.io/selfsubjectreviews",
];

/// (kind, verb) -> outcome, plus which kinds are namespaced.
struct Run {
    cells: BTreeMap<(String, String), Value>,
    namespaced: BTreeMap<String, bool>,
}

fn parse(path: &Path) -> Result<Run> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: Value = serde_json::from_str(&text).context("parsing the clientgo summary")?;
    let mut run = Run {
        cells: BTreeMap::new(),
        namespaced: BTreeMap::new(),
    };
    for k in v["kinds"].as_array().context("no kinds in the summary")? {
        let key = k["key"].as_str().context("kind without key")?.to_owned();
        run.namespaced
            .insert(key.clone(), k["namespaced"].as_bool().unwrap_or(false));
        for (verb, c) in k["cells"].as_object().context("kind without cells")? {
            run.cells.insert((key.clone(), verb.clone()), c.clone());
        }
    }
    Ok(run)
}

fn outcome(c: &Value) -> &str {
    c["outcome"].as_str().unwrap_or("?")
}

fn describe(c: &Value) -> String {
    format!(
        "{} {} {}",
        outcome(c),
        c["code"]
            .as_i64()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        c["message"].as_str().unwrap_or("")
    )
}

/// The known failures: the table between the markers in docs/testing.md. Each row is
/// `| \`group/resource\` | verbs | cause |`; verbs is `all` (every cell that passes directly)
/// or a comma-separated list.
fn known_failures() -> Result<BTreeMap<String, Option<BTreeSet<String>>>> {
    let doc = workspace_root().join("docs").join("testing.md");
    let text = std::fs::read_to_string(&doc)?;
    let (_, rest) = text
        .split_once("<!-- clientgo-known-failures:begin -->")
        .context("docs/testing.md has no clientgo-known-failures:begin marker")?;
    let (table, _) = rest
        .split_once("<!-- clientgo-known-failures:end -->")
        .context("docs/testing.md has no clientgo-known-failures:end marker")?;
    let mut known = BTreeMap::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(kind), Some(verbs)) = (cols.get(1), cols.get(2)) else {
            bail!("malformed row in docs/testing.md: {line}");
        };
        let kind = kind.trim_matches('`').to_owned();
        let verbs = (*verbs != "all").then(|| {
            verbs
                .split(',')
                .map(|v| v.trim().to_owned())
                .collect::<BTreeSet<_>>()
        });
        known.insert(kind, verbs);
    }
    Ok(known)
}

fn run_program(bin: &Path, args: &[String], log: &Path) -> Result<String> {
    let mut cmd = Command::new(bin);
    cmd.args(args);
    let out = process::run(&mut cmd, None, Duration::from_secs(15 * 60))?;
    if !out.success() {
        bail!(
            "clientgo {} failed (exit {:?}{}):\n{}\n{}\n  tail of {}:\n{}",
            args.join(" "),
            out.code,
            if out.timed_out { ", timed out" } else { "" },
            tail_lines(&out.stdout, 40),
            tail_lines(&out.stderr, 40),
            log.display(),
            indent(&tail_file(log, 30), "    | ")
        );
    }
    Ok(out.stdout)
}

#[test]
fn clientgo_protobuf_every_kind() -> Result<()> {
    let bin = tools::go_program("tests/clientgo", "clientgo")?;
    let known = known_failures()?;
    let cp = ControlPlane::start().context("starting the control plane")?;
    let paddock = Paddock::start(&cp, StoreKind::Etcd)?;
    let tenant_kc = paddock.tenant(TENANT)?;
    let admin = cp.admin_kubeconfig();
    let dir = cp.dir().join("clientgo");
    std::fs::create_dir_all(&dir)?;
    let run_id = format!("{:x}", std::process::id() % 0xfffff);
    let s = |p: &Path| p.display().to_string();

    let direct_json = dir.join("direct.json");
    let table = run_program(
        &bin,
        &[
            "--kubeconfig".into(),
            s(&admin),
            "--mode".into(),
            "direct".into(),
            "--run".into(),
            run_id.clone(),
            "--json".into(),
            s(&direct_json),
        ],
        paddock.log_path(),
    )?;
    eprintln!("{table}");
    let paddock_json = dir.join("paddock.json");
    let table = run_program(
        &bin,
        &[
            "--kubeconfig".into(),
            s(&tenant_kc),
            "--admin-kubeconfig".into(),
            s(&admin),
            "--mode".into(),
            "paddock".into(),
            "--tenant".into(),
            TENANT.into(),
            "--run".into(),
            run_id,
            "--json".into(),
            s(&paddock_json),
        ],
        paddock.log_path(),
    )?;
    eprintln!("{table}");

    let direct = parse(&direct_json)?;
    let through = parse(&paddock_json)?;
    let problems = compare(&direct, &through, &known);
    // What the numbers say, also when everything holds.
    let count = |r: &Run, o: &str| r.cells.values().filter(|c| outcome(c) == o).count();
    eprintln!(
        "kinds: {}; directly ok {} fail {}; through paddock ok {} policy {} fail {} blocked {}; known failures listed: {}",
        direct.namespaced.len(),
        count(&direct, "ok"),
        count(&direct, "fail"),
        count(&through, "ok"),
        count(&through, "policy"),
        count(&through, "fail"),
        count(&through, "blocked"),
        known.len()
    );
    if !problems.is_empty() {
        bail!("{} problems:\n  {}", problems.len(), problems.join("\n  "));
    }
    Ok(())
}

fn compare(
    direct: &Run,
    through: &Run,
    known: &BTreeMap<String, Option<BTreeSet<String>>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    // Discovery of a 1.33 apiserver lists ~59 creatable built-in kinds; far fewer means the
    // program saw a broken discovery, not a smaller cluster.
    if direct.namespaced.len() < 50 {
        problems.push(format!(
            "only {} creatable built-in kinds directly",
            direct.namespaced.len()
        ));
    }
    let mut listed_passing: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut listed_failing: BTreeSet<&str> = BTreeSet::new();
    for ((kind, verb), d) in &direct.cells {
        match outcome(d) {
            "ok" => {}
            "n/a" => continue,
            _ => {
                problems.push(format!("{kind} {verb} fails directly: {}", describe(d)));
                continue;
            }
        }
        let Some(p) = through.cells.get(&(kind.clone(), verb.clone())) else {
            problems.push(format!("{kind} {verb}: no result through paddock"));
            continue;
        };
        let owned = direct.namespaced.get(kind).copied().unwrap_or(false)
            || TENANT_OWNED_CLUSTER.contains(&kind.as_str());
        let listed = known
            .get(kind)
            .is_some_and(|verbs| verbs.as_ref().is_none_or(|v| v.contains(verb)));
        match outcome(p) {
            "ok" if listed => listed_passing.entry(kind).or_default().push(verb.clone()),
            "ok" => {}
            "policy" if !owned => {}
            _ if listed => {
                listed_failing.insert(kind);
            }
            _ => problems.push(format!(
                "{kind} {verb}: passes directly, through paddock {}",
                describe(p)
            )),
        }
    }
    for (kind, verbs) in listed_passing {
        problems.push(format!(
            "{kind} is listed as failing through paddock (docs/testing.md) but {} now pass{}: shrink the list",
            verbs.join(", "),
            if verbs.len() == 1 { "es" } else { "" }
        ));
    }
    for kind in known.keys() {
        if !listed_failing.contains(kind.as_str()) && !direct.namespaced.contains_key(kind) {
            problems.push(format!(
                "{kind} is listed in docs/testing.md but was not tried"
            ));
        }
    }
    problems
}

/// The comparison itself, on made-up tables: every rule can fail.
#[test]
fn comparison_rules() {
    fn run(rows: &[(&str, bool, &str, &str)]) -> Run {
        let mut r = Run {
            cells: BTreeMap::new(),
            namespaced: BTreeMap::new(),
        };
        for i in 0..50 {
            r.namespaced.insert(format!("filler/{i}"), true);
        }
        for (kind, ns, verb, o) in rows {
            r.namespaced.insert((*kind).to_owned(), *ns);
            r.cells.insert(
                ((*kind).to_owned(), (*verb).to_owned()),
                serde_json::json!({ "outcome": o }),
            );
        }
        r
    }
    let direct = run(&[
        ("/configmaps", true, "create", "ok"),
        ("/nodes", false, "create", "ok"),
        ("apps/deployments", true, "create", "ok"),
        ("apps/deployments", true, "get", "ok"),
    ]);
    let mut known = BTreeMap::new();
    known.insert("apps/deployments".to_owned(), None);
    // Everything as expected: a policy refusal of a platform kind, a listed kind failing.
    let good = run(&[
        ("/configmaps", true, "create", "ok"),
        ("/nodes", false, "create", "policy"),
        ("apps/deployments", true, "create", "fail"),
        ("apps/deployments", true, "get", "blocked"),
    ]);
    assert_eq!(compare(&direct, &good, &known), Vec::<String>::new());
    // A namespaced kind refused by "policy", a listed kind passing again, an unlisted failure.
    let bad = run(&[
        ("/configmaps", true, "create", "policy"),
        ("/nodes", false, "create", "fail"),
        ("apps/deployments", true, "create", "ok"),
        ("apps/deployments", true, "get", "ok"),
    ]);
    let problems = compare(&direct, &bad, &known);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems.iter().any(|p| p.contains("shrink the list")));
    // A direct failure is a problem whatever happens through paddock.
    let broken = run(&[("/configmaps", true, "create", "fail")]);
    assert!(!compare(&broken, &broken, &BTreeMap::new()).is_empty());
}
