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
