//! Third-party operators through paddock (issue 38, acceptance check 2; `make test-operators`,
//! not in `make test`; docs/operators.md): two tenants on the test bed's real node each
//! install cert-manager v1.11.5 and external-dns v0.21.0 with their own charts, built from
//! their sources on the Go module proxy (tests/testbed/operators.sh), and each operator does
//! its job through paddock's in-cluster path.
//!
//! 1. operators.sh (cached), the control plane with the real node, the six images imported
//!    into its containerd, paddock as inside_view.rs starts it (etcd store, admission webhook,
//!    in-cluster host and Service, tenant DNS; `--cluster-egress-uds <dir>/egress-proxy.sock`
//!    when the binary has the flag), two tenants on the node's pool.
//! 2. In both tenants at once: `helm install cert-manager` (`installCRDs=true`, `--wait
//!    --wait-for-jobs`: the chart's startupapicheck Job is its own end-to-end check of the
//!    webhook and the CRDs), then a Service `web/shop` named `shop.example.test` and `helm
//!    install external-dns` (in-memory provider, `txtOwnerId=<tenant>`).
//! 3. Checks, per tenant, all run and reported (the test fails at the end if one failed):
//!    the Leases in the tenant's `kube-system` held (as the cluster admin sees them); both
//!    webhook configurations' caBundle equal to the tenant's `cert-manager-webhook-ca` (the
//!    cainjector's work); an invalid Certificate refused by cert-manager's webhook with its own
//!    message, in the tenant's names; a self-signed Issuer and Certificate issued, the Secret
//!    read by the tenant, its SANs as asked, the same bytes upstream; external-dns's log with
//!    `CREATE: shop.example.test ... A [<the tenant's cluster IP>]` and `owner=<tenant>`,
//!    never the other tenant's; each tenant's CRDs, webhook configurations, Leases and
//!    APIServices hold its own objects only, in its own names (the cluster admin's view,
//!    prefix removed, is the tenant's); the test bed's way to a tenant webhook (a CONNECT
//!    through the egress guard to the Service's cluster IP, TLS for `<svc>.<ns>.svc`, an
//!    AdmissionReview in the tenant's names) answered by the webhook itself.
//! 4. Figures: helm install times, time from `helm install` to each Deployment Available
//!    (polled upstream every 0.5 s), from `kubectl apply` to the Certificate's Secret, and
//!    requests through paddock per component and tenant (paddock's access log).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use paddock_e2e::operators::{
    Availability, Checks, Install, Operators, access_counts, admission_review, component, created,
    helm_install, log_mark, post_via_egress, refusals, secs, subject_alt_names,
};
use paddock_e2e::paddock::paddock_binary;
use paddock_e2e::process::{self, indent, poll_within, tail_file};
use paddock_e2e::real_node::{
    POOL_SCHEDULING, RealNode, cluster_ip, egress_socket, start_in_cluster,
};
use paddock_e2e::tools::helm;
use paddock_e2e::{ControlPlane, Kubectl, Paddock};
use serde_json::Value;

const A: &str = "optena";
const B: &str = "optenb";
const EVERY: Duration = Duration::from_millis(500);
const HELM_TIMEOUT: &str = "5m";
const HELM_LIMIT: Duration = Duration::from_secs(330);
const WEBHOOK: &str = "cert-manager-webhook";
const INVALID: &str =
    "at least one of commonName, dnsNames, uris ipAddresses, or emailAddresses must be set";

#[test]
#[ignore = "make test-operators: cert-manager and external-dns through paddock (~10 min)"]
fn tenants_run_cert_manager_and_external_dns_through_paddock() -> Result<()> {
    let ops = Operators::build()?;
    let helm = helm()?;
    let cp = ControlPlane::start_real_node().context("starting the control plane")?;
    let node = RealNode::of(&cp)?;
    let t = Instant::now();
    for archive in ops.images()? {
        node.import_image(&archive)?;
    }
    eprintln!("six images imported in {}", secs(t.elapsed()));
    let mut extra = Vec::new();
    let help = process::run(
        Command::new(paddock_binary()?).args(["serve", "--help"]),
        None,
        Duration::from_secs(30),
    )?;
    if help.stdout.contains("--cluster-egress-uds") {
        extra.push("--cluster-egress-uds".to_owned());
        extra.push(egress_socket(&cp).display().to_string());
    } else {
        eprintln!("this paddock has no --cluster-egress-uds (no tenant-webhook relay yet)");
    }
    let p = start_in_cluster(&cp, &node, &extra)?;
    let r = run(&cp, &p, &ops, &helm);
    if r.is_err() {
        for log in ["egress-proxy", "node-egress", "kube-apiserver"] {
            eprintln!(
                "tail of {log}'s log:\n{}",
                indent(
                    &tail_file(&cp.dir().join("logs").join(format!("{log}.log")), 15),
                    "  | "
                )
            );
        }
        eprintln!("paddock log: {}", p.log_path().display());
    }
    r
}

/// One tenant's side of the run.
struct Tenant {
    id: &'static str,
    other: &'static str,
    k: Kubectl,
    kubeconfig: PathBuf,
    cert_manager: Option<Install>,
    external_dns: Option<Install>,
    secret_after: Option<Duration>,
}

fn run(cp: &ControlPlane, p: &Paddock, ops: &Operators, helm: &Path) -> Result<()> {
    let up = cp.kubectl_admin()?;
    let mut tenants = Vec::new();
    for (id, other) in [(A, B), (B, A)] {
        let kubeconfig = p.tenant(id)?;
        p.cli(&[
            "tenant",
            "policy",
            id,
            "--patch",
            &format!("{{{POOL_SCHEDULING}}}"),
        ])?;
        tenants.push(Tenant {
            id,
            other,
            // without paddock's log tail in its failures: the checks' reports stay short
            k: Kubectl::new(&kubeconfig)?.cache_dir(cp.dir().join("kubectl-cache").join(id)),
            kubeconfig,
            cert_manager: None,
            external_dns: None,
            secret_after: None,
        });
    }
    let log = p.log_path().to_owned();
    let mark0 = log_mark(&log);
    let mut available = Availability::watch(cp.kubectl_admin()?);
    let t = Instant::now();
    std::thread::scope(|s| {
        for t in &mut tenants {
            s.spawn(move || install(t, ops, helm));
        }
    });
    available.stop();
    eprintln!("installs of both tenants done in {}", secs(t.elapsed()));
    std::thread::sleep(Duration::from_millis(500)); // the access log's last batch
    let mark1 = log_mark(&log);

    let mut checks = Checks::default();
    for t in &mut tenants {
        checks_of(&mut checks, cp, &up, &log, t);
    }
    let ips: BTreeMap<&str, String> = tenants
        .iter()
        .map(|t| (t.id, cluster_ip(&t.k, "web", "shop").unwrap_or_default()))
        .collect();
    for t in &tenants {
        let name = format!("{}: external-dns's records", t.id);
        checks.run(&name, || external_dns_log(t, &ips));
        let name = format!("{}: views hold its own objects only", t.id);
        checks.run(&name, || views(t, &up));
    }
    std::thread::sleep(Duration::from_millis(500));
    figures(&tenants, &available, &log, mark0, mark1)?;
    checks.finish()
}

/// helm install cert-manager, the Service external-dns publishes, helm install external-dns.
fn install(t: &mut Tenant, ops: &Operators, helm: &Path) {
    let mut args = vec![
        "--set".into(),
        "installCRDs=true".into(),
        "-f".into(),
        ops.values("cert-manager").display().to_string(),
        "--wait".into(),
        "--wait-for-jobs".into(),
        "--timeout".into(),
        HELM_TIMEOUT.into(),
    ];
    let cm = helm_install(
        helm,
        &t.kubeconfig,
        "cert-manager",
        &ops.chart("cert-manager"),
        &args,
        HELM_LIMIT,
    );
    eprintln!(
        "{}: helm install cert-manager {} after {}",
        t.id,
        if cm.result.is_ok() { "done" } else { "FAILED" },
        secs(cm.took)
    );
    t.cert_manager = Some(cm);
    if let Err(e) = t.k.run_stdin(&["apply", "-f", "-"], Some(SHOP)) {
        eprintln!("{}: creating web/shop: {e:#}", t.id);
    }
    args = vec![
        "-f".into(),
        ops.values("external-dns").display().to_string(),
        "--set".into(),
        "provider.name=inmemory".into(),
        "--set".into(),
        "policy=sync".into(),
        "--set".into(),
        format!("txtOwnerId={}", t.id),
        "--set".into(),
        "logLevel=debug".into(),
        "--set".into(),
        "interval=10s".into(),
        "--set".into(),
        "extraArgs={--inmemory-zone=example.test,--publish-internal-services}".into(),
        "--wait".into(),
        "--timeout".into(),
        HELM_TIMEOUT.into(),
    ];
    let ed = helm_install(
        helm,
        &t.kubeconfig,
        "external-dns",
        &ops.chart("external-dns"),
        &args,
        HELM_LIMIT,
    );
    eprintln!(
        "{}: helm install external-dns {} after {}",
        t.id,
        if ed.result.is_ok() { "done" } else { "FAILED" },
        secs(ed.took)
    );
    t.external_dns = Some(ed);
}

const SHOP: &str = "apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: v1
kind: Service
metadata:
  name: shop
  namespace: web
  annotations: {external-dns.alpha.kubernetes.io/hostname: shop.example.test}
spec: {selector: {app: shop}, ports: [{port: 80}]}
";

fn checks_of(checks: &mut Checks, cp: &ControlPlane, up: &Kubectl, log: &Path, t: &mut Tenant) {
    let id = t.id;
    checks.run(&format!("{id}: helm install cert-manager"), || {
        helm_result(t.cert_manager.as_ref(), &t.k, "cert-manager")
            .with_context(|| refusals_note(log, id))
    });
    checks.run(&format!("{id}: helm install external-dns"), || {
        helm_result(t.external_dns.as_ref(), &t.k, "external-dns")
            .with_context(|| refusals_note(log, id))
    });
    checks.run(&format!("{id}: Leases held in kube-system"), || {
        leases(t, up)
    });
    checks.run(&format!("{id}: webhook caBundles injected"), || {
        ca_bundles(t)
    });
    checks.run(
        &format!("{id}: test bed's way to the tenant webhook"),
        || webhook_via_egress(cp, t),
    );
    checks.run(&format!("{id}: invalid Certificate refused"), || {
        invalid_refused(t)
    });
    let mut secret_after = None;
    checks.run(&format!("{id}: self-signed Certificate issued"), || {
        let (note, took) = certificate(t, up).with_context(|| refusals_note(log, id))?;
        secret_after = Some(took);
        Ok(note)
    });
    t.secret_after = secret_after;
}

fn refusals_note(log: &Path, id: &str) -> String {
    format!(
        "paddock's last refusals of {id}'s workloads:\n{}",
        indent(&refusals(log, id, 6), "  | ")
    )
}

fn helm_result(install: Option<&Install>, k: &Kubectl, release: &str) -> Result<String> {
    let i = install.context("not run")?;
    match &i.result {
        Ok(()) => Ok(format!("in {}", secs(i.took))),
        Err(e) => {
            let mut why = format!("{e:#}");
            let pods = k
                .run(&["-n", release, "get", "pods,jobs", "-o", "wide"])
                .unwrap_or_else(|e| format!("{e:#}"));
            why.push_str(&format!(
                "\n{release}'s pods and jobs:\n{}",
                indent(&pods, "  | ")
            ));
            if release == "cert-manager" {
                let (_, logs) = attempt(
                    k,
                    &[
                        "-n",
                        release,
                        "logs",
                        "-l",
                        "job-name=cert-manager-startupapicheck",
                        "--tail=2",
                    ],
                    None,
                )?;
                why.push_str(&format!(
                    "\nstartupapicheck's last lines:\n{}",
                    indent(&logs, "  | ")
                ));
            }
            bail!(why)
        }
    }
}

/// `ns/name holder` of the Leases, as the tenant sees them and (prefix removed) upstream.
fn leases(t: &Tenant, up: &Kubectl) -> Result<String> {
    let jsonpath = "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.spec.holderIdentity}{\"\\n\"}{end}";
    let mut last = (String::new(), String::new());
    poll_within(
        Duration::from_secs(60),
        EVERY,
        "both Leases held, the same upstream",
        || {
            let mine =
                t.k.run(&["-n", "kube-system", "get", "leases", "-o", jsonpath])?;
            let upstream = up.run(&[
                "-n",
                &format!("{}-kube-system", t.id),
                "get",
                "leases",
                "-o",
                jsonpath,
            ])?;
            let upstream = upstream.replace(&format!("{}-kube-system/", t.id), "kube-system/");
            let held = |name: &str| {
                mine.lines().any(|l| {
                    l.split_once(' ')
                        .is_some_and(|(n, h)| n == format!("kube-system/{name}") && !h.is_empty())
                })
            };
            let ok = held("cert-manager-controller")
                && held("cert-manager-cainjector-leader-election")
                && mine == upstream;
            last = (mine, upstream);
            Ok(ok)
        },
    )
    .with_context(|| format!("the tenant's:\n{}\nupstream's:\n{}", last.0, last.1))?;
    Ok(last.0.trim().replace('\n', "; "))
}

/// Both webhook configurations carry the tenant's webhook CA, put there by the cainjector.
fn ca_bundles(t: &Tenant) -> Result<String> {
    let ca = secret_field(&t.k, "cert-manager", "cert-manager-webhook-ca", "ca.crt")?;
    let mut last = String::new();
    poll_within(
        Duration::from_secs(60),
        EVERY,
        "the caBundles equal to the CA Secret's ca.crt",
        || {
            let mut all = true;
            last.clear();
            for kind in [
                "mutatingwebhookconfiguration",
                "validatingwebhookconfiguration",
            ] {
                let bundles = t.k.run(&[
                    "get",
                    kind,
                    WEBHOOK,
                    "-o",
                    "jsonpath={range .webhooks[*]}{.clientConfig.caBundle}{\"\\n\"}{end}",
                ])?;
                for b in bundles.lines() {
                    let pem = base64::engine::general_purpose::STANDARD
                        .decode(b.trim())
                        .unwrap_or_default();
                    all &= !pem.is_empty() && pem == ca;
                }
                all &= !bundles.trim().is_empty();
                last.push_str(&format!("{kind}: {:?}\n", truncate(&bundles, 60)));
            }
            Ok(all)
        },
    )
    .with_context(|| format!("last seen:\n{last}"))?;
    Ok(format!(
        "both configurations carry the CA of Secret cert-manager/cert-manager-webhook-ca ({} bytes)",
        ca.len()
    ))
}

/// The test bed's way from paddock (on the host) to the tenant's webhook Service, as the
/// tenant-webhook relay takes it: CONNECT `<cluster IP>:443` through the egress guard, TLS
/// for `cert-manager-webhook.cert-manager.svc` with the tenant's CA, an AdmissionReview of an
/// invalid Certificate in the tenant's names: refused by the webhook with its own message.
/// Controls: the upstream Service name fails TLS (finding 1), the upstream group is unknown to
/// the webhook (finding 2).
fn webhook_via_egress(cp: &ControlPlane, t: &Tenant) -> Result<String> {
    let ca = secret_field(&t.k, "cert-manager", "cert-manager-webhook-ca", "ca.crt")?;
    let ip = cluster_ip(&t.k, "cert-manager", WEBHOOK)?;
    let target = format!("{ip}:443");
    let name = format!("{WEBHOOK}.cert-manager.svc");
    let review = |group: &str, ns: &str| admission_review(group, ns).to_string();
    let (status, body) = post_via_egress(
        cp,
        &target,
        &ca,
        &name,
        "/validate",
        &review("cert-manager.io", "app"),
    )?;
    let answer: Value = serde_json::from_str(&body).with_context(|| body.clone())?;
    let message = answer["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default();
    ensure!(
        status == 200 && answer["response"]["allowed"] == false && message.contains(INVALID),
        "the webhook's answer ({status}): {body}"
    );
    let upstream_name = format!("{WEBHOOK}.{}-cert-manager.svc", t.id);
    let tls = post_via_egress(cp, &target, &ca, &upstream_name, "/validate", "{}");
    ensure!(
        tls.as_ref()
            .is_err_and(|e| format!("{e:#}").contains("certificate")),
        "control: TLS for {upstream_name} did not fail: {tls:?}"
    );
    let (_, body) = post_via_egress(
        cp,
        &target,
        &ca,
        &name,
        "/validate",
        &review(
            &format!("{}-cert-manager.io", t.id),
            &format!("{}-app", t.id),
        ),
    )?;
    ensure!(
        !body.contains(INVALID),
        "control: the webhook validated the upstream group: {body}"
    );
    Ok(format!(
        "CONNECT {target} via {}, TLS as {name}: {message:?}",
        egress_socket(cp).display()
    ))
}

/// A Certificate the CRD's schema admits (secretName and issuerRef set) but cert-manager's
/// validation does not (no name of any kind): refused by the webhook, in the tenant's names.
fn invalid_refused(t: &Tenant) -> Result<String> {
    t.k.run_stdin(&["apply", "-f", "-"], Some(APP_NS))?;
    let bad = "apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: bad, namespace: app}
spec: {secretName: bad-tls, issuerRef: {name: selfsigned, kind: Issuer}}
";
    let (ok, out) = attempt(&t.k, &["apply", "-f", "-"], Some(bad))?;
    ensure!(!ok, "the invalid Certificate was admitted: {out}");
    ensure!(
        out.contains("admission webhook \"webhook.cert-manager.io\" denied the request")
            && out.contains(INVALID),
        "not cert-manager's own refusal: {out}"
    );
    ensure!(
        !out.contains(&format!("{}-", t.id)),
        "an upstream name in the refusal: {out}"
    );
    let (there, _) = attempt(&t.k, &["-n", "app", "get", "certificate", "bad"], None)?;
    ensure!(!there, "the refused Certificate exists");
    Ok(out.trim().to_owned())
}

const APP_NS: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n";

/// A self-signed Issuer and a Certificate: the Secret, read by the tenant, holds a certificate
/// for the names asked, and is the same upstream. Returns the note and apply -> Secret.
fn certificate(t: &Tenant, up: &Kubectl) -> Result<(String, Duration)> {
    let names = [
        "web.app.svc.cluster.local".to_owned(),
        "web.app.svc".to_owned(),
        format!("{}.example.test", t.id),
    ];
    let manifest = format!(
        "{APP_NS}---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata: {{name: selfsigned, namespace: app}}
spec: {{selfSigned: {{}}}}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {{name: web, namespace: app}}
spec:
  secretName: web-tls
  commonName: {}
  dnsNames: [{}]
  issuerRef: {{name: selfsigned, kind: Issuer}}
",
        names[0],
        names.join(", ")
    );
    let t0 = Instant::now();
    t.k.run_stdin(&["apply", "-f", "-"], Some(&manifest))?;
    let mut last = String::new();
    poll_within(
        Duration::from_secs(120),
        EVERY,
        "Secret app/web-tls",
        || {
            let (ok, out) = attempt(&t.k, &["-n", "app", "get", "secret", "web-tls"], None)?;
            last = out;
            Ok(ok)
        },
    )
    .with_context(|| {
        let status =
            t.k.run(&[
                "-n",
                "app",
                "get",
                "certificate,certificaterequest,issuer",
                "-o",
                "wide",
            ])
            .unwrap_or_else(|e| format!("{e:#}"));
        format!("last: {last}\n{status}")
    })?;
    let took = t0.elapsed();
    t.k.run(&[
        "-n",
        "app",
        "wait",
        "certificate/web",
        "--for=condition=Ready",
        "--timeout=60s",
    ])?;
    let crt = secret_field(&t.k, "app", "web-tls", "tls.crt")?;
    let upstream = secret_field(up, &format!("{}-app", t.id), "web-tls", "tls.crt")?;
    ensure!(crt == upstream, "the Secret differs upstream");
    let sans = subject_alt_names(&crt)?;
    let want: BTreeSet<String> = names.iter().map(|n| format!("DNS:{n}")).collect();
    ensure!(sans == want, "SANs {sans:?}, asked {want:?}");
    Ok((
        format!(
            "Secret app/web-tls {} after apply; SANs {}",
            secs(took),
            sans.into_iter().collect::<Vec<_>>().join(", ")
        ),
        took,
    ))
}

/// external-dns created the tenant's own records, under the tenant's names, and nothing of the
/// other tenant's.
fn external_dns_log(t: &Tenant, ips: &BTreeMap<&str, String>) -> Result<String> {
    let mine = ips
        .get(t.id)
        .filter(|ip| !ip.is_empty())
        .context("no cluster IP of web/shop")?;
    let theirs = ips.get(t.other).cloned().unwrap_or_default();
    let owner = format!("external-dns/owner={}", t.id);
    let mut logs = String::new();
    poll_within(
        Duration::from_secs(90),
        EVERY,
        "external-dns's CREATE of shop.example.test",
        || {
            logs =
                t.k.run(&["-n", "external-dns", "logs", "deployment/external-dns"])
                    .unwrap_or_default();
            Ok(created(&logs, "A")
                .iter()
                .any(|r| r.contains(&mine.as_str()))
                && created(&logs, "TXT")
                    .iter()
                    .any(|r| r.iter().any(|w| w.contains(&owner))))
        },
    )
    .with_context(|| format!("external-dns's log:\n{}", indent(&tail(&logs, 30), "  | ")))?;
    let creates: Vec<&str> = logs.lines().filter(|l| l.contains("CREATE: ")).collect();
    ensure!(
        creates
            .iter()
            .any(|l| l.contains(&owner) && l.contains("resource=service/web/shop")),
        "the TXT record does not name service/web/shop: {creates:#?}"
    );
    for foreign in [theirs.as_str(), t.other, &format!("{}-", t.id)] {
        ensure!(
            foreign.is_empty() || !logs.contains(foreign),
            "external-dns's log holds {foreign:?}:\n{}",
            indent(&tail(&logs, 30), "  | ")
        );
    }
    Ok(creates
        .iter()
        .map(|l| {
            l.split("CREATE: ")
                .nth(1)
                .unwrap_or(l)
                .trim()
                .trim_end_matches('"')
        })
        .collect::<Vec<_>>()
        .join(" | "))
}

/// The tenant's CRDs, webhook configurations and Leases are exactly its own upstream (prefix
/// removed), its APIServices are served and none of them is the other tenant's.
fn views(t: &Tenant, up: &Kubectl) -> Result<String> {
    let names = |k: &Kubectl, args: &[&str]| -> Result<BTreeSet<String>> {
        Ok(k.run(args)?.lines().map(str::to_owned).collect())
    };
    let mut notes = Vec::new();
    let lease_path =
        "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}";
    for (what, args, mapped) in [
        (
            "CRDs",
            vec!["get", "crds", "-o", "name"],
            format!(".{}-", t.id),
        ),
        (
            "mutating webhooks",
            vec!["get", "mutatingwebhookconfigurations", "-o", "name"],
            format!("/{}-", t.id),
        ),
        (
            "validating webhooks",
            vec!["get", "validatingwebhookconfigurations", "-o", "name"],
            format!("/{}-", t.id),
        ),
        (
            "Leases",
            vec!["get", "leases", "-A", "-o", lease_path],
            format!("^{}-", t.id),
        ),
    ] {
        let mine = names(&t.k, &args)?;
        let upstream = names(up, &args)?;
        let expected: BTreeSet<String> = upstream
            .iter()
            .filter_map(|n| match mapped.strip_prefix('^') {
                Some(p) => n.strip_prefix(p).map(str::to_owned),
                None => n
                    .contains(&mapped)
                    .then(|| n.replacen(&mapped, &mapped[..1], 1)),
            })
            .collect();
        ensure!(
            mine == expected,
            "{what}: the tenant's {mine:?}, its own upstream {expected:?}"
        );
        ensure!(!mine.is_empty(), "{what}: the tenant holds none");
        notes.push(format!("{what} {}", mine.len()));
    }
    let (ok, out) = attempt(&t.k, &["get", "apiservices", "-o", "name"], None)?;
    ensure!(ok, "APIServices: {out}");
    notes.push(format!("APIServices {}", out.lines().count()));
    for (what, args) in [
        ("CRDs", vec!["get", "crds", "-o", "name"]),
        ("APIServices", vec!["get", "apiservices", "-o", "name"]),
        ("Leases", vec!["get", "leases", "-A"]),
    ] {
        let out = t.k.run(&args)?;
        ensure!(
            !out.contains(t.other) && !out.contains(&format!("{}-", t.id)),
            "{what} of the tenant name another tenant or an upstream name:\n{out}"
        );
    }
    Ok(notes.join(", "))
}

fn figures(
    tenants: &[Tenant],
    available: &Availability,
    log: &Path,
    mark0: u64,
    mark1: u64,
) -> Result<()> {
    let during = access_counts(log, mark0, Some(mark1))?;
    let whole = access_counts(log, mark0, None)?;
    let mut s = String::from("\n== operators through paddock: figures ==\n");
    for t in tenants {
        s.push_str(&format!("tenant {}:\n", t.id));
        for (release, install, deployments) in [
            (
                "cert-manager",
                &t.cert_manager,
                &[
                    "cert-manager",
                    "cert-manager-cainjector",
                    "cert-manager-webhook",
                ][..],
            ),
            ("external-dns", &t.external_dns, &["external-dns"][..]),
        ] {
            let Some(i) = install else { continue };
            let end = if i.result.is_ok() { "done" } else { "FAILED" };
            let ready: Vec<String> = deployments
                .iter()
                .map(|d| {
                    let at = available.first(&format!("{}-{release}", t.id), d);
                    let after = at.map_or("never".into(), |at| secs(at.duration_since(i.started)));
                    format!("{d} {after}")
                })
                .collect();
            s.push_str(&format!(
                "  helm install {release}: {end} after {}; Available after helm install: {}\n",
                secs(i.took),
                ready.join(", ")
            ));
        }
        let secret = t.secret_after.map_or("never".into(), secs);
        s.push_str(&format!(
            "  Certificate applied -> Secret app/web-tls: {secret}\n"
        ));
        s.push_str("  requests through paddock (during the installs / whole run, not 2xx):\n");
        for ((tenant, user), (n, bad)) in &whole {
            if tenant != t.id {
                continue;
            }
            let (d, dbad) = during
                .get(&(tenant.clone(), user.clone()))
                .copied()
                .unwrap_or_default();
            s.push_str(&format!(
                "    {:<42} {d:>5} / {n:>5}   ({dbad} / {bad})\n",
                component(user)
            ));
        }
    }
    eprintln!("{s}");
    Ok(())
}

/// Runs kubectl, whatever the outcome: (exit 0, stdout and stderr).
fn attempt(k: &Kubectl, args: &[&str], stdin: Option<&str>) -> Result<(bool, String)> {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let (_, out) = k.run_raw(&args, stdin, &Default::default(), None)?;
    Ok((out.success(), format!("{}{}", out.stdout, out.stderr)))
}

fn secret_field(k: &Kubectl, ns: &str, name: &str, key: &str) -> Result<Vec<u8>> {
    let b64 = k.run(&[
        "-n",
        ns,
        "get",
        "secret",
        name,
        "-o",
        &format!("jsonpath={{.data.{}}}", key.replace('.', "\\.")),
    ])?;
    let data = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .with_context(|| format!("{ns}/{name} {key}"))?;
    ensure!(!data.is_empty(), "{ns}/{name} has no {key}");
    Ok(data)
}

fn tail(s: &str, n: usize) -> String {
    process::tail_lines(s, n)
}

fn truncate(s: &str, n: usize) -> String {
    process::truncate(s.trim(), n)
}
