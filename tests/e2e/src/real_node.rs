//! The test bed's real node (tests/testbed/node.sh, `ControlPlane::start_real_node`) as tests
//! use it: its network namespace, bridges across it, and images loaded into its containerd.
//!
//! The node's namespace has no route to the host; the only ways across are unix sockets,
//! carried by two socats each (one on the host, one inside the namespace), as node.sh does for
//! the apiserver:
//! - [`RealNode::bridge_in`]: a port on the node's address that pods reach, forwarded to a
//!   loopback address of the host (e.g. an etcd the test runs);
//! - [`RealNode::bridge_out`]: a loopback port of the host forwarded to an address inside the
//!   namespace (a Service's cluster IP, a pod), what a NodePort or a load balancer would be.
//!
//! Every process is recorded in the test bed's pids file: down.sh stops them with the rest.
//!
//! The other way in is the apiserver's egress guard (`<dir>/egress-proxy.sock`, an HTTP
//! CONNECT proxy on a unix socket, tests/testbed/egress-proxy.py): it hands CONNECTs to the
//! node's address, its pods and the Service range to a second guard inside the namespace, so
//! a Service's cluster IP is dialled there, through kube-proxy's rules. [`egress_connect`]
//! opens such a tunnel, as kube-apiserver's egress selector (`cluster` -> uds) and paddock's
//! tenant-webhook relay (`--cluster-egress-uds`) do.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::process::{self, describe};
use crate::{ControlPlane, Paddock, StoreKind};

/// The `scheduling` member of a tenant policy that puts the tenant's pods on the real node
/// (its pool label and taint); paddock's webhook adds it to every pod of the tenant.
pub const POOL_SCHEDULING: &str = r#""scheduling":{"nodeSelector":{"paddock.test/pool":"real"},"tolerations":[{"key":"paddock.test/real-node","operator":"Exists","effect":"NoSchedule"}]}"#;

/// Waits until paddock has installed its mutating webhook configuration upstream (pods
/// created before would miss the pool's selector).
pub fn wait_for_webhook(cp: &ControlPlane) -> Result<()> {
    let up = cp.kubectl_admin()?;
    process::poll_within(
        Duration::from_secs(60),
        Duration::from_millis(500),
        "paddock's mutating webhook upstream",
        || {
            Ok(up
                .run(&[
                    "get",
                    "mutatingwebhookconfiguration",
                    "paddock-tenant-policy",
                ])
                .is_ok())
        },
    )?;
    Ok(())
}

/// paddock's port on the node's address: a bridge to its loopback port on the host, where the
/// tenant's `kubernetes` Endpoints point.
pub const PADDOCK_POD_PORT: u16 = 8443;
/// The name tenant pods are given for the API (`KUBERNETES_SERVICE_HOST`); the tenant DNS
/// resolves it to the tenant's own `kubernetes` Service.
pub const API_HOST: &str = "kubernetes.default.svc.cluster.local";
/// The namespace of paddock's stand-in Service ([`own_service`]).
pub const OWN_NS: &str = "paddock-own";

/// paddock's stand-in Service (paddock runs on the host): selector-less, its EndpointSlice
/// with `addresses` ready on the bridge's port, what a chart's Service has for its pods. The
/// leader copies its ready addresses into every tenant's `kubernetes` endpoints.
pub fn own_service(addresses: &[&str]) -> String {
    let endpoints: String = addresses
        .iter()
        .map(|a| format!("- addresses: [{a}]\n  conditions: {{ready: true}}\n"))
        .collect();
    format!(
        "apiVersion: v1
kind: Namespace
metadata: {{name: {OWN_NS}}}
---
apiVersion: v1
kind: Service
metadata: {{name: paddock, namespace: {OWN_NS}}}
spec: {{ports: [{{name: https, port: 443, targetPort: {PADDOCK_POD_PORT}}}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: paddock-1
  namespace: {OWN_NS}
  labels: {{kubernetes.io/service-name: paddock}}
addressType: IPv4
ports: [{{name: https, port: {PADDOCK_POD_PORT}, protocol: TCP}}]
endpoints:
{endpoints}"
    )
}

/// paddock with the in-cluster path on the real node (docs/inside.md): etcd store, admission
/// webhook, `--in-cluster-host` [`API_HOST`], `--in-cluster-service` the stand-in
/// [`own_service`] on the node's address, `--tenant-dns` the node's tenant DNS, and the bridge
/// from the node's address to paddock; `extra_args` after those. Waits for paddock's webhook
/// configuration upstream.
pub fn start_in_cluster(
    cp: &ControlPlane,
    node: &RealNode,
    extra_args: &[String],
) -> Result<Paddock> {
    cp.kubectl_admin()?
        .run_stdin(&["apply", "-f", "-"], Some(&own_service(&[&node.ip])))?;
    let mut args = cp.admission_args()?;
    let service = format!("{OWN_NS}/paddock");
    for a in [
        "--in-cluster-host",
        API_HOST,
        "--in-cluster-service",
        &service,
        "--tenant-dns",
        cp.var("REAL_NODE_DNS")?,
    ] {
        args.push(a.to_owned());
    }
    args.extend(extra_args.iter().cloned());
    let p = Paddock::start_with_args(cp, StoreKind::Etcd, "paddock", &args)?;
    node.bridge_in(
        cp,
        "paddock",
        PADDOCK_POD_PORT,
        &format!("127.0.0.1:{}", p.port()),
    )?;
    wait_for_webhook(cp)?;
    Ok(p)
}

/// The real node of a test bed started with `--real-node`.
pub struct RealNode {
    /// The node's network namespace (`ip netns` name).
    pub netns: String,
    /// The node's address inside it (pods reach it; nothing outside does).
    pub ip: String,
    /// The node's name.
    pub name: String,
    containerd: PathBuf,
    dir: PathBuf,
}

impl RealNode {
    /// The real node of `cp`; fails if it was started without one.
    pub fn of(cp: &ControlPlane) -> Result<RealNode> {
        Ok(RealNode {
            netns: cp.var("REAL_NODE_NETNS")?.to_owned(),
            ip: cp.var("REAL_NODE_IP")?.to_owned(),
            name: cp.var("REAL_NODE_NAME")?.to_owned(),
            containerd: PathBuf::from(cp.var("REAL_NODE_CONTAINERD")?),
            dir: cp.dir().join("node"),
        })
    }

    /// Pods reach `<node ip>:<node_port>`, which is `host_addr` (`127.0.0.1:<port>`) of the host.
    pub fn bridge_in(
        &self,
        cp: &ControlPlane,
        name: &str,
        node_port: u16,
        host_addr: &str,
    ) -> Result<()> {
        let sock = self.dir.join(format!("bridge-in-{name}.sock"));
        self.spawn(
            cp,
            &format!("bridge-in-{name}-host"),
            false,
            &[
                &format!("UNIX-LISTEN:{},fork,mode=600", sock.display()),
                &format!("TCP:{host_addr}"),
            ],
        )?;
        wait_for_path(&sock)?;
        self.spawn(
            cp,
            &format!("bridge-in-{name}-node"),
            true,
            &[
                &format!("TCP-LISTEN:{node_port},bind={},fork,reuseaddr", self.ip),
                &format!("UNIX-CONNECT:{}", sock.display()),
            ],
        )?;
        let listening = format!("{}:{node_port} ", self.ip);
        process::poll_within(
            Duration::from_secs(10),
            Duration::from_millis(100),
            &format!("bridge {name}: something listening on {listening}"),
            || {
                let out = process::run(
                    Command::new("ip")
                        .args(["netns", "exec", &self.netns])
                        .args(["ss", "-Hltn"]),
                    None,
                    Duration::from_secs(5),
                )?;
                Ok(out.stdout.contains(&listening))
            },
        )?;
        Ok(())
    }

    /// `127.0.0.1:<host_port>` of the host is `target` (`<ip>:<port>`) inside the node's namespace.
    pub fn bridge_out(
        &self,
        cp: &ControlPlane,
        name: &str,
        host_port: u16,
        target: &str,
    ) -> Result<()> {
        let sock = self.dir.join(format!("bridge-out-{name}.sock"));
        self.spawn(
            cp,
            &format!("bridge-out-{name}-node"),
            true,
            &[
                &format!("UNIX-LISTEN:{},fork,mode=600", sock.display()),
                &format!("TCP:{target}"),
            ],
        )?;
        wait_for_path(&sock)?;
        self.spawn(
            cp,
            &format!("bridge-out-{name}-host"),
            false,
            &[
                &format!("TCP-LISTEN:{host_port},bind=127.0.0.1,fork,reuseaddr"),
                &format!("UNIX-CONNECT:{}", sock.display()),
            ],
        )?;
        process::poll_within(
            Duration::from_secs(10),
            Duration::from_millis(100),
            &format!("bridge {name}: 127.0.0.1:{host_port} accepting"),
            || Ok(std::net::TcpStream::connect(("127.0.0.1", host_port)).is_ok()),
        )?;
        Ok(())
    }

    /// Imports an image archive (OCI or docker) into the node's containerd.
    pub fn import_image(&self, archive: &Path) -> Result<()> {
        let mut cmd = Command::new("ctr");
        cmd.arg("--address")
            .arg(&self.containerd)
            .args([
                "-n",
                "k8s.io",
                "images",
                "import",
                "--snapshotter",
                "native",
            ])
            .arg(archive);
        let out = process::run(&mut cmd, None, Duration::from_secs(300))?;
        if !out.success() {
            bail!("{}: {}{}", describe(&cmd), out.stdout, out.stderr);
        }
        Ok(())
    }

    /// A socat of this node (in its namespace if `in_ns`), recorded in the pids file.
    fn spawn(&self, cp: &ControlPlane, name: &str, in_ns: bool, args: &[&str]) -> Result<()> {
        let log = cp.dir().join("logs").join(format!("{name}.log"));
        let mut cmd = if in_ns {
            let mut c = Command::new("nsenter");
            c.arg(format!("--net=/run/netns/{}", self.netns))
                .arg("socat");
            c
        } else {
            Command::new("socat")
        };
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).with_context(|| log.display().to_string())?)
            // a process group of its own: down.sh stops the group
            .process_group(0);
        let child = cmd.spawn().with_context(|| describe(&cmd))?;
        cp.record_pid(name, child.id())
    }
}

fn wait_for_path(p: &Path) -> Result<()> {
    process::poll_within(
        Duration::from_secs(10),
        Duration::from_millis(50),
        &format!("{} appearing", p.display()),
        || Ok(p.exists()),
    )?;
    Ok(())
}

/// The apiserver's egress guard of `cp` (tests/testbed/up.sh): an HTTP CONNECT proxy on a unix
/// socket, what `--cluster-egress-uds` names.
pub fn egress_socket(cp: &ControlPlane) -> PathBuf {
    cp.dir().join("egress-proxy.sock")
}

/// A tunnel to `target` (`<ip>:<port>`: a Service's cluster IP, a pod, the node) through the
/// test bed's egress guard: `CONNECT target`, then the raw connection once the guard answers
/// 200. Reads and writes on it time out after `timeout`. Fails with the guard's status line
/// (403: an address it does not tunnel; 502: nothing answered there).
pub fn egress_connect(cp: &ControlPlane, target: &str, timeout: Duration) -> Result<UnixStream> {
    let sock = egress_socket(cp);
    let mut s =
        UnixStream::connect(&sock).with_context(|| format!("connecting to {}", sock.display()))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(s, "CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n")?;
    // The answer's head, byte by byte: nothing of the tunnel after it may be consumed here.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = s
            .read(&mut byte)
            .with_context(|| format!("reading the egress guard's answer to CONNECT {target}"))?;
        if n == 0 || head.len() > 4096 {
            bail!(
                "the egress guard closed or babbled before answering CONNECT {target}: {:?}",
                String::from_utf8_lossy(&head)
            );
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        bail!("CONNECT {target} through {}: {status}", sock.display());
    }
    Ok(s)
}

/// A Service's cluster IP as `k` sees it.
pub fn cluster_ip(k: &crate::Kubectl, ns: &str, svc: &str) -> Result<String> {
    k.run(&[
        "-n",
        ns,
        "get",
        "service",
        svc,
        "-o",
        "jsonpath={.spec.clusterIP}",
    ])
}
