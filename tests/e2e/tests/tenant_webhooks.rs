//! A tenant's own admission webhooks, relayed by paddock (docs/webhooks.md), on the test bed's
//! real node. The tenant's webhook is a small HTTPS server (Python, on the host, bridged to the
//! node's address) behind a selector-less Service `hooks/hook` of the tenant, with a serving
//! certificate for the tenant's names only (`hook.hooks.svc`) from a CA of the tenant's own.
//!
//! - The configurations read back as the tenant wrote them; upstream they name paddock's
//!   relay and paddock's CA.
//! - The webhook gets every review in the tenant's names (namespace, group, object, user) and
//!   nothing of another tenant; its denial reaches the tenant in its own words, its JSON patch
//!   lands (translated) on the object.
//! - paddock checks the webhook's certificate against the tenant's CA and `<svc>.<ns>.svc`: a
//!   Service name the certificate does not hold fails the call; failurePolicy decides what a
//!   failed call means (Fail refuses with the cause, Ignore lets the request through).
//! - A patch of part of a client config is refused (it is written whole).
//! - The bypass run: the tenant's identity straight at the apiserver cannot point a webhook at
//!   another tenant's relay path or at any URL; its own relay path is allowed (the control).

use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use paddock_e2e::process::{free_port, indent, poll_within, tail_file};
use paddock_e2e::real_node::{RealNode, wait_for_webhook};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use serde_json::Value;

const A: &str = "hooksa";
const B: &str = "hooksb";
/// The webhook's port on the node's address (a bridge to its loopback port on the host).
const HOOK_NODE_PORT: u16 = 9555;

#[test]
fn tenant_webhooks_are_called_in_the_tenants_names() -> Result<()> {
    let cp = ControlPlane::start_real_node().context("starting the control plane")?;
    let node = RealNode::of(&cp)?;
    let hook = Hook::start(&cp)?;
    node.bridge_in(
        &cp,
        "hook",
        HOOK_NODE_PORT,
        &format!("127.0.0.1:{}", hook.port),
    )?;
    let mut args = cp.admission_args()?;
    args.push("--cluster-egress-uds".into());
    args.push(cp.dir().join("egress-proxy.sock").display().to_string());
    let p = Paddock::start_with_args(&cp, StoreKind::Etcd, "paddock", &args)?;
    let r = run(&cp, &p, &node, &hook);
    if r.is_err() {
        eprintln!(
            "tail of the webhook's log:\n{}",
            indent(&tail_file(&hook.log, 10), "  | ")
        );
        eprintln!("paddock log: {}", p.log_path().display());
    }
    r
}

fn run(cp: &ControlPlane, p: &Paddock, node: &RealNode, hook: &Hook) -> Result<()> {
    let up = cp.kubectl_admin()?;
    wait_for_webhook(cp)?;
    let a = p.kubectl_tenant(A)?;
    let b = p.kubectl_tenant(B)?;
    for k in [&a, &b] {
        k.run_stdin(&["apply", "-f", "-"], Some(NAMESPACES_AND_CRD))?;
        k.run(&[
            "wait",
            "--for=condition=established",
            "--timeout=60s",
            "crd/widgets.example.com",
        ])?;
    }
    // The Service's endpoint is the bridge on the node (a tenant may not write Endpoints).
    up.run_stdin(&["apply", "-f", "-"], Some(&endpoint_slice(A, &node.ip)))?;
    a.run_stdin(
        &["apply", "-f", "-"],
        Some(&configurations(&hook.ca_b64, "hook")),
    )?;
    // The node's kube-proxy programs a new Service within a second or two; a call before that
    // hangs, as the apiserver's own would (the cluster IP routes nowhere yet).
    poll_within(
        Duration::from_secs(90),
        Duration::from_secs(1),
        "the tenant's webhook answering through the relay",
        || {
            let (ok, _) = attempt(
                &a,
                &[
                    "-n",
                    "app",
                    "create",
                    "configmap",
                    "ready",
                    "--from-literal=k=v",
                    "--dry-run=server",
                ],
            )?;
            Ok(ok)
        },
    )?;

    reads_back_as_written(&a, &up, &hook.ca_b64)?;
    calls_in_the_tenants_names(&a, hook)?;
    other_tenants_never_reach_it(&a, &b, hook)?;
    certificate_and_failure_policy(&a, hook)?;
    client_config_is_written_whole(&a)?;
    bypass_run(&up)?;
    Ok(())
}

/// The configuration as the tenant wrote it (the port defaulted as the apiserver does); upstream
/// paddock's relay, for this tenant, and paddock's CA.
fn reads_back_as_written(a: &Kubectl, up: &Kubectl, ca_b64: &str) -> Result<()> {
    let got: Value = serde_json::from_str(&a.run(&[
        "get",
        "validatingwebhookconfiguration",
        "hooks",
        "-o",
        "json",
    ])?)?;
    let cc = &got["webhooks"][0]["clientConfig"];
    ensure!(
        *cc == serde_json::json!({"service": {"namespace": "hooks", "name": "hook", "port": 443, "path": "/validate"}, "caBundle": ca_b64}),
        "the tenant's view of its client config: {cc}"
    );
    let upstream: Value = serde_json::from_str(&up.run(&[
        "get",
        "validatingwebhookconfiguration",
        &format!("{A}-hooks"),
        "-o",
        "json",
    ])?)?;
    let ucc = &upstream["webhooks"][0]["clientConfig"];
    let url = ucc["url"].as_str().unwrap_or_default();
    ensure!(
        url.contains(&format!("/tenant-webhook/v1/{A}/hooks/hook/443/ca"))
            && url.ends_with("/validate"),
        "upstream the webhook calls paddock's relay: {ucc}"
    );
    ensure!(
        ucc["caBundle"].as_str() != Some(ca_b64) && ucc.get("service").is_none(),
        "upstream the apiserver trusts paddock's CA, not the tenant's: {ucc}"
    );
    Ok(())
}

/// Reviews in the tenant's names; a denial in the webhook's words; the patch applied.
fn calls_in_the_tenants_names(a: &Kubectl, hook: &Hook) -> Result<()> {
    let before = hook.reviews()?.len();
    a.run(&[
        "-n",
        "app",
        "create",
        "configmap",
        "ok",
        "--from-literal=k=v",
    ])?;
    let seen = a.run(&[
        "-n",
        "app",
        "get",
        "configmap",
        "ok",
        "-o",
        "jsonpath={.metadata.annotations.hook\\.example\\.com/seen}",
    ])?;
    ensure!(
        seen == "app",
        "the mutating webhook's patch landed: {seen:?}"
    );
    let (ok, out) = label_and_create(a, "app", "bad")?;
    ensure!(
        !ok && out.contains(
            "admission webhook \"validate.hook.example.com\" denied the request: denied by hook: app/bad core/ConfigMap as admin"
        ),
        "the validating webhook denies in the tenant's names: ok={ok} {out}"
    );
    let (ok, out) = attempt_stdin(a, &["apply", "-f", "-"], &widget("app", "w1", true))?;
    ensure!(
        !ok && out.contains("denied by hook: app/w1 example.com/Widget as admin"),
        "a custom resource of the tenant's group: ok={ok} {out}"
    );
    let reviews = hook.reviews()?;
    let new = &reviews[before..];
    ensure!(new.len() >= 4, "four calls or more: {}", new.len());
    for r in new {
        let text = r.to_string();
        ensure!(
            !text.contains(A) && !text.contains("paddock:"),
            "a review in upstream names reached the tenant's webhook: {text}"
        );
        ensure!(r["request"]["namespace"] == "app", "namespace: {text}");
    }
    Ok(())
}

/// Tenant B (same namespace names, same group) never reaches A's webhook; the same write in A
/// is refused (the control).
fn other_tenants_never_reach_it(a: &Kubectl, b: &Kubectl, hook: &Hook) -> Result<()> {
    let before = hook.reviews()?.len();
    let (ok, out) = label_and_create(b, "app", "b-bad")?;
    ensure!(ok, "B's ConfigMap is not judged by A's webhook: {out}");
    let (ok, out) = attempt_stdin(b, &["apply", "-f", "-"], &widget("app", "b-w", true))?;
    ensure!(ok, "B's Widget is not judged by A's webhook: {out}");
    let after = hook.reviews()?;
    ensure!(
        after.len() == before,
        "A's webhook got {} reviews of B's writes: {:?}",
        after.len() - before,
        &after[before..]
    );
    let (ok, _) = label_and_create(a, "app", "a-bad")?;
    ensure!(!ok, "the same write in A is refused (the control)");
    Ok(())
}

/// The certificate is checked against the tenant's CA and `<svc>.<ns>.svc`; failurePolicy
/// decides what a failed call means, as in a cluster of one's own.
fn certificate_and_failure_policy(a: &Kubectl, hook: &Hook) -> Result<()> {
    // `other` has the same endpoint, but the certificate does not name other.hooks.svc.
    a.run_stdin(&["apply", "-f", "-"], Some(&service("other")))?;
    for (name, service_name, policy, expect_ok, expect) in [
        ("wrong-name", "other", "Fail", false, "certificate"),
        (
            "missing",
            "missing",
            "Fail",
            false,
            "service \"missing\" not found",
        ),
        ("missing-ignored", "missing", "Ignore", true, ""),
    ] {
        a.run_stdin(
            &["apply", "-f", "-"],
            Some(&extra_configuration(
                name,
                service_name,
                policy,
                &hook.ca_b64,
            )),
        )?;
        let (ok, out) = label_and_create(a, "probe", &format!("p-{name}"))?;
        a.run(&["delete", "validatingwebhookconfiguration", name])?;
        ensure!(
            ok == expect_ok && out.contains(expect),
            "{name} (failurePolicy {policy}): ok={ok} {out}"
        );
    }
    Ok(())
}

/// A patch of the CA alone cannot be carried; the whole config can.
fn client_config_is_written_whole(a: &Kubectl) -> Result<()> {
    let (ok, out) = attempt(
        a,
        &[
            "patch",
            "validatingwebhookconfiguration",
            "hooks",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/webhooks/0/clientConfig/caBundle","value":"Zm9v"}]"#,
        ],
    )?;
    ensure!(
        !ok && out.contains("written whole"),
        "a patch of the caBundle alone: ok={ok} {out}"
    );
    Ok(())
}

/// The tenant's identity straight at the apiserver: no other tenant's relay path, no other URL;
/// its own relay path is allowed (the control).
fn bypass_run(up: &Kubectl) -> Result<()> {
    let relay: Value = serde_json::from_str(&up.run(&[
        "get",
        "validatingwebhookconfiguration",
        &format!("{A}-hooks"),
        "-o",
        "json",
    ])?)?;
    let url = relay["webhooks"][0]["clientConfig"]["url"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let Some(at) = url.find("/tenant-webhook/v1/") else {
        bail!("no relay URL upstream: {url}");
    };
    let base = &url[..at];
    // What paddock asserts for the tenant admin's cluster-scoped writes (the cluster shadow,
    // docs/security.md "Identities").
    let as_a = [
        format!("--as=paddock:cluster:{A}:paddock:{A}:admin"),
        "--as-group=paddock:tenant-cluster-scope-admins".to_owned(),
        format!("--as-group=paddock:tenant:{A}"),
    ];
    for (name, target, allowed) in [
        (
            "own",
            format!("{base}/tenant-webhook/v1/{A}/hooks/hook/443/ca0/validate"),
            true,
        ),
        (
            "other",
            format!("{base}/tenant-webhook/v1/{B}/hooks/hook/443/ca0/validate"),
            false,
        ),
        ("evil", "https://10.96.0.1/validate".to_owned(), false),
    ] {
        let doc = bypass_configuration(&format!("{A}-bypass-{name}"), &target);
        let mut args: Vec<String> = as_a.to_vec();
        args.extend(["create".into(), "-f".into(), "-".into()]);
        let (_, out) = up.run_raw(&args, Some(&doc), &Default::default(), None)?;
        ensure!(
            out.success() == allowed,
            "the tenant's identity creating a webhook to {target} upstream: exit {:?} {}",
            out.code,
            out.stderr
        );
        if allowed {
            up.run(&[
                "delete",
                "validatingwebhookconfiguration",
                &format!("{A}-bypass-{name}"),
            ])?;
        } else {
            ensure!(
                out.stderr.contains("paddock: a tenant webhook"),
                "{}",
                out.stderr
            );
        }
    }
    Ok(())
}

// ---- the tenant's webhook: a Python HTTPS server on the host ----------------------------------

struct Hook {
    port: u16,
    log: std::path::PathBuf,
    ca_b64: String,
}

impl Hook {
    fn start(cp: &ControlPlane) -> Result<Hook> {
        let dir = cp.dir().join("tenant-hook");
        std::fs::create_dir_all(&dir)?;
        let (ca_pem, cert, key) = tenant_pki()?;
        std::fs::write(dir.join("tls.crt"), cert)?;
        std::fs::write(dir.join("tls.key"), key)?;
        std::fs::write(dir.join("hook.py"), HOOK_PY)?;
        let log = dir.join("reviews.jsonl");
        std::fs::write(&log, "")?;
        let port = free_port()?;
        let child = Command::new("python3")
            .arg(dir.join("hook.py"))
            .arg(port.to_string())
            .arg(dir.join("tls.crt"))
            .arg(dir.join("tls.key"))
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("hook.log"))?)
            .spawn()
            .context("starting the tenant's webhook")?;
        cp.record_pid("tenant-hook", child.id())?;
        poll_within(
            Duration::from_secs(20),
            Duration::from_millis(100),
            "the tenant's webhook",
            || Ok(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()),
        )?;
        Ok(Hook {
            port,
            log,
            ca_b64: B64.encode(ca_pem),
        })
    }

    /// Every review the webhook got, in order.
    fn reviews(&self) -> Result<Vec<Value>> {
        std::fs::read_to_string(&self.log)?
            .lines()
            .map(|l| Ok(serde_json::from_str::<Value>(l)?["review"].clone()))
            .collect()
    }
}

/// The tenant's CA and a serving certificate for its names only.
fn tenant_pki() -> Result<(String, String, String)> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name
        .push(DnType::CommonName, "tenant hook CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_pem = ca.self_signed(&ca_key)?.pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(Vec::<String>::new())?;
    leaf.distinguished_name
        .push(DnType::CommonName, "hook.hooks.svc");
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.subject_alt_names = ["hook", "hook.hooks", "hook.hooks.svc"]
        .into_iter()
        .map(|n| Ok(SanType::DnsName(n.try_into()?)))
        .collect::<Result<_>>()?;
    let cert = leaf.signed_by(&key, &issuer)?;
    Ok((ca_pem, cert.pem(), key.serialize_pem()))
}

const HOOK_PY: &str = r#"
import base64, http.server, json, ssl, sys
PORT, CERT, KEY, LOG = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "review": review}) + "\n")
        req = review["request"]
        meta = (req.get("object") or {}).get("metadata") or {}
        resp = {"uid": req["uid"], "allowed": True}
        if self.path.startswith("/validate") and (meta.get("labels") or {}).get("deny") == "yes":
            resp = {"uid": req["uid"], "allowed": False, "status": {"code": 403, "message":
                "denied by hook: %s/%s %s/%s as %s" % (req.get("namespace"), meta.get("name"),
                req["kind"]["group"] or "core", req["kind"]["kind"], req["userInfo"]["username"])}}
        if self.path.startswith("/mutate"):
            ops = [] if "annotations" in meta else [{"op": "add", "path": "/metadata/annotations", "value": {}}]
            ops.append({"op": "add", "path": "/metadata/annotations/hook.example.com~1seen", "value": req.get("namespace", "")})
            resp.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps(ops).encode()).decode())
        body = json.dumps({"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Hook)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(CERT, KEY)
server.socket = tls.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"#;

// ---- objects ----------------------------------------------------------------------------------

const NAMESPACES_AND_CRD: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: hooks}
---
apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: Namespace
metadata: {name: probe}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

fn service(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: hooks}}\nspec:\n  ports: [{{port: 443, targetPort: {HOOK_NODE_PORT}, protocol: TCP}}]\n"
    )
}

/// The tenant's Service `hook` and, written by the platform upstream, the EndpointSlices of
/// `hook` and `other` naming the node's bridge to the webhook.
fn endpoint_slice(t: &str, node_ip: &str) -> String {
    ["hook", "other"]
        .iter()
        .map(|svc| {
            format!(
                "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {svc}-bridge\n  namespace: {t}-hooks\n  labels: {{kubernetes.io/service-name: {svc}}}\naddressType: IPv4\nendpoints: [{{addresses: [\"{node_ip}\"], conditions: {{ready: true}}}}]\nports: [{{port: {HOOK_NODE_PORT}, protocol: TCP}}]\n---\n"
            )
        })
        .collect()
}

fn configurations(ca_b64: &str, svc: &str) -> String {
    let cc = |path: &str| {
        format!("{{service: {{namespace: hooks, name: {svc}, path: {path}}}, caBundle: {ca_b64}}}")
    };
    format!(
        "{}---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: hooks}}
webhooks:
- name: validate.hook.example.com
  clientConfig: {}
  rules:
  - {{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}}
  - {{apiGroups: [example.com], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [widgets]}}
  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: app}}}}
  sideEffects: None
  failurePolicy: Fail
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: hooks}}
webhooks:
- name: mutate.hook.example.com
  clientConfig: {}
  rules:
  - {{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}}
  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: app}}}}
  sideEffects: None
  failurePolicy: Fail
  admissionReviewVersions: [v1]
",
        service(svc),
        cc("/validate"),
        cc("/mutate")
    )
}

/// One more validating webhook on namespace `probe`, calling `svc`.
fn extra_configuration(name: &str, svc: &str, policy: &str, ca_b64: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: {name}}}
webhooks:
- name: {name}.hook.example.com
  clientConfig: {{service: {{namespace: hooks, name: {svc}, path: /validate}}, caBundle: {ca_b64}}}
  rules: [{{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}}]
  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: probe}}}}
  sideEffects: None
  failurePolicy: {policy}
  timeoutSeconds: 5
  admissionReviewVersions: [v1]
"
    )
}

/// A configuration as the tenant's identity would write it straight upstream: confined as the
/// guard demands, calling `url`.
fn bypass_configuration(name: &str, url: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: {name}, labels: {{paddock.io/tenant: {A}}}}}
webhooks:
- name: x.hook.example.com
  clientConfig: {{url: \"{url}\"}}
  rules: [{{apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [configmaps], scope: Namespaced}}]
  namespaceSelector: {{matchExpressions: [{{key: paddock.io/tenant, operator: In, values: [{A}]}}, {{key: kubernetes.io/metadata.name, operator: In, values: [{A}-nowhere]}}]}}
  sideEffects: None
  failurePolicy: Ignore
  admissionReviewVersions: [v1]
"
    )
}

fn widget(ns: &str, name: &str, deny: bool) -> String {
    let label = if deny { "deny: \"yes\"" } else { "x: y" };
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: {ns}, labels: {{{label}}}}}\n"
    )
}

fn label_and_create(k: &Kubectl, ns: &str, name: &str) -> Result<(bool, String)> {
    let cm = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}, labels: {{deny: \"yes\"}}}}\ndata: {{k: v}}\n"
    );
    attempt_stdin(k, &["create", "-f", "-"], &cm)
}

fn attempt(k: &Kubectl, args: &[&str]) -> Result<(bool, String)> {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let (_, out) = k.run_raw(&args, None, &Default::default(), None)?;
    Ok((out.success(), format!("{}{}", out.stdout, out.stderr)))
}

fn attempt_stdin(k: &Kubectl, args: &[&str], stdin: &str) -> Result<(bool, String)> {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let (_, out) = k.run_raw(&args, Some(stdin), &Default::default(), None)?;
    Ok((out.success(), format!("{}{}", out.stdout, out.stderr)))
}
