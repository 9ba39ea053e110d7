//! The test bed on its own, no paddock: the control plane comes up, a Deployment gets Running
//! pods on the two kwok nodes, and tear-down leaves no process and no directory behind.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::ControlPlane;

const VAP: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: smoke-deny}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - {expression: "object.metadata.name != 'forbidden'", message: "smoke: forbidden name"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: smoke-deny}
spec: {policyName: smoke-deny, validationActions: [Deny]}
"#;

const WEBHOOKS: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: egress-guard}
webhooks:
- name: service.egress-guard.test
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: guarded}}
  clientConfig: {service: {name: nothing, namespace: guarded, port: 443}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
- name: url.egress-guard.test
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: guarded}}
  clientConfig: {url: "https://10.1.2.3/validate"}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [secrets]}]
"#;

#[test]
fn testbed_runs_pods_and_tears_down() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    eprintln!(
        "control plane up in {:.1}s at {}",
        cp.startup.as_secs_f64(),
        cp.dir().display()
    );
    let k = cp.kubectl_admin()?;

    let nodes = k.run(&["get", "nodes", "-o", "name"])?;
    ensure!(
        nodes.contains("node/kwok-node-0") && nodes.contains("node/kwok-node-1"),
        "expected two kwok nodes, got {nodes}"
    );
    let ready = k.run(&[
        "get",
        "nodes",
        "-o",
        r#"jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {end}"#,
    ])?;
    ensure!(ready.trim() == "True True", "nodes not Ready: {ready}");

    k.run(&["create", "namespace", "smoke"])?;
    k.run(&[
        "-n",
        "smoke",
        "create",
        "deployment",
        "web",
        "--image=registry.k8s.io/pause:3.10",
        "--replicas=2",
    ])?;
    k.run(&[
        "-n",
        "smoke",
        "rollout",
        "status",
        "deployment/web",
        "--timeout=90s",
    ])?;
    let t0 = Instant::now();
    loop {
        let phases = k.run(&[
            "-n",
            "smoke",
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={range .items[*]}{.status.phase}/{.spec.nodeName} {end}",
        ])?;
        let running: Vec<&str> = phases
            .split_whitespace()
            .filter(|p| p.starts_with("Running/kwok-node-"))
            .collect();
        if running.len() == 2 {
            eprintln!("pods running: {phases}");
            break;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            bail!("pods not Running on kwok nodes after 60 s: {phases}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    // ValidatingAdmissionPolicy is served (GA, on by default in 1.33).
    let vap = k.run(&[
        "api-resources",
        "--api-group=admissionregistration.k8s.io",
        "-o",
        "name",
    ])?;
    ensure!(
        vap.contains("validatingadmissionpolicies"),
        "no ValidatingAdmissionPolicy API: {vap}"
    );

    // ...and enforced: a policy refusing ConfigMaps named "forbidden".
    k.run_stdin(&["apply", "-f", "-"], Some(VAP))?;
    let t0 = Instant::now();
    loop {
        let args: Vec<String> = ["-n", "smoke", "create", "configmap", "forbidden"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let (_, out) = k.run_raw(&args, None, &Default::default(), None)?;
        if !out.success() && out.stderr.contains("smoke: forbidden name") {
            break;
        }
        if out.success() {
            k.run(&["-n", "smoke", "delete", "configmap", "forbidden"])?;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            bail!(
                "the ValidatingAdmissionPolicy was not enforced within 30 s: {}",
                out.stderr
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    // The egress guard: webhooks by Service (a ClusterIP) or by URL (10.1.2.3) are refused at
    // once by the loopback-only CONNECT proxy instead of leaving loopback; kubelet calls (logs)
    // to kwok on 127.0.0.1 go through it.
    k.run(&["create", "namespace", "guarded"])?;
    k.run(&[
        "-n",
        "guarded",
        "create",
        "service",
        "clusterip",
        "nothing",
        "--tcp=443:443",
    ])?;
    k.run_stdin(&["apply", "-f", "-"], Some(WEBHOOKS))?;
    for what in [
        &["configmap", "via-service"][..],
        &["secret", "generic", "via-url"][..],
    ] {
        let mut args: Vec<String> = vec!["-n".into(), "guarded".into(), "create".into()];
        args.extend(what.iter().map(|s| (*s).to_owned()));
        let (line, out) = k.run_raw(&args, None, &Default::default(), None)?;
        ensure!(
            !out.success()
                && out.stderr.contains("egress-proxy.sock")
                && out.stderr.contains("code 403"),
            "{line}: expected a refusal by the egress guard, got exit {:?}: {}{}",
            out.code,
            out.stdout,
            out.stderr
        );
    }
    let pod = k.run(&["-n", "smoke", "get", "pods", "-o", "name"])?;
    let pod = pod.lines().next().context("no pod")?.to_owned();
    let args: Vec<String> = ["-n", "smoke", "logs", pod.as_str()]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let (_, out) = k.run_raw(&args, None, &Default::default(), None)?;
    ensure!(
        out.success() && out.stdout.contains("kwok log line 1"),
        "kubectl logs against a kwok pod: expected the test bed's log file, got {:?}: {}{}",
        out.code,
        out.stdout,
        out.stderr
    );
    let proxy_log = std::fs::read_to_string(cp.dir().join("logs").join("egress-proxy.log"))?;
    ensure!(
        proxy_log.contains("REFUSED CONNECT 10.1.2.3:443")
            && proxy_log.contains("CONNECT 127.0.0.1:"),
        "the egress proxy's log lacks the refusal or the kubelet tunnel:\n{proxy_log}"
    );

    let dir = cp.dir().to_path_buf();
    let recorded = cp.live_pids();
    ensure!(
        recorded.len() >= 6,
        "expected >= 6 live processes, got {recorded:?}"
    );
    let left = cp.stop()?;
    ensure!(left.is_empty(), "processes left after down.sh: {left:?}");
    ensure!(
        !dir.exists(),
        "{} still exists after down.sh",
        dir.display()
    );
    Ok(())
}
