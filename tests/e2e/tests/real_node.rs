//! A tenant's containers really run (issue 35): the test bed's real node (tests/testbed/node.sh,
//! a kubelet and containerd in a network namespace of their own) is tenant `realaa`'s node pool;
//! its busybox Deployment becomes Ready there, and exec (with and without stdin), logs, cp both
//! ways, port-forward, pods/proxy and services/proxy through paddock return what the container
//! holds; `logs -f` and `attach` follow a container's output, `logs --previous` shows a failed
//! run, `kubectl debug` adds an ephemeral container, `kubectl top` shows the tenant's pod. Each
//! step also runs as the cluster admin straight at the apiserver, and the answers are compared.
//! A second tenant, `otherb`, cannot reach realaa's pod by any of its own names (positive
//! control: its own pod on the kwok nodes answers it).
//!
//! The kubelet is reached only through the egress guards: the apiserver's guard hands CONNECTs
//! for the node's address to the guard inside the node's namespace, whose log must show them.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::process::{indent, tail_file};
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

const TENANT: &str = "realaa";
const OTHER: &str = "otherb";
const NS: &str = "app";
const IMAGE: &str = "paddock.test/busybox:1.35";
/// What the container serves and logs; written by the container itself at start.
const PAGE: &str = "served-by-a-real-container";
const GREETING: &str = "hello-from-busybox";
const CRASHER: &str = "apiVersion: v1
kind: Pod
metadata: {name: crasher}
spec:
  volumes: [{name: state, emptyDir: {}}]
  containers:
  - name: crasher
    image: paddock.test/busybox:1.35
    imagePullPolicy: Never
    volumeMounts: [{name: state, mountPath: /state}]
    command: [sh, -c, 'if [ -f /state/ran ]; then echo second-run; exec sleep 3600; fi; touch /state/ran; echo run-of-crasher; exit 1']
";
const SCRIPT: &str = "echo hello-from-busybox; echo to-stderr >&2; mkdir -p /www; \
    echo served-by-a-real-container > /www/index.html; exec httpd -f -p 8080 -h /www";

#[test]
fn tenant_containers_run_on_the_real_node() -> Result<()> {
    let cp =
        ControlPlane::start_real_node().context("starting the control plane with its real node")?;
    let p = Paddock::start_with_args(&cp, StoreKind::Etcd, "paddock", &cp.admission_args()?)
        .context("starting paddock with its admission webhook")?;
    let r = run(&cp, &p);
    if r.is_err() {
        for log in ["kubelet", "containerd", "egress-proxy", "node-egress"] {
            eprintln!(
                "tail of {log}'s log:\n{}",
                indent(
                    &tail_file(&cp.dir().join("logs").join(format!("{log}.log")), 25),
                    "  | "
                )
            );
        }
        eprintln!("paddock log: {}", p.log_path().display());
    }
    r
}

fn run(cp: &ControlPlane, p: &Paddock) -> Result<()> {
    let up = cp.kubectl_admin()?;
    let node = cp.var("REAL_NODE_NAME")?.to_owned();
    wait_until(
        "paddock's mutating webhook upstream",
        Duration::from_secs(60),
        || {
            Ok(up
                .run(&[
                    "get",
                    "mutatingwebhookconfiguration",
                    "paddock-tenant-policy",
                    "-o",
                    "name",
                ])
                .is_ok())
        },
    )?;
    let k = p.kubectl_tenant(TENANT)?;
    let other = p.kubectl_tenant(OTHER)?;
    // The real node is realaa's pool: paddock's webhook adds the selector and toleration.
    p.cli(&[
        "tenant", "policy", TENANT, "--patch",
        r#"{"scheduling":{"nodeSelector":{"paddock.test/pool":"real"},"tolerations":[{"key":"paddock.test/real-node","operator":"Exists","effect":"NoSchedule"}]}}"#,
    ])?;
    let up_ns = format!("{TENANT}-{NS}");

    k.run(&["create", "namespace", NS])?;
    let t0 = Instant::now();
    k.run(&[
        "-n",
        NS,
        "create",
        "deployment",
        "bb",
        &format!("--image={IMAGE}"),
        "--port=8080",
        "--",
        "sh",
        "-c",
        SCRIPT,
    ])?;
    k.run(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deployment/bb",
        "--timeout=120s",
    ])?;
    let pod = k.run(&[
        "-n",
        NS,
        "get",
        "pods",
        "-l",
        "app=bb",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ])?;
    let where_up = up.run(&["-n", &up_ns, "get", "pod", &pod, "-o", "jsonpath={.spec.nodeName} {.status.podIP} {.status.containerStatuses[0].state.running.startedAt}"])?;
    ensure!(
        where_up.starts_with(&format!("{node} 10.244."))
            && where_up.split(' ').nth(2).is_some_and(|s| !s.is_empty()),
        "realaa's pod is not running on the real node with a pod-network address: {where_up:?}"
    );
    eprintln!(
        "Deployment Ready on {node} in {:.1}s (pod {pod}: {where_up})",
        t0.elapsed().as_secs_f64()
    );

    // Each step: through paddock as the tenant, then straight at the apiserver as the admin.
    let both = |what: &str, args: &[&str], stdin: Option<&str>| -> Result<String> {
        let via = k
            .run_stdin(&with_ns(NS, args), stdin)
            .with_context(|| format!("{what} through paddock"))?;
        let direct = up
            .run_stdin(&with_ns(&up_ns, args), stdin)
            .with_context(|| format!("{what} at the apiserver"))?;
        ensure!(
            via == direct,
            "{what}: paddock answered {via:?}, the apiserver {direct:?}"
        );
        Ok(via)
    };
    let pod_ref = format!("pod/{pod}");
    let logs = both("logs", &["logs", &pod_ref], None)?;
    ensure!(
        logs.contains(GREETING) && logs.contains("to-stderr"),
        "logs: {logs:?}"
    );
    let page = both(
        "exec",
        &["exec", &pod_ref, "--", "cat", "/www/index.html"],
        None,
    )?;
    ensure!(page.trim() == PAGE, "exec cat: {page:?}");
    let hostname = both("exec hostname", &["exec", &pod_ref, "--", "hostname"], None)?;
    ensure!(
        hostname.trim() == pod,
        "exec hostname: {hostname:?}, pod {pod}"
    );
    let piped = both(
        "exec -i",
        &["exec", "-i", &pod_ref, "--", "sh", "-c", "tr a-z A-Z"],
        Some("through stdin\n"),
    )?;
    ensure!(piped == "THROUGH STDIN\n", "exec -i: {piped:?}");
    exit_code_passes(&k, &pod_ref)?;

    // cp both ways (kubectl cp runs tar in the container)
    let dir = p.dir().join("real-node");
    std::fs::create_dir_all(&dir)?;
    let local_in = dir.join("to-pod.txt");
    std::fs::write(&local_in, "copied into a real container\n")?;
    k.run(&[
        "-n",
        NS,
        "cp",
        &local_in.display().to_string(),
        &format!("{pod}:/tmp/to-pod.txt"),
    ])?;
    let copied = both(
        "exec cat after cp",
        &["exec", &pod_ref, "--", "cat", "/tmp/to-pod.txt"],
        None,
    )?;
    ensure!(
        copied == "copied into a real container\n",
        "cp to the pod: {copied:?}"
    );
    let local_out = dir.join("from-pod.html");
    k.run(&[
        "-n",
        NS,
        "cp",
        &format!("{pod}:/www/index.html"),
        &local_out.display().to_string(),
    ])?;
    let back = std::fs::read_to_string(&local_out)?;
    ensure!(back.trim() == PAGE, "cp from the pod: {back:?}");
    eprintln!(
        "logs, exec (4 forms), cp both ways: same answers through paddock and at the apiserver"
    );

    // port-forward to the container's httpd, through paddock
    port_forward(&k, &dir, &pod_ref)?;
    // pods/proxy to the same server (`get --raw` takes the path as is: each side names its own
    // namespace)
    let via = k.run(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{NS}/pods/{pod}:8080/proxy/index.html"),
    ])?;
    let direct = up.run(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{up_ns}/pods/{pod}:8080/proxy/index.html"),
    ])?;
    ensure!(
        via.trim() == PAGE && via == direct,
        "pods/proxy: paddock {via:?}, apiserver {direct:?}"
    );
    eprintln!("port-forward and pods/proxy reach the container's server");

    top(&k, &other, &up, &pod, &node)?;
    following_streams(&k, &up, &dir)?;
    services_proxy(&k, &up)?;

    // Isolation: otherb names realaa's pod in its own namespace of the same name: not found.
    other.run(&["create", "namespace", NS])?;
    for args in [
        vec!["logs", pod_ref.as_str()],
        vec!["exec", pod_ref.as_str(), "--", "cat", "/www/index.html"],
    ] {
        let (line, out) = other.run_raw(
            &to_strings(&with_ns(NS, &args)),
            None,
            &BTreeMap::new(),
            None,
        )?;
        ensure!(
            !out.success() && (out.stderr.contains("NotFound") || out.stderr.contains("not found")),
            "{line}: otherb reached realaa's pod:\n{}\n{}",
            out.stdout,
            out.stderr
        );
        ensure!(
            !out.stdout.contains(PAGE),
            "{line}: otherb read realaa's page"
        );
    }
    // positive control: otherb's own pod (on the kwok nodes: not its pool) answers logs
    other.run(&["-n", NS, "run", "own", "--image=registry.k8s.io/pause:3.10"])?;
    wait_until("otherb's pod Running", Duration::from_secs(60), || {
        Ok(other.run(&[
            "-n",
            NS,
            "get",
            "pod",
            "own",
            "-o",
            "jsonpath={.status.phase}",
        ])? == "Running")
    })?;
    let own_node = up.run(&[
        "-n",
        &format!("{OTHER}-{NS}"),
        "get",
        "pod",
        "own",
        "-o",
        "jsonpath={.spec.nodeName}",
    ])?;
    ensure!(
        own_node != node,
        "otherb's pod landed on the real node, which is realaa's pool"
    );
    other.run(&["-n", NS, "logs", "own"])?;

    // The kubelet was reached only through the two egress guards.
    let outer = std::fs::read_to_string(cp.dir().join("logs").join("egress-proxy.log"))?;
    let inner = std::fs::read_to_string(cp.dir().join("logs").join("node-egress.log"))?;
    let node_ip = cp.var("REAL_NODE_IP")?;
    ensure!(
        outer
            .matches(&format!("CONNECT {node_ip}:10250 handed to"))
            .count()
            >= 8
            && inner
                .matches(&format!("CONNECT {node_ip}:10250 ok"))
                .count()
                >= 8,
        "the kubelet tunnels are missing from the egress guards' logs:\n{}\n{}",
        indent(&outer, "  outer | "),
        indent(&inner, "  inner | ")
    );
    confined(cp, &up)?;
    k.run(&["delete", "namespace", NS, "--wait=false"])?;
    Ok(())
}

/// Nothing on the node can reach beyond it: the node's network namespace routes only its pod
/// bridge (asked of the kernel with `ip route get`, which sends nothing), and an image from any
/// registry is pulled from 127.0.0.1:9, where nothing listens (positive control: the local
/// busybox image ran above).
fn confined(cp: &ControlPlane, up: &Kubectl) -> Result<()> {
    let ns = cp.var("REAL_NODE_NETNS")?;
    let routes = output(Command::new("ip").args(["-n", ns, "route", "show", "table", "all"]))?;
    ensure!(
        routes.lines().all(|l| !l.starts_with("default")),
        "the node's namespace has a default route:\n{routes}"
    );
    let out = Command::new("ip")
        .args(["-n", ns, "route", "get", "192.0.2.1"])
        .output()?;
    ensure!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("unreachable"),
        "a route out of the node's namespace exists: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: remote-image, namespace: default}\nspec:\n  nodeSelector: {paddock.test/pool: real}\n  tolerations: [{key: paddock.test/real-node, operator: Exists}]\n  containers: [{name: c, image: registry.example/nothing/here:1}]\n";
    up.run_stdin(&["create", "-f", "-"], Some(pod))?;
    let mut why = String::new();
    wait_until(
        "the remote image's pull to fail",
        Duration::from_secs(60),
        || {
            why = up.run(&[
                "-n",
                "default",
                "get",
                "pod",
                "remote-image",
                "-o",
                "jsonpath={.status.containerStatuses[0].state.waiting.message}",
            ])?;
            Ok(why.contains("127.0.0.1:9"))
        },
    )
    .with_context(|| format!("last message: {why:?}"))?;
    eprintln!(
        "no route out of the node's namespace; a remote image is asked of 127.0.0.1:9: {why}"
    );
    up.run(&[
        "-n",
        "default",
        "delete",
        "pod",
        "remote-image",
        "--wait=false",
    ])?;
    Ok(())
}

fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd.output()?;
    ensure!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `kubectl top` for tenants: metrics.k8s.io through paddock (metrics-server scraping the real
/// kubelet). realaa sees its pod under its own namespace; otherb sees no pod of realaa's, by any
/// name; both see the real node's metrics, as they see the node.
fn top(k: &Kubectl, other: &Kubectl, up: &Kubectl, pod: &str, node: &str) -> Result<()> {
    let t0 = Instant::now();
    let mut seen = String::new();
    // metrics-server scrapes every 10 s; a new pod has metrics after one or two scrapes
    wait_until(
        "realaa's pod in `kubectl top pod`",
        Duration::from_secs(90),
        || {
            let (_, out) = k.run_raw(
                &to_strings(&["-n", NS, "top", "pod", "--no-headers"]),
                None,
                &BTreeMap::new(),
                None,
            )?;
            seen = format!("{}{}", out.stdout, out.stderr);
            Ok(out.success() && out.stdout.contains(pod))
        },
    )
    .with_context(|| format!("last answer: {seen:?}"))?;
    let all = k.run(&["top", "pod", "-A", "--no-headers"])?;
    ensure!(
        all.lines()
            .any(|l| l.split_whitespace().take(2).eq([NS, pod]))
            && !all.contains(TENANT),
        "top pod -A as realaa: {all:?}"
    );
    let up_ns = format!("{TENANT}-{NS}");
    let via = k.run(&[
        "get",
        "--raw",
        &format!("/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods/{pod}"),
    ])?;
    let direct = up.run(&[
        "get",
        "--raw",
        &format!("/apis/metrics.k8s.io/v1beta1/namespaces/{up_ns}/pods/{pod}"),
    ])?;
    let (via, direct): (serde_json::Value, serde_json::Value) =
        (serde_json::from_str(&via)?, serde_json::from_str(&direct)?);
    ensure!(
        via["metadata"]["namespace"] == NS
            && via["metadata"]["name"] == pod
            && via["containers"][0]["name"] == direct["containers"][0]["name"]
            && direct["metadata"]["namespace"] == up_ns.as_str(),
        "PodMetrics through paddock {via} vs directly {direct}"
    );
    let nodes = k.run(&["top", "node", "--no-headers"])?;
    ensure!(nodes.contains(node), "top node as realaa: {nodes:?}");
    // otherb: no pod of realaa's anywhere, by its own namespace or realaa's upstream one
    let (_, out) = other.run_raw(
        &to_strings(&["top", "pod", "-A", "--no-headers"]),
        None,
        &BTreeMap::new(),
        None,
    )?;
    ensure!(
        !out.stdout.contains(pod) && !out.stderr.contains(pod),
        "otherb's top pod -A shows realaa's pod: {} {}",
        out.stdout,
        out.stderr
    );
    for path in [
        format!("/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods/{pod}"),
        format!("/apis/metrics.k8s.io/v1beta1/namespaces/{up_ns}/pods/{pod}"),
        "/apis/metrics.k8s.io/v1beta1/pods".to_owned(),
    ] {
        let (line, out) = other.run_raw(
            &to_strings(&["get", "--raw", &path]),
            None,
            &BTreeMap::new(),
            None,
        )?;
        ensure!(
            !out.stdout.contains(pod),
            "{line}: otherb reads realaa's pod metrics: {}",
            out.stdout
        );
    }
    // positive control for otherb: the shared node's metrics
    let nodes = other.run(&["top", "node", "--no-headers"])?;
    ensure!(nodes.contains(node), "top node as otherb: {nodes:?}");
    eprintln!(
        "kubectl top: realaa's pod after {:.1}s; otherb sees none of it, both see {node}",
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The streams that follow a running container: `logs -f` and `attach` see lines the container
/// writes after they started; `logs --previous` shows a restarted container's last run; `kubectl
/// debug` adds an ephemeral container whose output `logs -c` returns, through paddock as directly.
fn following_streams(k: &Kubectl, up: &Kubectl, dir: &std::path::Path) -> Result<()> {
    let up_ns = format!("{TENANT}-{NS}");
    k.run(&[
        "-n",
        NS,
        "run",
        "ticker",
        &format!("--image={IMAGE}"),
        "--image-pull-policy=Never",
        "--",
        "sh",
        "-c",
        "i=0; while true; do echo tick-$i; i=$((i+1)); sleep 1; done",
    ])?;
    // fails once, then stays up (an emptyDir outlives the container): the kubelet keeps the
    // failed run for `logs --previous`
    k.run_stdin(&["-n", NS, "apply", "-f", "-"], Some(CRASHER))?;
    k.run(&[
        "-n",
        NS,
        "wait",
        "--for=condition=Ready",
        "pod/ticker",
        "--timeout=60s",
    ])?;
    // a line the container writes after the stream began: the newest line when it started
    // (`--tail=1`; attach shows only new output), then the one two seconds later
    for args in [
        vec!["logs", "-f", "--tail=1", "ticker"],
        vec!["attach", "ticker"],
    ] {
        let mut run = Follow::spawn(k, dir, &with_ns(NS, &args))?;
        let first = run.wait_for(
            |out| {
                out.lines()
                    .find(|l| l.starts_with("tick-"))
                    .map(str::to_owned)
            },
            Duration::from_secs(30),
        )?;
        let n: u32 = first
            .trim_start_matches("tick-")
            .trim()
            .parse()
            .context("tick number")?;
        let later = format!("tick-{}", n + 2);
        run.wait_for(
            |out| out.lines().any(|l| l.trim() == later).then_some(()),
            Duration::from_secs(30),
        )?;
        eprintln!(
            "{}: {first} then {later} arrived while it ran",
            args.join(" ")
        );
    }
    wait_until("the crasher's restart", Duration::from_secs(90), || {
        Ok(k.run(&[
            "-n",
            NS,
            "get",
            "pod",
            "crasher",
            "-o",
            "jsonpath={.status.containerStatuses[0].restartCount}",
        ])?
        .parse::<u32>()
        .is_ok_and(|n| n >= 1))
    })?;
    let previous = k.run(&["-n", NS, "logs", "--previous", "crasher"])?;
    let direct = up.run(&["-n", &up_ns, "logs", "--previous", "crasher"])?;
    ensure!(
        previous == "run-of-crasher\n" && previous == direct,
        "logs --previous: {previous:?}, directly {direct:?}"
    );
    k.run(&[
        "-n",
        NS,
        "debug",
        "pod/ticker",
        &format!("--image={IMAGE}"),
        "--image-pull-policy=Never",
        "--container=dbg",
        "--",
        "sh",
        "-c",
        "echo from-an-ephemeral-container; sleep 60",
    ])?;
    let mut seen = String::new();
    wait_until(
        "the ephemeral container's output",
        Duration::from_secs(60),
        || {
            seen = k
                .run(&["-n", NS, "logs", "ticker", "-c", "dbg"])
                .unwrap_or_default();
            Ok(seen.contains("from-an-ephemeral-container"))
        },
    )
    .with_context(|| format!("last: {seen:?}"))?;
    let direct = up.run(&["-n", &up_ns, "logs", "ticker", "-c", "dbg"])?;
    ensure!(
        direct == seen,
        "logs -c dbg: paddock {seen:?}, directly {direct:?}"
    );
    eprintln!(
        "logs --previous and kubectl debug (ephemeral container): same answers through paddock and directly"
    );
    Ok(())
}

/// services/proxy to the container's server, through paddock and directly.
fn services_proxy(k: &Kubectl, up: &Kubectl) -> Result<()> {
    k.run(&["-n", NS, "expose", "deployment", "bb", "--port=8080"])?;
    let up_ns = format!("{TENANT}-{NS}");
    let mut via = String::new();
    wait_until(
        "services/proxy through paddock",
        Duration::from_secs(30),
        || {
            via = k
                .run(&[
                    "get",
                    "--raw",
                    &format!("/api/v1/namespaces/{NS}/services/bb:8080/proxy/index.html"),
                ])
                .unwrap_or_default();
            Ok(via.trim() == PAGE)
        },
    )
    .with_context(|| format!("last: {via:?}"))?;
    let direct = up.run(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{up_ns}/services/bb:8080/proxy/index.html"),
    ])?;
    ensure!(
        via == direct,
        "services/proxy: paddock {via:?}, directly {direct:?}"
    );
    eprintln!("services/proxy reaches the container's server");
    Ok(())
}

/// A kubectl that keeps running (`logs -f`, `attach`); its stdout collected as it comes.
struct Follow {
    child: std::process::Child,
    out: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Follow {
    fn spawn(k: &Kubectl, dir: &std::path::Path, args: &[&str]) -> Result<Self> {
        let mut child = Command::new(k.bin())
            .arg(format!("--kubeconfig={}", k.kubeconfig().display()))
            .arg(format!("--cache-dir={}", dir.join("cache").display()))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting kubectl {}", args.join(" ")))?;
        let out = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (pipe, sink) = (child.stdout.take(), out.clone());
        std::thread::spawn(move || {
            let Some(pipe) = pipe else { return };
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        });
        Ok(Self { child, out })
    }

    fn wait_for<T>(
        &mut self,
        mut found: impl FnMut(&str) -> Option<T>,
        timeout: Duration,
    ) -> Result<T> {
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.out.lock().map(|s| s.clone()).unwrap_or_default();
            if let Some(t) = found(&out) {
                return Ok(t);
            }
            if Instant::now() >= deadline {
                bail!("not seen within {timeout:?}; output so far: {out:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `exec` passes the container command's exit code on (through paddock as directly).
fn exit_code_passes(k: &Kubectl, pod_ref: &str) -> Result<()> {
    let args = to_strings(&with_ns(NS, &["exec", pod_ref, "--", "sh", "-c", "exit 3"]));
    let (line, out) = k.run_raw(&args, None, &BTreeMap::new(), None)?;
    ensure!(
        out.code == Some(3),
        "{line}: exit {:?}, want 3; stderr {:?}",
        out.code,
        out.stderr
    );
    Ok(())
}

fn port_forward(k: &Kubectl, dir: &std::path::Path, pod_ref: &str) -> Result<()> {
    let mut child = Command::new(k.bin())
        .arg(format!("--kubeconfig={}", k.kubeconfig().display()))
        .arg(format!("--cache-dir={}", dir.join("cache").display()))
        .args([
            "-n",
            NS,
            "port-forward",
            pod_ref,
            ":8080",
            "--address=127.0.0.1",
        ])
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting kubectl port-forward")?;
    let result = (|| -> Result<()> {
        let mut lines = BufReader::new(child.stdout.take().context("no stdout")?).lines();
        let first = lines.next().context("port-forward printed nothing")??;
        let port: u16 = first
            .strip_prefix("Forwarding from 127.0.0.1:")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .with_context(|| format!("no local port in {first:?}"))?;
        for i in 0..3 {
            let resp = http_get(port).with_context(|| format!("GET #{i} through port-forward"))?;
            ensure!(
                resp.starts_with("HTTP/1.") && resp.contains(PAGE),
                "GET #{i}: {resp:?}"
            );
        }
        Ok(())
    })();
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// One HTTP/1.0 GET on 127.0.0.1:`port`, read to the end (busybox httpd closes).
fn http_get(port: u16) -> Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(b"GET /index.html HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) if String::from_utf8_lossy(&buf).contains(PAGE) => break,
            Err(e) => return Err(e).context("reading the response"),
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn with_ns<'a>(ns: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["-n", ns];
    v.extend_from_slice(args);
    v
}

fn to_strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        match ok() {
            Ok(true) => return Ok(()),
            Ok(false) | Err(_) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(500))
            }
            Ok(false) => bail!("timed out after {timeout:?} waiting for {what}"),
            Err(e) => return Err(e).with_context(|| format!("waiting for {what}")),
        }
    }
}
