//! The tenant quota's vocabulary (issue 39, acceptance 4; docs/quota.md "Extended resources",
//! "Scopes"), against the real control plane with paddock's admission webhook, two replicas on
//! etcd, and beside each paddock figure the apiserver's own ResourceQuota holding the same
//! objects in a plain namespace as the cluster admin:
//! - `requests.nvidia.com/gpu: 2` (a kwok node advertising `nvidia.com/gpu`): 50 concurrent
//!   creates of 1-GPU pods over three namespaces and both replicas admit exactly 2 (overshoot
//!   0); the same burst at the apiserver against a ResourceQuota admits 2;
//! - a scoped entry `besteffort` (`scopes: [BestEffort]`, `pods: 3`): the 4th BestEffort pod
//!   is refused and a NotBestEffort pod still admitted, at the same point as a ResourceQuota
//!   with that spec; the refusals have the same words (paddock's a 403 Status naming the
//!   tenant quota entry); a deleted pod frees the entry at the next recount;
//! - the tenant sees both quotas as `tenantquotas`, the admin and the usage report show the
//!   scoped entry; names a ResourceQuota would never charge are refused;
//! - `count/widgets.<group>` of the tenant's own CRD holds.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::http::Tls;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};
use serde_json::{Value, json};

/// Polls `f` until it holds (at most `limit`); how long that took.
fn within(limit: Duration, what: &str, f: impl FnMut() -> Result<bool>) -> Result<Duration> {
    paddock_e2e::process::poll_within(limit, Duration::from_millis(200), what, f)
}

/// Runs kubectl expecting failure; returns stderr.
fn refused(k: &Kubectl, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let (line, out) = k.run_raw(&args, stdin, &Default::default(), None)?;
    if out.success() {
        bail!("expected a refusal: {line}\nstdout: {}", out.stdout);
    }
    Ok(out.stderr)
}

/// A pod: `gpus` GPUs (with a 10m CPU request, so NotBestEffort), or nothing (BestEffort)
/// when `cpu` is empty too.
fn pod(name: &str, cpu: &str, gpus: u32) -> Value {
    let mut resources = json!({});
    if !cpu.is_empty() {
        resources["requests"] = json!({"cpu": cpu});
    }
    if gpus > 0 {
        resources["requests"]["nvidia.com/gpu"] = json!(gpus.to_string());
        resources["limits"] = json!({"nvidia.com/gpu": gpus.to_string()});
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
            "resources": resources}]}})
}

/// What a burst got back.
#[derive(Debug, Default)]
struct Burst {
    created: usize,
    refused: usize,
    /// The webhook did not answer in time (fail closed: nothing created); on a saturated
    /// machine only.
    late: usize,
    /// One refusal, as answered.
    sample: String,
    /// Any other answer (status and body).
    other: Vec<String>,
}

/// 50 creates of 1-GPU pods at once, each through `clients[i % n]` into `namespaces[i % m]`;
/// a 403 Status must name `quota` as exceeded.
fn gpu_burst(clients: &[Tls], namespaces: &[String], tag: &str, quota: &str) -> Result<Burst> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..50 {
            let c = clients[i % clients.len()].clone();
            let path = format!("/api/v1/namespaces/{}/pods", namespaces[i % namespaces.len()]);
            let body = pod(&format!("{tag}-{i}"), "10m", 1).to_string();
            tasks.push(tokio::spawn(async move {
                c.send(http::Method::POST, &path, Some(("application/json", body.into_bytes())), Duration::from_secs(60)).await
            }));
        }
        let mut b = Burst::default();
        let exceeded = format!("exceeded quota: {quota}, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=2");
        for t in tasks {
            match t.await? {
                Ok((s, _)) if s.as_u16() == 201 => b.created += 1,
                Ok((s, body)) if s.as_u16() == 403 => {
                    let st: Value = serde_json::from_slice(&body)?;
                    let msg = st["message"].as_str().unwrap_or_default();
                    ensure!(st["kind"] == "Status" && st["code"] == 403 && st["reason"] == "Forbidden" && msg.contains(&exceeded),
                        "refusal: {st}");
                    b.refused += 1;
                    b.sample = msg.to_string();
                }
                Ok((s, body)) if s.as_u16() == 500 && String::from_utf8_lossy(&body).contains("failed calling webhook") => b.late += 1,
                Ok((s, body)) => b.other.push(format!("{s}: {}", String::from_utf8_lossy(&body))),
                Err(e) => b.other.push(format!("request failed: {e:?}")),
            }
        }
        Ok(b)
    })
}

/// GPUs requested by the pods of `namespaces` upstream, as the cluster admin counts them.
fn gpus_upstream(up: &Kubectl, namespaces: &[&str]) -> Result<u64> {
    let mut n = 0;
    for ns in namespaces {
        let v: Value = serde_json::from_str(&up.run(&["-n", ns, "get", "pods", "-o", "json"])?)?;
        for p in v["items"].as_array().into_iter().flatten() {
            for c in p["spec"]["containers"].as_array().into_iter().flatten() {
                n += c["resources"]["requests"]["nvidia.com/gpu"]
                    .as_str()
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Ok(n)
}

/// Creates a pod with kubectl; `Ok(None)` when created, `Ok(Some(stderr))` when refused.
fn create_pod(k: &Kubectl, ns: &str, p: &Value) -> Result<Option<String>> {
    let args: Vec<String> = ["-n", ns, "create", "-f", "-"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let (_, out) = k.run_raw(&args, Some(&p.to_string()), &Default::default(), None)?;
    Ok((!out.success()).then_some(out.stderr))
}

/// The words after the prefix each path adds (`admission webhook "..." denied the request: `
/// through paddock's webhook, `pods "x" is forbidden: ` at the apiserver).
fn quota_words(stderr: &str) -> &str {
    stderr
        .find("exceeded quota")
        .map_or(stderr, |i| &stderr[i..])
        .trim()
}

#[test]
fn extended_resources_and_scopes_hold_as_resource_quotas_do() -> Result<()> {
    let started = std::time::Instant::now();
    let cp = ControlPlane::start().context("starting the control plane")?;
    let mut args = cp.admission_args()?;
    args.extend(["--quota-recount-interval".into(), "1s".into()]);
    let r1 = Paddock::start_with_args(&cp, StoreKind::Etcd, "replica1", &args)?;
    let r2 = Paddock::start_replica(&cp, &r1, "replica2", &args)?;
    let up = cp.kubectl_admin()?;
    let phase = |what: &str| eprintln!("PHASE {what} at {:.1}s", started.elapsed().as_secs_f64());
    phase("control plane and two replicas up");

    // --- a kwok node advertising GPUs ---
    let gpus =
        r#"{"status":{"capacity":{"nvidia.com/gpu":"8"},"allocatable":{"nvidia.com/gpu":"8"}}}"#;
    up.run(&[
        "patch",
        "node",
        "kwok-node-0",
        "--subresource=status",
        "--type=merge",
        "-p",
        gpus,
    ])?;

    // --- the admin: names a ResourceQuota would never charge are refused, with the reason ---
    let tid = "qvocab";
    let kc = r1.cli(&[
        "tenant",
        "create",
        tid,
        "--quota",
        "requests.nvidia.com/gpu=2",
    ])?;
    let kc_path = r1.dir().join(format!("{tid}.kubeconfig"));
    std::fs::write(&kc_path, kc)?;
    let k = Kubectl::new(&kc_path)?
        .cache_dir(r1.dir().join("kc-vocab"))
        .log(r1.log_path());
    let set = |extra: &[&str]| -> Result<(bool, String)> {
        let mut a: Vec<String> = ["tenant", "quota", "set", tid]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        let (_, out) = r1.cli_raw(&a, Duration::from_secs(30))?;
        Ok((out.success(), format!("{}{}", out.stdout, out.stderr)))
    };
    for (bad, says) in [
        (&["limits.nvidia.com/gpu=2"][..], "requests.<name> only"),
        (&["nvidia.com/gpu=2"][..], "requests.<name> only"),
        (
            &["--scoped", "be", "--scopes", "BestEffort", "requests.cpu=1"][..],
            "unsupported scope applied to resource",
        ),
        (
            &[
                "--scoped",
                "be",
                "--scopes",
                "BestEffort,NotBestEffort",
                "pods=1",
            ][..],
            "conflicting scopes",
        ),
        (
            &[
                "--scoped",
                "be",
                "--scopes",
                "BestEffort",
                "count/configmaps=1",
            ][..],
            "a scoped entry limits what pods charge",
        ),
        (
            &["--scoped", "be", "--selector", "BestEffort In x", "pods=1"][..],
            "must be 'Exists'",
        ),
    ] {
        let (ok, out) = set(bad)?;
        ensure!(!ok && out.contains(says), "{bad:?}: {out}");
    }
    let (ok, out) = set(&["--scoped", "besteffort", "--scopes", "BestEffort", "pods=3"])?;
    ensure!(
        ok && out.contains("besteffort") && out.contains("BestEffort"),
        "{out}"
    );
    r1.cli(&["tenant", "quota", "set", tid, "count/widgets.example.com=2"])?;

    phase("admin refusals checked");
    // --- the reference: the same quotas as ResourceQuotas in a plain namespace ---
    let reference = r#"{"apiVersion":"v1","kind":"List","items":[
        {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"vocab-ref"}},
        {"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"gpu","namespace":"vocab-ref"},
         "spec":{"hard":{"requests.nvidia.com/gpu":"2"}}},
        {"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"besteffort","namespace":"vocab-ref"},
         "spec":{"hard":{"pods":"3"},"scopes":["BestEffort"]}}]}"#;
    up.run_stdin(&["create", "-f", "-"], Some(reference))?;
    let namespaces = ["a", "b", "c"];
    for ns in namespaces {
        k.run(&["create", "namespace", ns])?;
    }
    // Both count before they admit: the ResourceQuota controller writes status.used, paddock's
    // recount the scoped entry's count (until then each refuses "status unknown").
    // (The tenant namespaces' own ResourceQuota from the built-in template too.)
    let upstream_ns: Vec<String> = namespaces.iter().map(|n| format!("{tid}-{n}")).collect();
    within(Duration::from_secs(30), "quotas counted", || {
        let used = |ns: &str| {
            up.run(&[
                "-n",
                ns,
                "get",
                "resourcequota",
                "-o",
                "jsonpath={range .items[*]}{.status.used}{\"\\n\"}{end}",
            ])
        };
        let rq = used("vocab-ref")?;
        let tq = k.run(&[
            "get",
            "tenantquota",
            "besteffort",
            "-o",
            "jsonpath={.status.used.pods}",
        ])?;
        let mut tenant_rq = true;
        for ns in &upstream_ns {
            let u = used(ns)?;
            tenant_rq &= !u.trim().is_empty() && u.lines().all(|l| l.contains("pods"));
        }
        Ok(rq.contains("requests.nvidia.com/gpu") && rq.contains("pods") && tq == "0" && tenant_rq)
    })?;
    let listed = k.run(&["get", "tenantquotas"])?;
    ensure!(
        listed.contains("tenant-quota")
            && listed.contains("besteffort")
            && listed.contains("pods: 0/3"),
        "{listed}"
    );
    let be: Value =
        serde_json::from_str(&k.run(&["get", "tenantquota", "besteffort", "-o", "json"])?)?;
    ensure!(be["spec"]["scopes"] == json!(["BestEffort"]), "{be}");

    phase("quotas counted");
    // --- 50 concurrent 1-GPU pods over three namespaces and two replicas: exactly 2 ---
    let clients: Vec<Tls> = [&r1, &r2]
        .iter()
        .map(|r| Tls::from_kubeconfig(&kc_path, Some(r.url())))
        .collect::<Result<_>>()?;
    let tenant_ns: Vec<String> = namespaces.iter().map(|s| (*s).to_string()).collect();
    let ours = gpu_burst(&clients, &tenant_ns, "gpu", "tenant-quota")?;
    let upstream_refs: Vec<&str> = upstream_ns.iter().map(String::as_str).collect();
    let held = gpus_upstream(&up, &upstream_refs)?;
    let admin = vec![Tls::from_kubeconfig(&cp.admin_kubeconfig(), None)?];
    let theirs = gpu_burst(&admin, &["vocab-ref".to_string()], "gpu", "gpu")?;
    let held_ref = gpus_upstream(&up, &["vocab-ref"])?;
    eprintln!(
        "FIGURE gpu burst paddock: {} created, {} refused, {} webhook timeouts; GPUs held upstream {held} (limit 2), overshoot {}",
        ours.created,
        ours.refused,
        ours.late,
        held.saturating_sub(2)
    );
    eprintln!(
        "FIGURE gpu burst apiserver ResourceQuota: {} created, {} refused; GPUs held {held_ref}",
        theirs.created, theirs.refused
    );
    eprintln!(
        "REFUSAL paddock: {}\nREFUSAL apiserver: {}",
        ours.sample, theirs.sample
    );
    ensure!(
        ours.other.is_empty() && held <= 2 && ours.created as u64 == held,
        "{ours:?}, held {held}"
    );
    ensure!(
        ours.late > 0 || (held == 2 && ours.refused == 48),
        "{ours:?}"
    );
    ensure!(
        theirs.created == 2 && held_ref == 2,
        "{theirs:?}, held {held_ref}"
    );
    ensure!(
        quota_words(&ours.sample).replace("tenant-quota", "gpu") == quota_words(&theirs.sample),
        "{} / {}",
        ours.sample,
        theirs.sample
    );

    // The admitted GPU pods land on the one node that advertises GPUs (kwok keeps the patched
    // capacity): the scheduler's count and the quota's agree.
    within(
        Duration::from_secs(30),
        "GPU pods bound to kwok-node-0",
        || {
            let mut nodes = Vec::new();
            for ns in upstream_refs.iter().chain(["vocab-ref"].iter()) {
                let v: Value =
                    serde_json::from_str(&up.run(&["-n", ns, "get", "pods", "-o", "json"])?)?;
                for p in v["items"].as_array().into_iter().flatten() {
                    nodes.push(p["spec"]["nodeName"].as_str().unwrap_or("").to_string());
                }
            }
            Ok(nodes.len() == 4 && nodes.iter().all(|n| n == "kwok-node-0"))
        },
    )?;
    phase("GPU bursts");
    // --- BestEffort pods: the 4th refused at both, a NotBestEffort pod still admitted ---
    let mut answers = Vec::new();
    for (who, kubectl, ns) in [("paddock", &k, "a"), ("apiserver", &up, "vocab-ref")] {
        for i in 0..3 {
            let got = create_pod(kubectl, ns, &pod(&format!("be-{i}"), "", 0))?;
            ensure!(got.is_none(), "{who}: BestEffort pod {i} refused: {got:?}");
        }
        let fourth = create_pod(kubectl, ns, &pod("be-3", "", 0))?
            .with_context(|| format!("{who}: the 4th BestEffort pod was admitted"))?;
        ensure!(
            quota_words(&fourth)
                == "exceeded quota: besteffort, requested: pods=1, used: pods=3, limited: pods=3",
            "{who}: {fourth}"
        );
        let burstable = create_pod(kubectl, ns, &pod("steady", "10m", 0))?;
        ensure!(
            burstable.is_none(),
            "{who}: a NotBestEffort pod refused: {burstable:?}"
        );
        answers.push(fourth.trim().to_string());
    }
    eprintln!(
        "REFUSAL paddock: {}\nREFUSAL apiserver: {}",
        answers[0], answers[1]
    );
    ensure!(
        answers[0].contains("Forbidden") && answers[0].contains("validate.policy.paddock.io"),
        "{}",
        answers[0]
    );
    // the same refusal as a Status, raw
    let (status, body) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(clients[1].send(
            http::Method::POST,
            "/api/v1/namespaces/b/pods",
            Some((
                "application/json",
                pod("be-raw", "", 0).to_string().into_bytes(),
            )),
            Duration::from_secs(30),
        ))
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let st: Value = serde_json::from_slice(&body)?;
    ensure!(
        status.as_u16() == 403
            && st["kind"] == "Status"
            && st["reason"] == "Forbidden"
            && st["message"]
                .as_str()
                .is_some_and(|m| m.contains("exceeded quota: besteffort")),
        "{status} {st}"
    );

    phase("BestEffort sequences");
    // --- what the admin, the tenant and the usage report show ---
    let report: Value = serde_json::from_str(&r1.cli(&["tenant", "usage", tid, "-o", "json"])?)?;
    let scoped = &report["quota"]["scoped"]["besteffort"];
    ensure!(
        scoped["scopes"] == json!(["BestEffort"]) && scoped["hard"]["pods"] == "3",
        "{}",
        report["quota"]
    );
    let shown = r1.cli(&["tenant", "quota", "get", tid])?;
    ensure!(
        shown.contains("besteffort") && shown.contains("requests.nvidia.com/gpu"),
        "{shown}"
    );
    within(Duration::from_secs(20), "the entry recounted", || {
        Ok(k.run(&[
            "get",
            "tenantquota",
            "besteffort",
            "-o",
            "jsonpath={.status.used.pods}",
        ])? == "3"
            && k.run(&[
                "get",
                "tenantquota",
                "tenant-quota",
                "-o",
                "jsonpath={.status.used}",
            ])?
            .contains("\"requests.nvidia.com/gpu\":\"2\""))
    })?;

    phase("views");
    // --- a deleted BestEffort pod frees the entry at the next recount ---
    k.run(&[
        "-n",
        "a",
        "delete",
        "pod",
        "be-0",
        "--wait=true",
        "--grace-period=0",
        "--force",
    ])?;
    let freed = within(Duration::from_secs(20), "besteffort freed", || {
        Ok(k.run(&[
            "get",
            "tenantquota",
            "besteffort",
            "-o",
            "jsonpath={.status.used.pods}",
        ])? == "2")
    })?;
    eprintln!(
        "FIGURE scoped entry freed {:.1}s after the delete",
        freed.as_secs_f64()
    );
    ensure!(
        create_pod(&k, "a", &pod("be-again", "", 0))?.is_none(),
        "a freed slot admits"
    );

    phase("freed");
    // --- count/<resource>.<group> of the tenant's own CRD ---
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    k.run_stdin(
        &["create", "--validate=false", "-f", "-"],
        Some(&crd.to_string()),
    )?;
    let widget = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "c"}})
            .to_string()
    };
    // The first write may wait for the tenant's grant on its new group (issue 39, item 5).
    within(Duration::from_secs(30), "the first widget", || {
        Ok(k.run_stdin(
            &["create", "--validate=false", "-f", "-"],
            Some(&widget("w1")),
        )
        .is_ok())
    })?;
    k.run_stdin(
        &["create", "--validate=false", "-f", "-"],
        Some(&widget("w2")),
    )?;
    let err = refused(
        &k,
        &["create", "--validate=false", "-f", "-"],
        Some(&widget("w3")),
    )?;
    ensure!(
        err.contains("exceeded quota: tenant-quota, requested: count/widgets.example.com=1, used: count/widgets.example.com=2, limited: count/widgets.example.com=2"),
        "{err}"
    );
    phase("count of a tenant CRD's objects");
    Ok(())
}
