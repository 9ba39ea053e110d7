//! Streams through paddock that a scenario file cannot express: long-running kubectl processes
//! (port-forward, logs -f, attach) checked while they run, over WebSocket and over SPDY.
//!
//! The test bed's kwok serves the kubelet API on loopback (tests/testbed/up.sh, "streams"):
//! port-forward to pod port 80 reaches a loopback web server, logs and attach follow the file
//! `$POD_LOG_FILE`, to which this test appends lines. The apiserver reaches kwok only through the
//! loopback-only egress proxy, whose log must show the tunnels.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::process::{indent, tail_file};
use paddock_e2e::running::Running;
use paddock_e2e::{ControlPlane, Paddock, StoreKind};

const TENANT: &str = "foofoo";
const NS: &str = "streams";

/// One HTTP/1.0 GET on 127.0.0.1:`port`; returns the response (headers and Content-Length
/// bytes of body; the end of the stream is not awaited: a port-forward need not pass the
/// server's close on at once).
fn http_get(port: u16) -> Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(b"GET /index.html HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())
                        .flatten()
                })
                .context("no Content-Length in the response")?;
            if buf.len() >= end + 4 + len {
                return Ok(text);
            }
        }
        let n = s
            .read(&mut chunk)
            .with_context(|| format!("reading the response (so far {text:?})"))?;
        if n == 0 {
            bail!("connection closed before the whole response: {text:?}");
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn append_log_line(file: &Path, text: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new().append(true).open(file)?;
    writeln!(f, "2026-01-01T00:01:00.000000000Z stdout F {text}")?;
    Ok(())
}

fn ws_env(websocket: bool, var: &'static str) -> BTreeMap<&'static str, &'static str> {
    let mut env = BTreeMap::new();
    env.insert(var, if websocket { "true" } else { "false" });
    env
}

fn proto(websocket: bool) -> &'static str {
    if websocket { "WebSocket" } else { "SPDY" }
}

#[test]
fn streams_through_paddock() -> Result<()> {
    let cp = ControlPlane::start().context("starting the control plane")?;
    let p = Paddock::start(&cp, StoreKind::Etcd).context("starting paddock")?;
    let r = run(&cp, &p);
    if r.is_err() {
        eprintln!(
            "tail of {}:\n{}\ntail of the egress proxy's log:\n{}\ntail of kwok's log:\n{}",
            p.log_path().display(),
            indent(&tail_file(p.log_path(), 40), "  | "),
            indent(
                &tail_file(&cp.dir().join("logs").join("egress-proxy.log"), 20),
                "  | "
            ),
            indent(
                &tail_file(&cp.dir().join("logs").join("kwok.log"), 20),
                "  | "
            )
        );
    }
    r
}

fn run(cp: &ControlPlane, p: &Paddock) -> Result<()> {
    let k = p.kubectl_tenant(TENANT)?;
    let cache = p.dir().join("kubectl-cache").join("streams-test");
    let log_file = Path::new(cp.var("POD_LOG_FILE")?).to_path_buf();
    k.run(&["create", "namespace", NS])?;
    k.run(&[
        "-n",
        NS,
        "create",
        "deployment",
        "web",
        "--image=registry.k8s.io/pause:3.10",
    ])?;
    k.run(&[
        "-n",
        NS,
        "rollout",
        "status",
        "deployment/web",
        "--timeout=60s",
    ])?;
    let up = cp.kubectl_admin()?;
    let pods = up.run(&["-n", &format!("{TENANT}-{NS}"), "get", "pods", "-o", "name"])?;
    ensure!(
        pods.contains("pod/web-"),
        "upstream has no pod in {TENANT}-{NS}: {pods}"
    );

    // port-forward, both protocols: kubectl listens on a free loopback port, the bytes go
    // kubectl -> paddock -> apiserver -> egress proxy -> kwok -> the test bed's web server.
    for websocket in [true, false] {
        let t0 = Instant::now();
        let mut pf = Running::spawn(
            &k,
            &cache,
            &[
                "-n",
                NS,
                "port-forward",
                "deployment/web",
                ":80",
                "--address=127.0.0.1",
            ],
            &ws_env(websocket, "KUBECTL_PORT_FORWARD_WEBSOCKETS"),
        )?;
        let out = pf.wait_stdout("Forwarding from 127.0.0.1:", Duration::from_secs(30))?;
        let port: u16 = out
            .lines()
            .find_map(|l| l.strip_prefix("Forwarding from 127.0.0.1:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .with_context(|| format!("no local port in {out:?}"))?;
        for i in 0..3 {
            let resp =
                http_get(port).with_context(|| format!("GET #{i} through {}", pf.report()))?;
            ensure!(
                resp.starts_with("HTTP/1.0 200")
                    && resp.contains("paddock-testbed port-forward target"),
                "GET #{i} through port-forward ({}): unexpected response {resp:?}\n{}",
                proto(websocket),
                pf.report()
            );
        }
        ensure!(
            !pf.stderr().contains(TENANT),
            "port-forward's stderr names the upstream namespace:\n{}",
            pf.report()
        );
        eprintln!(
            "port-forward over {}: 3 GETs ok in {:.1}s",
            proto(websocket),
            t0.elapsed().as_secs_f64()
        );
    }

    // logs -f: the initial content, then a line appended while it follows.
    {
        let mut f = Running::spawn(
            &k,
            &cache,
            &["-n", NS, "logs", "-f", "deployment/web"],
            &BTreeMap::new(),
        )?;
        f.wait_stdout("kwok log line 3", Duration::from_secs(30))?;
        append_log_line(&log_file, "appended while following")?;
        f.wait_stdout("appended while following", Duration::from_secs(20))?;
        eprintln!("logs -f: an appended line arrived");
    }

    // attach (kwok follows the log file from its end), both protocols.
    for websocket in [true, false] {
        let mut a = Running::spawn(
            &k,
            &cache,
            &["-n", NS, "attach", "deployment/web"],
            &ws_env(websocket, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS"),
        )?;
        let marker = format!("attached over {}", proto(websocket));
        // kwok starts reading at the end of the file once the stream is set up; append until
        // the line shows (each append is a new line, so an early one is simply not seen).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            append_log_line(&log_file, &marker)?;
            match a.wait_stdout(&marker, Duration::from_secs(2)) {
                Ok(_) => break,
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(e) if a.child.try_wait()?.is_some() => return Err(e),
                Err(_) => {}
            }
        }
        ensure!(
            !a.stderr().contains(TENANT) && !a.stderr().to_lowercase().contains("error"),
            "attach over {}: unexpected stderr:\n{}",
            proto(websocket),
            a.report()
        );
        eprintln!("attach over {}: an appended line arrived", proto(websocket));
    }

    // get -A -w: a cluster-wide watch is one upstream watch per namespace of the tenant; a
    // namespace created while it runs joins it (paddock follows the tenant's namespaces), and
    // a change in an existing namespace arrives as well.
    {
        let mut w = Running::spawn(
            &k,
            &cache,
            &["get", "configmaps", "-A", "-w", "-o", "name"],
            &BTreeMap::new(),
        )?;
        // The initial list: every namespace has kube-root-ca.crt.
        w.wait_stdout("configmap/kube-root-ca.crt", Duration::from_secs(30))?;
        k.run(&[
            "-n",
            NS,
            "create",
            "configmap",
            "in-existing-ns",
            "--from-literal=a=1",
        ])?;
        w.wait_stdout("configmap/in-existing-ns", Duration::from_secs(20))?;
        let t0 = Instant::now();
        k.run(&["create", "namespace", "late-ns"])?;
        k.run(&[
            "-n",
            "late-ns",
            "create",
            "configmap",
            "in-late-ns",
            "--from-literal=a=1",
        ])?;
        w.wait_stdout("configmap/in-late-ns", Duration::from_secs(30))?;
        ensure!(
            !w.stdout().contains(TENANT) && !w.stderr().contains(TENANT),
            "the cluster-wide watch shows upstream names:\n{}",
            w.report()
        );
        eprintln!(
            "get -A -w: a ConfigMap in a namespace created after the watch started arrived {:.1}s after the namespace",
            t0.elapsed().as_secs_f64()
        );
        k.run(&["delete", "namespace", "late-ns", "--wait=false"])?;
    }

    // The kubelet connections went through the loopback-only egress proxy.
    let proxy_log = std::fs::read_to_string(cp.dir().join("logs").join("egress-proxy.log"))?;
    let kubelet = format!("CONNECT 127.0.0.1:{} ok", cp.var("KWOK_KUBELET_PORT")?);
    ensure!(
        proxy_log.matches(&kubelet).count() >= 5,
        "expected the kubelet tunnels ({kubelet}) in the egress proxy's log:\n{proxy_log}"
    );
    k.run(&["delete", "namespace", NS, "--wait=false"])?;
    Ok(())
}
