//! The tenant's cluster from the inside (issue 38, docs/inside.md), on the test bed's real
//! node: paddock's webhook points every new tenant pod at paddock (`KUBERNETES_SERVICE_HOST`
//! = `kubernetes.default.svc.cluster.local`, paddock's CA as the token volume's `ca.crt`, the
//! tenant's name in its `namespace` file) and at the tenant DNS (tests/testbed/node.sh,
//! docs/dns.md). The name resolves, through the tenant DNS, to the tenant's own `kubernetes`
//! Service in its `default` namespace, whose Endpoints paddock keeps pointing at itself (here:
//! the node's address, bridged to paddock on the host).
//!
//! - A Deployment running kubectl with in-cluster config prints the tenant's view (`get ns`,
//!   `get pods -A`, its own namespace by default); the same token straight at the apiserver
//!   is refused what the tenant view grants (the bypass run).
//! - A Service in `shop` answers from namespace `web` by `web.shop.svc.cluster.local`,
//!   `web.shop.svc` and `web.shop`; the StatefulSet pod name resolves; a second tenant with
//!   the same names gets its own.
//! - Attacks from inside, each with its positive control: another tenant's (and the tenant's
//!   own) upstream names do not resolve, nor does another tenant's Service IP backwards; a pod
//!   that points itself at the upstream apiserver fails TLS (it trusts paddock's CA only) and,
//!   skipping verification, holds only its upstream rights; a forged namespace annotation is
//!   overwritten; the `kubernetes` Service, Endpoints and EndpointSlice are read-only for the
//!   tenant, through paddock and with its token straight at the apiserver; the tenant DNS
//!   refuses a pod of no tenant; a namespace the platform opted out keeps the upstream's.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use paddock_e2e::process::{indent, poll_within, tail_file};
use paddock_e2e::real_node::{
    API_HOST, PADDOCK_POD_PORT as POD_PORT, POOL_SCHEDULING, RealNode, cluster_ip, own_service,
    start_in_cluster,
};
use paddock_e2e::token::token_kubeconfig;
use paddock_e2e::{ControlPlane, Kubectl, Paddock};

const A: &str = "insida";
const B: &str = "insidb";
const KUBECTL_IMAGE: &str = "paddock.test/kubectl:1.33";
const BUSYBOX: &str = "paddock.test/busybox:1.35";
const EVERY: Duration = Duration::from_millis(500);

#[test]
fn tenant_pods_see_the_tenants_cluster_from_inside() -> Result<()> {
    let cp = ControlPlane::start_real_node().context("starting the control plane")?;
    let node = RealNode::of(&cp)?;
    // paddock runs on the host; its "own Service", whose ready addresses the leader copies
    // into every tenant's `kubernetes` endpoints, is a selector-less one whose EndpointSlice
    // names the bridge on the node's address (what a chart's Service has for its pods).
    let p = start_in_cluster(&cp, &node, &[])?;
    let r = run(&cp, &p, &node);
    if r.is_err() {
        for log in ["tenant-dns", "kubelet", "kube-proxy"] {
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

fn run(cp: &ControlPlane, p: &Paddock, node: &RealNode) -> Result<()> {
    let up = cp.kubectl_admin()?;
    let a = p.kubectl_tenant(A)?;
    let b = p.kubectl_tenant(B)?;
    let pool = POOL_SCHEDULING;
    p.cli(&[
        "tenant",
        "policy",
        A,
        "--patch",
        &format!(r#"{{{pool},"inCluster":{{"upstreamNamespaces":["legacy"]}}}}"#),
    ])?;
    p.cli(&["tenant", "policy", B, "--patch", &format!("{{{pool}}}")])?;

    api_service_is_paddocks(cp, &a, &up, node)?;
    let t0 = Instant::now();
    a.run_stdin(&["apply", "-f", "-"], Some(&tenant_a_objects()))?;
    b.run_stdin(&["apply", "-f", "-"], Some(&shop("insidb")))?;
    b.run_stdin(&["apply", "-f", "-"], Some(&client("web", "")))?;
    for (k, ns, what) in [
        (&a, "shop", "deployment/web"),
        (&a, "shop", "statefulset/db"),
        (&a, "ops", "deployment/inside"),
        (&a, "web", "deployment/client"),
        (&a, "legacy", "deployment/client"),
        (&b, "shop", "deployment/web"),
        (&b, "web", "deployment/client"),
    ] {
        k.run(&["-n", ns, "rollout", "status", what, "--timeout=180s"])
            .with_context(|| format!("{ns}/{what} ready"))?;
    }
    eprintln!(
        "seven workloads of two tenants Ready in {:.1} s",
        t0.elapsed().as_secs_f64()
    );

    kubectl_in_a_pod_sees_the_tenant(&a)?;
    dns_in_the_tenants_names(&a, &b, &up)?;
    attacks_from_inside(cp, &a, &up)?;
    endpoints_follow_paddocks_service(&a, &up, node)?;
    Ok(())
}

/// The tenant's `kubernetes` Service points at paddock and cannot be changed by the tenant.
fn api_service_is_paddocks(
    cp: &ControlPlane,
    a: &Kubectl,
    up: &Kubectl,
    node: &RealNode,
) -> Result<()> {
    let svc = a.run(&[
        "-n",
        "default",
        "get",
        "service",
        "kubernetes",
        "-o",
        "jsonpath={.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort}",
    ])?;
    ensure!(
        svc == format!("https 443 {POD_PORT}"),
        "kubernetes Service: {svc:?}"
    );
    let want = format!("{}:{POD_PORT}", node.ip);
    poll_within(
        Duration::from_secs(30),
        EVERY,
        "the kubernetes Endpoints",
        || {
            let ep = a.run(&[
                "-n",
                "default",
                "get",
                "endpoints",
                "kubernetes",
                "-o",
                "jsonpath={.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}",
            ])?;
            Ok(ep == want)
        },
    )?;
    let slices = a.run(&[
        "-n",
        "default",
        "get",
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=kubernetes",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.endpoints[0].addresses[0]}{\"\\n\"}{end}",
    ])?;
    ensure!(
        slices.trim() == format!("kubernetes {}", node.ip),
        "kubernetes EndpointSlices: {slices:?}"
    );
    // Read-only for the tenant, through paddock ...
    for what in [
        "service/kubernetes",
        "endpoints/kubernetes",
        "endpointslice/kubernetes",
    ] {
        let (ok, out) = attempt(a, &["-n", "default", "delete", what])?;
        ensure!(
            !ok && out.contains("managed by the platform"),
            "the tenant deleted {what}: {out}"
        );
    }
    // ... and with a tenant pod's token straight at the apiserver (the bypass run).
    // The token's ServiceAccount is an admin of `default`, so that RBAC lets the request
    // through to the guard (the binding's upstream mirror takes a moment).
    a.run(&["-n", "default", "create", "serviceaccount", "probe"])?;
    a.run(&[
        "-n",
        "default",
        "create",
        "rolebinding",
        "probe-admin",
        "--clusterrole=admin",
        "--serviceaccount=default:probe",
    ])?;
    let token = a.run(&["-n", "default", "create", "token", "probe"])?;
    let kc = token_kubeconfig(
        cp.dir(),
        "insida-probe",
        &cp.admin_kubeconfig(),
        token.trim(),
    )?;
    let direct = Kubectl::new(kc)?;
    let upstream_default = format!("{A}-default");
    a.run(&[
        "-n",
        "default",
        "create",
        "service",
        "clusterip",
        "mine",
        "--tcp=80:80",
    ])?;
    poll_within(
        Duration::from_secs(30),
        EVERY,
        "the probe token's admin rights upstream",
        || {
            let (_, o) = attempt(
                &direct,
                &["-n", &upstream_default, "get", "service", "mine"],
            )?;
            Ok(o.contains("mine"))
        },
    )?;
    for what in [
        "service/kubernetes",
        "endpoints/kubernetes",
        "endpointslice/kubernetes",
    ] {
        let (ok, out) = attempt(&direct, &["-n", &upstream_default, "delete", what])?;
        // The guard's refusal, or RBAC's where the role has no such right (Endpoints).
        ensure!(
            !ok && (out.contains("managed by the platform") || out.contains("cannot delete")),
            "the tenant's token straight at the apiserver deleted {what}: {out}"
        );
    }
    // Positive control: the same token deletes a Service of the tenant's own beside it.
    let (ok, out) = attempt(
        &direct,
        &["-n", &upstream_default, "delete", "service", "mine"],
    )?;
    ensure!(
        ok,
        "control: the token could not delete its own Service: {out}"
    );
    let kept = up.run(&[
        "-n",
        &format!("{A}-default"),
        "get",
        "service,endpoints,endpointslices",
        "-l",
        "paddock.io/managed-for",
        "-o",
        "name",
    ])?;
    ensure!(
        kept.lines().count() == 3,
        "the Service, Endpoints and EndpointSlice are all still there upstream: {kept}"
    );
    Ok(())
}

/// kubectl with in-cluster config in a tenant Deployment prints the tenant's view.
fn kubectl_in_a_pod_sees_the_tenant(a: &Kubectl) -> Result<()> {
    let mut logs = String::new();
    poll_within(
        Duration::from_secs(60),
        EVERY,
        "the in-pod kubectl's output",
        || {
            logs = a.run(&["-n", "ops", "logs", "deployment/inside"])?;
            Ok(logs.contains("END"))
        },
    )?;
    eprintln!(
        "kubectl in the tenant's pod printed:\n{}",
        indent(&logs, "  | ")
    );
    let section = |name: &str| -> Vec<String> {
        logs.split(&format!("== {name}\n"))
            .nth(1)
            .and_then(|s| s.split("== ").next())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .filter(|l| !l.is_empty())
            .collect()
    };
    let mut outside: Vec<String> = a
        .run(&["get", "namespaces", "-o", "name"])?
        .lines()
        .map(str::to_owned)
        .collect();
    outside.sort();
    let mut inside = section("namespaces");
    inside.sort();
    ensure!(
        inside == outside,
        "in-pod `get ns` {inside:?}, the tenant's own {outside:?}"
    );
    let pods = section("pods");
    ensure!(
        pods.iter().any(|l| l.starts_with("ops ")) && pods.iter().any(|l| l.starts_with("shop ")),
        "in-pod `get pods -A`: {pods:?}"
    );
    ensure!(
        !logs.contains(&format!("{A}-")),
        "an upstream name reached the pod: {logs}"
    );
    ensure!(
        section("namespace file") == ["ops"],
        "namespace file: {logs}"
    );
    ensure!(
        section("serviceaccounts").contains(&"serviceaccount/ctrl".to_owned()),
        "in-pod `get sa` (its own namespace): {logs}"
    );
    ensure!(
        section("host") == [API_HOST],
        "KUBERNETES_SERVICE_HOST: {logs}"
    );
    Ok(())
}

/// Runs kubectl, whatever the outcome: (exit 0, stdout and stderr).
/// kubectl's own client-side log lines (klog: `E1129 23:08:25.904758 ...`, e.g. exec's
/// "Unknown stream id 1, discarding message" over WebSockets) are left out: they are not the
/// command's output.
fn attempt(k: &Kubectl, args: &[&str]) -> Result<(bool, String)> {
    let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    let (_, out) = k.run_raw(&args, None, &Default::default(), None)?;
    let stderr: String = out
        .stderr
        .lines()
        .filter(|l| !is_klog_line(l))
        .map(|l| format!("{l}\n"))
        .collect();
    Ok((out.success(), format!("{}{stderr}", out.stdout)))
}

/// `[IWEF]mmdd hh:mm:ss.uuuuuu`: a line kubectl itself logged.
fn is_klog_line(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 21
        && matches!(b[0], b'I' | b'W' | b'E' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' '
        && b[8] == b':'
        && b[11] == b':'
        && b[14] == b'.'
}

/// `exec` of a shell script in a tenant's client pod.
fn exec(k: &Kubectl, ns: &str, script: &str) -> Result<(bool, String)> {
    attempt(
        k,
        &[
            "-n",
            ns,
            "exec",
            "deployment/client",
            "--",
            "sh",
            "-c",
            script,
        ],
    )
}

/// An HTTP GET by name from inside the pod (kubectl's Go resolver reads the pod's
/// resolv.conf; busybox's wget and nc need NSS modules the image does not have).
fn http_get(url: &str) -> String {
    format!("kubectl --kubeconfig=/dev/null --server={url} get --raw /")
}

/// The `in-addr.arpa` name of an IPv4 address (busybox's nslookup asks PTRs by it).
fn reverse(ip: &str) -> String {
    let mut octets: Vec<&str> = ip.split('.').collect();
    octets.reverse();
    format!("{}.in-addr.arpa", octets.join("."))
}

fn dns_in_the_tenants_names(a: &Kubectl, b: &Kubectl, up: &Kubectl) -> Result<()> {
    for name in ["web.shop.svc.cluster.local", "web.shop.svc", "web.shop"] {
        let (ok, out) = exec(a, "web", &http_get(&format!("http://{name}")))?;
        ensure!(
            ok && out.trim() == "shop-of-insida",
            "{A} GET {name}: {out}"
        );
    }
    let (ok, out) = exec(b, "web", &http_get("http://web.shop.svc.cluster.local"))?;
    ensure!(
        ok && out.trim() == "shop-of-insidb",
        "{B} GET web.shop: {out}"
    );
    let db0 = up.run(&[
        "-n",
        &format!("{A}-shop"),
        "get",
        "pod",
        "db-0",
        "-o",
        "jsonpath={.status.podIP}",
    ])?;
    let (ok, out) = exec(a, "web", "nslookup -type=a db-0.db.shop.svc.cluster.local")?;
    ensure!(
        ok && out.contains(&db0),
        "StatefulSet pod name (pod IP {db0}): {out}"
    );
    let a_ip = cluster_ip(a, "shop", "web")?;
    let b_ip = cluster_ip(b, "shop", "web")?;
    // Backwards: the tenant's own Service by its tenant name (control) ...
    let (ok, out) = exec(a, "web", &format!("nslookup -type=ptr {}", reverse(&a_ip)))?;
    ensure!(
        ok && out.contains("web.shop.svc.cluster.local"),
        "PTR of {a_ip}: {out}"
    );
    ensure!(
        !out.contains(&format!("{A}-")),
        "PTR of {a_ip} names upstream: {out}"
    );
    // ... and never another tenant's.
    let (_, out) = exec(a, "web", &format!("nslookup -type=ptr {}", reverse(&b_ip)))?;
    ensure!(
        !out.contains("web.") && !out.contains(B),
        "PTR of {B}'s {b_ip}: {out}"
    );
    // Upstream names resolve to nothing: another tenant's, and the tenant's own.
    for name in [
        format!("web.{B}-shop.svc.cluster.local"),
        format!("web.{A}-shop.svc.cluster.local"),
    ] {
        let (_, out) = exec(a, "web", &format!("nslookup -type=a {name}"))?;
        ensure!(
            !out.contains(&b_ip) && !out.contains(&a_ip),
            "{A} resolved the upstream name {name}: {out}"
        );
    }
    let (ok, out) = exec(a, "web", "nslookup -type=a web.shop.svc.cluster.local")?;
    ensure!(ok && out.contains(&a_ip), "control: {out}");
    Ok(())
}

fn attacks_from_inside(cp: &ControlPlane, a: &Kubectl, up: &Kubectl) -> Result<()> {
    let svc_ip = cluster_ip(up, "default", "kubernetes")?;
    let inside = |script: &str| {
        attempt(
            a,
            &[
                "-n",
                "ops",
                "exec",
                "deployment/inside",
                "--",
                "sh",
                "-c",
                script,
            ],
        )
    };
    // The pod points itself at the upstream apiserver: it trusts paddock's CA only.
    let (ok, out) = inside(&format!(
        "KUBERNETES_SERVICE_HOST={svc_ip} KUBERNETES_SERVICE_PORT=443 kubectl get ns"
    ))?;
    ensure!(
        !ok && out.contains("x509"),
        "upstream with paddock's CA: {out}"
    );
    // Skipping verification, its token holds only its upstream rights (docs/security.md).
    let raw = format!(
        "kubectl --kubeconfig=/dev/null --server=https://{svc_ip} --insecure-skip-tls-verify \
         --token=\"$(cat /var/run/secrets/kubernetes.io/serviceaccount/token)\""
    );
    let (ok, out) = inside(&format!("{raw} get ns"))?;
    ensure!(
        !ok && out.contains("forbidden")
            && out.contains(&format!("system:serviceaccount:{A}-ops:ctrl")),
        "upstream `get ns` with the pod's token: {out}"
    );
    let (ok, out) = inside(&format!("{raw} -n {B}-shop get pods"))?;
    ensure!(
        !ok && out.contains("forbidden"),
        "another tenant's namespace upstream: {out}"
    );
    // Control: through paddock the same pod lists the tenant's namespaces.
    let (ok, out) = inside("kubectl get ns -o name")?;
    ensure!(ok && out.contains("namespace/ops"), "control: {out}");

    // A forged namespace annotation is overwritten by the webhook (the client pods carry one).
    let (ok, out) = exec(
        a,
        "web",
        "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace",
    )?;
    ensure!(
        ok && out.trim() == "web",
        "namespace file under a forged annotation: {out}"
    );

    // The opted-out namespace keeps the upstream's configuration.
    let (ok, out) = exec(
        a,
        "legacy",
        "echo $KUBERNETES_SERVICE_HOST; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace",
    )?;
    ensure!(
        ok && out.lines().collect::<Vec<_>>() == [svc_ip.as_str(), &format!("{A}-legacy")],
        "opted-out namespace: {out}"
    );

    // The tenant DNS answers tenant pods only: a platform pod asking it is refused.
    let dns = cp.var("REAL_NODE_DNS")?;
    up.run_stdin(&["apply", "-f", "-"], Some(&platform_probe(dns)))?;
    up.run(&[
        "-n",
        "platform-probe",
        "wait",
        "--for=condition=Ready",
        "pod/probe",
        "--timeout=120s",
    ])?;
    let (_, out) = attempt(
        up,
        &[
            "-n",
            "platform-probe",
            "exec",
            "probe",
            "--",
            "nslookup",
            "web.shop.svc.cluster.local",
        ],
    )?;
    ensure!(
        out.contains("REFUSED"),
        "a platform pod asking the tenant DNS: {out}"
    );
    Ok(())
}

/// A replica added to paddock's Service and removed again: the tenant's `kubernetes`
/// Endpoints and EndpointSlice follow within seconds.
fn endpoints_follow_paddocks_service(a: &Kubectl, up: &Kubectl, node: &RealNode) -> Result<()> {
    let second = "10.243.0.4";
    let eps = || -> Result<String> {
        let ep = a.run(&[
            "-n",
            "default",
            "get",
            "endpoints",
            "kubernetes",
            "-o",
            "jsonpath={range .subsets[*].addresses[*]}{.ip} {end}",
        ])?;
        let sl = a.run(&[
            "-n",
            "default",
            "get",
            "endpointslice",
            "kubernetes",
            "-o",
            "jsonpath={range .endpoints[*]}{.addresses[0]} {end}",
        ])?;
        Ok(format!("{}|{}", ep.trim(), sl.trim()))
    };
    for (addresses, want) in [
        (
            vec![node.ip.as_str(), second],
            format!("{0} {second}|{0} {second}", node.ip),
        ),
        (vec![node.ip.as_str()], format!("{0}|{0}", node.ip)),
    ] {
        let t0 = Instant::now();
        up.run_stdin(&["apply", "-f", "-"], Some(&own_service(&addresses)))?;
        let mut seen = String::new();
        poll_within(
            Duration::from_secs(20),
            EVERY,
            "the tenant's kubernetes endpoints following paddock's Service",
            || {
                seen = eps()?;
                Ok(seen == want)
            },
        )
        .with_context(|| format!("last seen {seen:?}"))?;
        eprintln!(
            "paddock's Service at {addresses:?}: the tenant's endpoints followed in {:.1} s",
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

fn tenant_a_objects() -> String {
    let script = "echo '== namespaces'; kubectl get ns -o name; \
         echo '== pods'; kubectl get pods -A --no-headers -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name; \
         echo '== serviceaccounts'; kubectl get sa -o name; \
         echo '== namespace file'; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; \
         echo '== host'; echo $KUBERNETES_SERVICE_HOST; echo '== END'; exec sleep 3600";
    format!(
        "{ns}---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: ctrl, namespace: ops}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: ctrl-admin, namespace: ops}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}}
subjects: [{{kind: ServiceAccount, name: ctrl, namespace: ops}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: ctrl-view}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}}
subjects: [{{kind: ServiceAccount, name: ctrl, namespace: ops}}]
---
{inside}---
{shop}---
{client}---
{legacy}",
        ns = ["ops", "legacy"]
            .iter()
            .map(|n| format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {n}}}\n---\n"))
            .collect::<String>(),
        inside = deployment("ops", "inside", KUBECTL_IMAGE, "ctrl", "", script),
        shop = shop("insida"),
        client = client("web", "kube-system"),
        legacy = deployment(
            "legacy",
            "client",
            KUBECTL_IMAGE,
            "default",
            "",
            "exec sleep 3600"
        ),
    )
}

/// Namespace `shop` with Service `web` (busybox httpd answering `shop-of-<tenant>`) and a
/// headless Service `db` with its one-replica StatefulSet.
fn shop(tenant: &str) -> String {
    let serve = format!(
        "mkdir -p /www; echo shop-of-{tenant} > /www/index.html; exec httpd -f -p 8080 -h /www"
    );
    format!(
        "apiVersion: v1
kind: Namespace
metadata: {{name: shop}}
---
{web}---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: shop}}
spec: {{selector: {{app: web}}, ports: [{{port: 80, targetPort: 8080}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: db, namespace: shop}}
spec: {{clusterIP: None, selector: {{app: db}}, ports: [{{port: 5432}}]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db, namespace: shop}}
spec:
  serviceName: db
  replicas: 1
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers: [{{name: db, image: {BUSYBOX}, imagePullPolicy: Never, command: [sh, -c, 'exec sleep 3600']}}]
",
        web = deployment("shop", "web", BUSYBOX, "default", "", &serve),
    )
}

/// Namespace `ns` with Deployment `client` (kubectl and busybox), its pods carrying a forged
/// namespace annotation when `forged` is not empty.
fn client(ns: &str, forged: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n---\n{}",
        deployment(
            ns,
            "client",
            KUBECTL_IMAGE,
            "default",
            forged,
            "exec sleep 3600"
        )
    )
}

fn deployment(ns: &str, name: &str, image: &str, sa: &str, forged: &str, script: &str) -> String {
    let annotations = if forged.is_empty() {
        String::new()
    } else {
        format!(", annotations: {{paddock.io/namespace: {forged}}}")
    };
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {ns}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}{annotations}}}
    spec:
      serviceAccountName: {sa}
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: {image}
        imagePullPolicy: Never
        env: [{{name: HOME, value: /tmp}}]
        command: [sh, -c, {script:?}]
"
    )
}

/// A pod of no tenant on the real node that asks the tenant DNS.
fn platform_probe(dns: &str) -> String {
    format!(
        "apiVersion: v1
kind: Namespace
metadata: {{name: platform-probe}}
---
apiVersion: v1
kind: Pod
metadata: {{name: probe, namespace: platform-probe}}
spec:
  nodeSelector: {{paddock.test/pool: real}}
  tolerations: [{{key: paddock.test/real-node, operator: Exists, effect: NoSchedule}}]
  automountServiceAccountToken: false
  dnsPolicy: None
  dnsConfig: {{nameservers: [{dns}], searches: [svc.cluster.local], options: [{{name: ndots, value: '5'}}]}}
  terminationGracePeriodSeconds: 1
  containers: [{{name: main, image: {BUSYBOX}, imagePullPolicy: Never, command: [sh, -c, 'exec sleep 3600']}}]
"
    )
}
