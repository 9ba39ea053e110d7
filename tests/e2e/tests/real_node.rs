//! A tenant's containers really run: the test bed's real node (tests/testbed/node.sh,
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
//! A Service's cluster IP is reached the same way (the tenant-webhook relay's way to a webhook).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::process::{indent, poll_within, tail_file};
use paddock_e2e::real_node::{POOL_SCHEDULING, egress_connect, wait_for_webhook};
use paddock_e2e::running::Running;
use paddock_e2e::{ControlPlane, Kubectl, Paddock, StoreKind};

const TENANT: &str = "realaa";
/// How often a wait asks again.
const EVERY: Duration = Duration::from_millis(500);
const WAIT_30S: Duration = Duration::from_secs(30);
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
    wait_for_webhook(cp)?;
    let k = p.kubectl_tenant(TENANT)?;
    let other = p.kubectl_tenant(OTHER)?;
    // The real node is realaa's pool: paddock's webhook adds the selector and toleration.
    p.cli(&[
        "tenant",
        "policy",
        TENANT,
        "--patch",
        &format!("{{{POOL_SCHEDULING}}}"),
    ])?;
    let up_ns = upstream_ns();

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
    let (via, direct) = raw_both(&k, &up, |ns| {
        format!("/api/v1/namespaces/{ns}/pods/{pod}:8080/proxy/index.html")
    })?;
    ensure!(
        via.trim() == PAGE && via == direct,
        "pods/proxy: paddock {via:?}, apiserver {direct:?}"
    );
    eprintln!("port-forward and pods/proxy reach the container's server");

    top(&k, &other, &up, &pod, &node)?;
    following_streams(&k, &up, &dir)?;
    services_proxy(&k, &up)?;
    egress_reaches_the_service(cp, &up)?;

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
    poll_within(
        Duration::from_secs(60),
        EVERY,
        "otherb's pod Running",
        || {
            Ok(other.run(&[
                "-n",
                NS,
                "get",
                "pod",
                "own",
                "-o",
                "jsonpath={.status.phase}",
            ])? == "Running")
        },
    )?;
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
    poll_within(
        Duration::from_secs(60),
        EVERY,
        "the remote image's pull to fail",
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
    poll_within(
        Duration::from_secs(90),
        EVERY,
        "realaa's pod in `kubectl top pod`",
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
    let up_ns = upstream_ns();
    let (via, direct) = raw_both(k, up, |ns| {
        format!("/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/{pod}")
    })?;
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
fn following_streams(k: &Kubectl, up: &Kubectl, dir: &Path) -> Result<()> {
    let up_ns = upstream_ns();
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
        let mut run = Running::spawn(k, dir, &with_ns(NS, &args), &BTreeMap::new())?;
        let out = run.wait_stdout("tick-", Duration::from_secs(30))?;
        let first = out
            .lines()
            .find(|l| l.starts_with("tick-"))
            .context("no tick line")?
            .to_owned();
        let n: u32 = first
            .trim_start_matches("tick-")
            .trim()
            .parse()
            .context("tick number")?;
        let later = format!("tick-{}", n + 2);
        run.wait_stdout(&format!("{later}\n"), Duration::from_secs(30))?;
        eprintln!(
            "{}: {first} then {later} arrived while it ran",
            args.join(" ")
        );
    }
    poll_within(
        Duration::from_secs(90),
        EVERY,
        "the crasher's restart",
        || {
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
        },
    )?;
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
    poll_within(
        Duration::from_secs(60),
        EVERY,
        "the ephemeral container's output",
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
    let path = |ns: &str| format!("/api/v1/namespaces/{ns}/services/bb:8080/proxy/index.html");
    // the Service's endpoints follow the Service by a moment
    let mut last = String::new();
    poll_within(WAIT_30S, EVERY, "services/proxy through paddock", || {
        last = k.run(&["get", "--raw", &path(NS)]).unwrap_or_default();
        Ok(last.trim() == PAGE)
    })
    .with_context(|| format!("last: {last:?}"))?;
    let (via, direct) = raw_both(k, up, path)?;
    ensure!(
        via.trim() == PAGE && via == direct,
        "services/proxy: paddock {via:?}, directly {direct:?}"
    );
    eprintln!("services/proxy reaches the container's server");
    Ok(())
}

/// The apiserver's egress guard tunnels to the Service's cluster IP (kube-proxy's rules inside
/// the node's namespace pick the endpoint): the way kube-apiserver's ClusterIP resolver and
/// paddock's tenant-webhook relay reach a tenant's webhook Service. Control: an address outside
/// the node's ranges is refused.
fn egress_reaches_the_service(cp: &ControlPlane, up: &Kubectl) -> Result<()> {
    let ip = up.run(&[
        "-n",
        &upstream_ns(),
        "get",
        "service",
        "bb",
        "-o",
        "jsonpath={.spec.clusterIP}",
    ])?;
    let mut s = egress_connect(cp, &format!("{ip}:8080"), Duration::from_secs(10))?;
    s.write_all(b"GET /index.html HTTP/1.0\r\n\r\n")?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)
        .context("reading the Service's answer through the egress guard")?;
    ensure!(
        answer.starts_with("HTTP/1.") && answer.contains(PAGE),
        "GET through the egress guard to {ip}:8080: {answer:?}"
    );
    let refused = egress_connect(cp, "192.0.2.1:443", Duration::from_secs(10))
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    ensure!(
        refused.contains("403"),
        "CONNECT 192.0.2.1:443 through the egress guard: {refused:?}"
    );
    eprintln!("the apiserver's egress guard reaches the Service's cluster IP {ip}:8080");
    Ok(())
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

fn port_forward(k: &Kubectl, dir: &Path, pod_ref: &str) -> Result<()> {
    let args = [
        "-n",
        NS,
        "port-forward",
        pod_ref,
        ":8080",
        "--address=127.0.0.1",
    ];
    let mut pf = Running::spawn(k, dir, &args, &BTreeMap::new())?;
    let out = pf.wait_stdout("Forwarding from 127.0.0.1:", Duration::from_secs(30))?;
    let port: u16 = out
        .lines()
        .find_map(|l| l.strip_prefix("Forwarding from 127.0.0.1:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .with_context(|| format!("no local port in {out:?}"))?;
    for i in 0..3 {
        let resp = http_get(port).with_context(|| format!("GET #{i} through {}", pf.report()))?;
        ensure!(
            resp.starts_with("HTTP/1.") && resp.contains(PAGE),
            "GET #{i}: {resp:?}"
        );
    }
    Ok(())
}

/// `get --raw` of the same path through paddock (the tenant's namespace) and at the apiserver
/// (its upstream namespace): `get --raw` takes the path as is, so each side names its own.
fn raw_both(k: &Kubectl, up: &Kubectl, path: impl Fn(&str) -> String) -> Result<(String, String)> {
    let via = k.run(&["get", "--raw", &path(NS)])?;
    let direct = up.run(&["get", "--raw", &path(&upstream_ns())])?;
    Ok((via, direct))
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

/// realaa's namespace `app` as the apiserver knows it.
fn upstream_ns() -> String {
    format!("{TENANT}-{NS}")
}

fn with_ns<'a>(ns: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["-n", ns];
    v.extend_from_slice(args);
    v
}

fn to_strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}
