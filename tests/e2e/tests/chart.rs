//! paddock as operators deploy it (`make test-chart`, about 20 minutes; not in
//! `make test`): deploy/chart installs the image deploy/Dockerfile builds on the test bed's real
//! node, and it serves tenants through its Service while it is upgraded, loses a pod and has its
//! ServiceAccount token replaced. docs/operations.md ("The chart on the test bed") walks through
//! it step by step.
//!
//! 1. The image: the static binary built as the Dockerfile builds it, then deploy/Dockerfile
//!    built with buildah (`BINARY=prebuilt`, `RUNTIME_IMAGE` = images.sh's static-base: no
//!    registry is reachable here), loaded into the node's containerd.
//! 2. The store: a one-member TLS etcd on the host, which pods reach as `etcd.paddock.test`
//!    (the chart's `hostAliases`, pointing at the node's bridge to the host).
//! 3. `helm install --wait`: 2 replicas on the real node, the admission webhook on (a Service
//!    reference), a 600 s ServiceAccount token, the apiserver by its Service address. Tenants
//!    reach the Service through a bridge from 127.0.0.1 (what a load balancer would be).
//! 4. Checks: both replicas Ready, the PodDisruptionBudget healthy, tenants served; the webhook
//!    configuration names the Service, and the webhook, served from the pods, refuses a NodePort
//!    Service sent with the tenant's identity straight to the apiserver (the bypass run) and
//!    admits a ClusterIP one (the positive control).
//! 5. `helm upgrade` to a changed config under a steady load of two tenants: 0 failed requests.
//! 6. A replica's pod deleted under the load: fewer than 1 % failed.
//! 7. Token rotation: the kubelet replaces each pod's token; once the first tokens have expired
//!    (the apiserver refuses one: the control), the load through the Service has had no failure
//!    and each replica, asked directly, still serves.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use paddock_e2e::etcd_cluster::NAME_FOR_PODS;
use paddock_e2e::http::Tls;
use paddock_e2e::load::report::{Report, check};
use paddock_e2e::load::{Spec, TenantLoad, under_load};
use paddock_e2e::paddock::{paddock_binary, static_binary};
use paddock_e2e::process::{self, describe, free_port};
use paddock_e2e::real_node::RealNode;
use paddock_e2e::testbed::workspace_root;
use paddock_e2e::tools::helm;
use paddock_e2e::{ControlPlane, EtcdCluster, Kubectl};
use serde_json::Value;

const NS: &str = "paddock";
const RELEASE: &str = "paddock";
const IMAGE: &str = "paddock.test/paddock";
const TOKEN_SECONDS: u64 = 600;
const ETCD_NODE_PORT: u16 = 2379;

fn run_ok(cmd: &mut Command, timeout: Duration) -> Result<String> {
    let out = process::run(cmd, None, timeout)?;
    if !out.success() {
        bail!(
            "{} failed ({:?}):\n{}{}",
            describe(cmd),
            out.code,
            out.stdout,
            process::tail_lines(&out.stderr, 40)
        );
    }
    Ok(out.stdout)
}

/// deploy/Dockerfile built with buildah around the static binary, as an OCI archive; the tag.
fn build_image(cp: &ControlPlane) -> Result<(PathBuf, String)> {
    let root = workspace_root();
    let rel = static_binary()?;
    // The build context: only the binary, at the path the Dockerfile's PREBUILT names (the
    // workspace's target/ is many GB), stripped as the Dockerfile's own build stage strips it.
    let ctx = cp.dir().join("image-context");
    std::fs::create_dir_all(ctx.join(rel.parent().context("binary path")?))?;
    std::fs::copy(root.join(&rel), ctx.join(&rel))?;
    run_ok(
        Command::new("strip").arg(ctx.join(&rel)),
        Duration::from_secs(60),
    )?;
    let images = run_ok(
        Command::new("bash")
            .arg(root.join("tests/testbed/images.sh"))
            .arg("--print-dir"),
        Duration::from_secs(30 * 60),
    )?;
    let base = PathBuf::from(images.trim()).join("static-base.tar");
    ensure!(base.is_file(), "{} missing", base.display());
    let store = cp.dir().join("buildah");
    let buildah = |args: &[&str]| -> Command {
        let mut c = Command::new("buildah");
        c.arg("--root")
            .arg(store.join("root"))
            .arg("--runroot")
            .arg(store.join("run"))
            .args(["--storage-driver", "vfs"])
            .args(args);
        c
    };
    let tag = format!(
        "t{}",
        SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs()
    );
    let image = format!("{IMAGE}:{tag}");
    let t = Instant::now();
    let mut bud = buildah(&["bud", "--layers=false", "-f"]);
    bud.arg(root.join("deploy/Dockerfile"))
        .args(["--build-arg", "BINARY=prebuilt"])
        .arg("--build-arg")
        .arg(format!("PREBUILT={}", rel.display()))
        .arg("--build-arg")
        .arg(format!("RUNTIME_IMAGE=oci-archive:{}", base.display()))
        .args(["-t", &image])
        .arg(&ctx);
    run_ok(&mut bud, Duration::from_secs(600))?;
    let archive = cp.dir().join("paddock-image.tar");
    run_ok(
        &mut buildah(&[
            "push",
            &image,
            &format!("oci-archive:{}:{image}", archive.display()),
        ]),
        Duration::from_secs(300),
    )?;
    eprintln!(
        "image {image} built from deploy/Dockerfile in {:?} ({} MB)",
        t.elapsed(),
        std::fs::metadata(&archive)?.len() / 1_000_000
    );
    Ok((archive, tag))
}

/// The test bed's values for the chart: the image on the node, the store over the bridge, the
/// webhook with the test bed's admission client CA, the replicas on the real node.
fn values(cp: &ControlPlane, node: &RealNode, tag: &str, public_url: &str) -> Result<String> {
    let client_ca = std::fs::read_to_string(cp.var("ADMISSION_CLIENT_CA")?)?;
    let v = serde_json::json!({
        "replicas": 2,
        "image": {"repository": IMAGE, "tag": tag, "pullPolicy": "Never"},
        "publicUrl": public_url,
        "upstream": {"server": "https://10.96.0.1"},
        "serviceAccountToken": {"expirationSeconds": TOKEN_SECONDS},
        "certs": {"existingSecret": "paddock-certs"},
        "store": {"etcd": {
            "existingSecret": "paddock-etcd",
            "endpoints": [format!("https://{NAME_FOR_PODS}:{ETCD_NODE_PORT}")],
            "prefix": "/paddock-chart",
        }},
        "admission": {
            "enabled": true,
            "clientCaCrt": client_ca,
            "clientNames": [cp.var("ADMISSION_CLIENT_NAME")?],
        },
        "hostAliases": [{"ip": node.ip, "hostnames": [NAME_FOR_PODS]}],
        "nodeSelector": {"paddock.test/pool": "real"},
        "tolerations": [{"key": "paddock.test/real-node", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        "config": {"cert_validity": "24h", "log_format": "json", "shutdown_grace": "10s",
                   "shutdown_delay": "5s", "tenant_priority_shares": 100},
    });
    Ok(serde_json::to_string_pretty(&v)?)
}

/// The replicas' pods: (name, uid, IP), Ready ones only.
fn ready_pods(k: &Kubectl) -> Result<Vec<(String, String, String)>> {
    let pods: Value = serde_json::from_str(&k.run(&[
        "get",
        "pods",
        "-n",
        NS,
        "-l",
        "app.kubernetes.io/name=paddock",
        "-o",
        "json",
    ])?)?;
    let mut out = Vec::new();
    for p in pods["items"].as_array().into_iter().flatten() {
        let ready = p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        if ready && p["metadata"]["deletionTimestamp"].is_null() {
            out.push((
                p["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                p["metadata"]["uid"].as_str().unwrap_or_default().to_owned(),
                p["status"]["podIP"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    out.sort();
    Ok(out)
}

/// The token the kubelet projected into a pod (read from the node's volume directory), and its
/// `iat` and `exp` claims.
fn pod_token(cp: &ControlPlane, uid: &str) -> Result<(String, u64, u64)> {
    let f = cp.dir().join(format!(
        "node/kubelet/pods/{uid}/volumes/kubernetes.io~projected/kube-api-access/token"
    ));
    let token = std::fs::read_to_string(&f).with_context(|| f.display().to_string())?;
    let payload = token.split('.').nth(1).context("token is not a JWT")?;
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('='))?,
    )?;
    Ok((
        token.trim().to_owned(),
        claims["iat"].as_u64().context("iat")?,
        claims["exp"].as_u64().context("exp")?,
    ))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The tenant's load: a few workers and watches, bounded in count.
fn spec(run: &str, secs: u64, workers: usize, pause_ms: u64) -> Spec {
    Spec {
        run: run.into(),
        workers,
        watches: 1,
        duration: Duration::from_secs(secs),
        max_requests: 6_000,
        pause: Duration::from_millis(pause_ms),
        request_timeout: Duration::from_secs(20),
    }
}

/// A line of the report, shown as it happens too (the test runs for a quarter of an hour).
fn note(report: &mut Vec<String>, line: String) {
    eprintln!("{line}");
    report.push(line);
}

fn first_failures(r: &Report) -> String {
    r.failures
        .iter()
        .take(5)
        .map(|f| {
            format!(
                "at {:?} after {:?}: {} {}",
                f.at,
                f.latency,
                f.what,
                f.body.chars().take(200).collect::<String>()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
#[ignore = "builds paddock's image, installs the chart on the real node, ~20 min: make test-chart"]
fn chart_on_the_real_node() -> Result<()> {
    let t_all = Instant::now();
    let cp = ControlPlane::start_real_node()?;
    let node = RealNode::of(&cp)?;
    let admin = cp.kubectl_admin()?;
    let helm = helm()?;
    let paddock = paddock_binary()?;
    let work = cp.dir().join("chart");
    std::fs::create_dir_all(&work)?;
    let mut report = Vec::new();
    let mut failures = Vec::new();

    // 1. the image, on the node
    let (archive, tag) = build_image(&cp)?;
    node.import_image(&archive)?;

    // 2. the store: one TLS member on the host; pods reach it over the node's bridge
    let etcd = EtcdCluster::start(&work.join("etcd"), 1, Some(cp.dir().join("pids")))?;
    let etcd_host = etcd.endpoint(0).trim_start_matches("https://").to_owned();
    node.bridge_in(&cp, "etcd", ETCD_NODE_PORT, &etcd_host)?;

    // 3. certificates, Secrets, helm install
    let lb_port = free_port()?;
    let public_url = format!("https://127.0.0.1:{lb_port}");
    let certs = work.join("certs");
    run_ok(
        Command::new(&paddock)
            .args(["ca", "init", "--dir"])
            .arg(&certs)
            .args(["--hostname", &format!("{RELEASE}.{NS}.svc")])
            .args(["--server-url", &public_url]),
        Duration::from_secs(60),
    )?;
    admin.run(&["create", "namespace", NS])?;
    // A Secret in the release's namespace from (key, file) pairs.
    let secret = |name: &str, files: &[(&str, PathBuf)]| -> Result<String> {
        let mut args = vec!["-n".to_owned(), NS.into(), "create".into(), "secret".into()];
        args.extend(["generic".into(), name.into()]);
        args.extend(
            files
                .iter()
                .map(|(k, p)| format!("--from-file={k}={}", p.display())),
        );
        admin.run(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let certs_files =
        ["ca.crt", "ca.key", "serving.crt", "serving.key"].map(|f| (f, certs.join(f)));
    secret("paddock-certs", &certs_files)?;
    let pki = etcd.pki();
    secret(
        "paddock-etcd",
        &[
            ("ca.crt", pki.ca()),
            ("tls.crt", pki.file("client.crt")),
            ("tls.key", pki.file("client.key")),
        ],
    )?;
    let values_file = work.join("values-testbed.json");
    std::fs::write(&values_file, values(&cp, &node, &tag, &public_url)?)?;
    let helm_cmd = |verb: &str, extra: &[&str]| -> Command {
        let mut c = Command::new(&helm);
        c.args([verb, RELEASE])
            .arg(workspace_root().join("deploy/chart"))
            .args(["-n", NS, "--kubeconfig"])
            .arg(cp.admin_kubeconfig())
            .arg("-f")
            .arg(&values_file)
            .args(["--wait", "--timeout", "5m"])
            .args(extra);
        c
    };
    let t = Instant::now();
    if let Err(e) = run_ok(&mut helm_cmd("install", &[]), Duration::from_secs(400)) {
        let pods = admin
            .run(&["get", "pods", "-n", NS, "-o", "wide"])
            .unwrap_or_default();
        let logs = admin
            .run(&[
                "logs",
                "-n",
                NS,
                "-l",
                "app.kubernetes.io/name=paddock",
                "--tail=20",
            ])
            .unwrap_or_default();
        bail!("helm install: {e:#}\npods:\n{pods}\nlogs:\n{logs}");
    }
    let pods = ready_pods(&admin)?;
    note(
        &mut report,
        format!(
            "helm install --wait: {} replicas Ready after {:?} ({})",
            pods.len(),
            t.elapsed(),
            pods.iter()
                .map(|p| p.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    ensure!(pods.len() == 2, "Ready replicas after install: {pods:?}");
    let healthy = admin.run(&[
        "get",
        "pdb",
        RELEASE,
        "-n",
        NS,
        "-o",
        "jsonpath={.status.currentHealthy}/{.status.disruptionsAllowed}",
    ])?;
    note(
        &mut report,
        format!("PodDisruptionBudget healthy/disruptions allowed: {healthy}"),
    );
    if healthy.trim() != "2/1" {
        failures.push(format!("PDB status {healthy}, wanted 2/1"));
    }

    // the Service, reached from the host's loopback
    let cluster_ip = admin.run(&[
        "get",
        "svc",
        RELEASE,
        "-n",
        NS,
        "-o",
        "jsonpath={.spec.clusterIP}",
    ])?;
    node.bridge_out(
        &cp,
        "paddock",
        lb_port,
        &format!("{}:443", cluster_ip.trim()),
    )?;
    let admin_kc = certs.join("admin.kubeconfig");
    let mut tenants = Vec::new();
    for id in ["charta", "chartb"] {
        let kc = work.join(format!("{id}.kubeconfig"));
        let out = run_ok(
            Command::new(&paddock)
                .args(["tenant", "create", id, "--kubeconfig"])
                .arg(&admin_kc),
            Duration::from_secs(120),
        )?;
        std::fs::write(&kc, out)?;
        tenants.push(TenantLoad {
            tenant: id.into(),
            kubeconfig: kc,
            server: public_url.clone(),
            namespace: "default".into(),
        });
    }
    let ka = Kubectl::new(&tenants[0].kubeconfig)?;
    ka.run(&["create", "namespace", "web"])?;
    let ns_list = ka.run(&["get", "ns", "-o", "name"])?;
    note(
        &mut report,
        format!(
            "tenant charta through the Service: {}",
            ns_list.split_whitespace().collect::<Vec<_>>().join(" ")
        ),
    );
    ensure!(
        ns_list.contains("namespace/web"),
        "tenant namespaces: {ns_list}"
    );

    // 4. the admission webhook, served from the pods
    if let Err(e) = webhook_from_pods(&admin, &mut report) {
        failures.push(format!("admission webhook: {e:#}"));
    }

    // 5. helm upgrade to a changed config, under load
    let load_admin = Tls::from_kubeconfig(&cp.admin_kubeconfig(), None)?;
    let before = ready_pods(&admin)?;
    let (r, notes) = under_load(&tenants, spec("upgrade", 120, 2, 50), &load_admin, |_| {
        std::thread::sleep(Duration::from_secs(10));
        let t = Instant::now();
        run_ok(
            &mut helm_cmd("upgrade", &["--set", "config.tenant_max_list=400"]),
            Duration::from_secs(400),
        )?;
        run_ok(
            Command::new(admin.bin())
                .arg("--kubeconfig")
                .arg(cp.admin_kubeconfig())
                .args([
                    "rollout",
                    "status",
                    "deploy",
                    RELEASE,
                    "-n",
                    NS,
                    "--timeout=300s",
                ]),
            Duration::from_secs(320),
        )?;
        Ok(vec![format!("helm upgrade + rollout in {:?}", t.elapsed())])
    })?;
    let after = ready_pods(&admin)?;
    notes.into_iter().for_each(|n| note(&mut report, n));
    note(&mut report, format!("(upgrade) {}", r.summary()));
    if after.iter().any(|p| before.iter().any(|b| b.1 == p.1)) || after.len() != 2 {
        failures.push(format!(
            "the upgrade did not replace both replicas: before {before:?}, after {after:?}"
        ));
    }
    if r.failed() > 0 {
        failures.push(format!("(upgrade) failures: {}", first_failures(&r)));
    }
    check("(upgrade)", &r, 0, &mut failures);

    // 6. one replica's pod deleted, under load
    let victim = after.first().context("no replica")?.0.clone();
    let (r, notes) = under_load(&tenants, spec("delete", 60, 2, 50), &load_admin, |_| {
        std::thread::sleep(Duration::from_secs(10));
        let t = Instant::now();
        admin.run(&["delete", "pod", &victim, "-n", NS, "--wait=true"])?;
        process::poll_within(
            Duration::from_secs(120),
            Duration::from_millis(500),
            "two Ready replicas again",
            || Ok(ready_pods(&admin)?.len() == 2),
        )?;
        Ok(vec![format!(
            "pod {victim} deleted; two replicas Ready again after {:?}",
            t.elapsed()
        )])
    })?;
    notes.into_iter().for_each(|n| note(&mut report, n));
    note(
        &mut report,
        format!(
            "(pod deleted) {} ({:.2} % failed)",
            r.summary(),
            100.0 * r.failure_rate()
        ),
    );
    let allowed = (r.requests as f64 * 0.01).ceil() as usize;
    if r.failed() > 0 {
        note(
            &mut report,
            format!("(pod deleted) failures: {}", first_failures(&r)),
        );
    }
    check(
        "(pod deleted)",
        &r,
        allowed.saturating_sub(1),
        &mut failures,
    );

    // 7. the ServiceAccount token replaced by the kubelet; past the first tokens' expiry
    if let Err(e) = token_rotation(
        &cp,
        &node,
        &admin,
        &tenants,
        &load_admin,
        &mut report,
        &mut failures,
    ) {
        failures.push(format!("token rotation: {e:#}"));
    }

    note(&mut report, format!("whole test: {:?}", t_all.elapsed()));
    eprintln!("\n{}", report.join("\n"));
    if !failures.is_empty() {
        bail!("{} failures:\n{}", failures.len(), failures.join("\n"));
    }
    Ok(())
}

/// The webhook configurations name the Service; with the tenant's identity straight at the
/// apiserver (no paddock in the way) a NodePort Service is refused by the webhook the pods
/// serve, and a ClusterIP one is admitted.
fn webhook_from_pods(admin: &Kubectl, report: &mut Vec<String>) -> Result<()> {
    let svc = admin.run(&[
        "get",
        "validatingwebhookconfiguration",
        "paddock-tenant-policy",
        "-o",
        "jsonpath={.webhooks[0].clientConfig.service}",
    ])?;
    let svc: Value = serde_json::from_str(&svc).context("clientConfig.service")?;
    ensure!(
        svc["namespace"] == NS && svc["name"] == RELEASE && svc["port"] == 9443,
        "webhook clientConfig.service: {svc}"
    );
    let as_tenant = [
        "--as=paddock:charta:admin",
        "--as-group=paddock:charta:tenant-admins",
        "--as-group=paddock:tenant:charta",
        "--as-group=system:authenticated",
    ];
    let service = |name: &str, ty: &str| {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: charta-web}}\nspec: {{type: {ty}, ports: [{{port: 80}}]}}\n"
        )
    };
    let mut args = vec!["create", "-f", "-"];
    args.extend(as_tenant);
    let refused = admin.run_stdin(&args, Some(&service("np", "NodePort")));
    let refused = match refused {
        Ok(out) => bail!("a NodePort Service with the tenant's identity was admitted: {out}"),
        Err(e) => format!("{e:#}"),
    };
    ensure!(
        refused.contains("paddock policy services"),
        "the NodePort Service was refused, but not by paddock's policy: {refused}"
    );
    admin
        .run_stdin(&args, Some(&service("plain", "ClusterIP")))
        .context("positive control: a ClusterIP Service with the tenant's identity")?;
    note(
        report,
        format!(
            "admission webhook from the pods (service {svc}): NodePort refused straight at the apiserver ({}), ClusterIP admitted",
            refused
                .lines()
                .find(|l| l.contains("paddock policy"))
                .unwrap_or_default()
                .trim()
        ),
    );
    Ok(())
}

/// Waits until the kubelet has replaced every replica's first token and the first tokens have
/// expired (plus the minute paddock's copy may lag), with a light load running throughout.
fn token_rotation(
    cp: &ControlPlane,
    node: &RealNode,
    admin: &Kubectl,
    tenants: &[TenantLoad],
    load_admin: &Tls,
    report: &mut Vec<String>,
    failures: &mut Vec<String>,
) -> Result<()> {
    let pods = ready_pods(admin)?;
    let first: Vec<(String, String, String, u64, u64)> = pods
        .iter()
        .map(|(name, uid, _)| {
            let (tok, iat, exp) = pod_token(cp, uid)?;
            Ok((name.clone(), uid.clone(), tok, iat, exp))
        })
        .collect::<Result<_>>()?;
    let last_exp = first.iter().map(|f| f.4).max().context("no pods")?;
    ensure!(
        first.iter().all(|f| f.4 - f.3 <= TOKEN_SECONDS + 60),
        "tokens live longer than {TOKEN_SECONDS} s: {:?}",
        first.iter().map(|f| (f.3, f.4)).collect::<Vec<_>>()
    );
    // until the last first token expired, and paddock's re-read (a minute) is past
    let wait = last_exp.saturating_sub(now()) + 75;
    note(
        report,
        format!(
            "token rotation: first tokens expire in {} s; a light load runs {wait} s",
            last_exp.saturating_sub(now())
        ),
    );
    let (r, notes) = under_load(tenants, spec("token", wait, 1, 500), load_admin, |t0| {
        let mut seen = Vec::new();
        while t0.elapsed() < Duration::from_secs(wait) {
            for (name, uid, tok, iat, _) in &first {
                if seen.iter().any(|s: &String| s == name) {
                    continue;
                }
                if let Ok((t, new_iat, _)) = pod_token(cp, uid)
                    && t != *tok
                {
                    seen.push(name.clone());
                    eprintln!(
                        "{name}: token replaced {} s after the first was issued",
                        new_iat - iat
                    );
                }
            }
            std::thread::sleep(Duration::from_secs(5));
        }
        Ok(seen)
    })?;
    note(
        report,
        format!("(token) replaced by the kubelet in: {}", notes.join(", ")),
    );
    if notes.len() != first.len() {
        failures.push(format!(
            "the kubelet replaced the token of {} of {} replicas",
            notes.len(),
            first.len()
        ));
    }
    note(report, format!("(token) {}", r.summary()));
    if r.failed() > 0 {
        note(report, format!("(token) failures: {}", first_failures(&r)));
    }
    check("(token)", &r, 0, failures);
    // the control: a first token is refused by the apiserver now
    let dir = cp.dir().join("chart");
    let expired = paddock_e2e::token::token_kubeconfig(
        &dir,
        "expired-token",
        &cp.admin_kubeconfig(),
        &first[0].2,
    )?;
    let refused = Kubectl::new(expired)?.run(&["get", "--raw", "/api"]);
    ensure!(
        refused
            .as_ref()
            .is_err_and(|e| format!("{e:#}").contains("Unauthorized")),
        "the control: the first token of {} is still accepted: {refused:?}",
        first[0].0
    );
    // each replica, asked directly, serves with its current token
    for (i, (name, _, ip)) in ready_pods(admin)?.iter().enumerate() {
        let port = free_port()?;
        node.bridge_out(cp, &format!("replica{i}"), port, &format!("{ip}:8443"))?;
        let k = Kubectl::new(&tenants[0].kubeconfig)?;
        let out = k.run(&[
            "--server",
            &format!("https://127.0.0.1:{port}"),
            "get",
            "ns",
            "-o",
            "name",
        ])?;
        ensure!(out.contains("namespace/web"), "replica {name}: {out}");
        note(
            report,
            format!("(token) replica {name} asked directly past the first tokens' expiry: serves"),
        );
    }
    Ok(())
}
