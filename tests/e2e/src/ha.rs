//! Parts of the HA tests: HAProxy in front of paddock replicas (TCP mode, TLS passed through,
//! health checks of `/readyz` over TLS), and control of the test bed's kube-apiserver
//! (freeze, thaw, kill, start again).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::process::{self, free_port, tail_file};
use crate::testbed::ControlPlane;

/// How HAProxy checks a replica: every [`CHECK_INTERVAL_MS`], [`CHECK_FALL`] failed checks
/// take it out, [`CHECK_RISE`] good ones put it back (docs/operations.md shows the same).
pub const CHECK_INTERVAL_MS: u64 = 500;
pub const CHECK_FALL: u32 = 2;
pub const CHECK_RISE: u32 = 2;

/// The HAProxy configuration for `replicas` (ports on 127.0.0.1) listening on `port`:
/// TCP mode, so TLS passes through and paddock sees the client certificate; health checks
/// are `GET /readyz` over TLS, verified against paddock's CA (`ca_file`).
pub fn haproxy_config(port: u16, replicas: &[u16], ca_file: &Path, stats_socket: &Path) -> String {
    let mut cfg = format!(
        "global
    maxconn 4096
    stats socket {stats} mode 600 level admin

defaults
    mode tcp
    timeout connect 2s
    # Watches are long-lived: the idle timeouts must be longer than a watch's quiet periods.
    timeout client 10m
    timeout server 10m
    timeout check 2s
    # A connection to a replica that just died is retried on another one.
    retries 3
    option redispatch 1

frontend paddock
    bind 127.0.0.1:{port}
    default_backend paddock_replicas

backend paddock_replicas
    balance roundrobin
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
    default-server check check-ssl check-sni localhost verify required ca-file {ca} verifyhost localhost inter {inter}ms fall {fall} rise {rise}
",
        stats = stats_socket.display(),
        ca = ca_file.display(),
        inter = CHECK_INTERVAL_MS,
        fall = CHECK_FALL,
        rise = CHECK_RISE,
    );
    for (i, p) in replicas.iter().enumerate() {
        cfg.push_str(&format!("    server replica{} 127.0.0.1:{p}\n", i + 1));
    }
    cfg
}

/// `haproxy` on PATH, or an error that says how to get it.
pub fn haproxy_binary() -> Result<PathBuf> {
    let out = Command::new("sh")
        .args(["-c", "command -v haproxy"])
        .output()
        .context("looking for haproxy")?;
    let p = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if p.is_empty() {
        bail!(
            "haproxy is not installed: `apt-get install -y haproxy` (scripts/test.sh and `make test-ha` install it when missing)"
        );
    }
    Ok(PathBuf::from(p))
}

/// A running HAProxy, stopped on drop.
pub struct Haproxy {
    child: Child,
    pub port: u16,
    pub config: PathBuf,
    pub log: PathBuf,
    stats: PathBuf,
}

impl Haproxy {
    /// Starts HAProxy in front of `replicas` (their ports); waits until every replica is up
    /// by its health check.
    pub fn start(cp: &ControlPlane, replicas: &[u16], ca_file: &Path) -> Result<Self> {
        let bin = haproxy_binary()?;
        let port = free_port()?;
        let dir = cp.dir().join("haproxy");
        std::fs::create_dir_all(&dir)?;
        let config = dir.join("haproxy.cfg");
        let stats = dir.join("stats.sock");
        std::fs::write(&config, haproxy_config(port, replicas, ca_file, &stats))?;
        let log = cp.dir().join("logs").join("haproxy.log");
        let logf = std::fs::File::create(&log)?;
        let check = Command::new(&bin)
            .args(["-c", "-f"])
            .arg(&config)
            .output()
            .context("haproxy -c")?;
        if !check.status.success() {
            bail!(
                "haproxy refused its configuration:\n{}{}",
                String::from_utf8_lossy(&check.stdout),
                String::from_utf8_lossy(&check.stderr)
            );
        }
        let child = Command::new(&bin)
            .args(["-db", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::from(logf.try_clone()?))
            .stderr(Stdio::from(logf))
            .spawn()
            .context("starting haproxy")?;
        cp.record_pid("haproxy", child.id())?;
        let me = Haproxy {
            child,
            port,
            config,
            log,
            stats,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let up = me.servers_up().unwrap_or_default();
            if up.len() == replicas.len() {
                return Ok(me);
            }
            if Instant::now() > deadline {
                bail!(
                    "haproxy: only {up:?} of {} replicas up after 30 s; log:\n{}",
                    replicas.len(),
                    tail_file(&me.log, 30)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The URL tenants use.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// Names of the servers HAProxy currently considers up (from its stats socket).
    pub fn servers_up(&self) -> Result<Vec<String>> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo 'show stat' | python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read()); print(s.makefile().read())' {}",
                process::quote(&self.stats.to_string_lossy())
            ))
            .output()
            .context("haproxy stats")?;
        let text = String::from_utf8_lossy(&out.stdout);
        // CSV: pxname,svname,...,status(18th column)...
        Ok(text
            .lines()
            .filter(|l| l.starts_with("paddock_replicas,replica"))
            .filter_map(|l| {
                let cols: Vec<&str> = l.split(',').collect();
                (cols.get(17) == Some(&"UP")).then(|| cols[1].to_owned())
            })
            .collect())
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test bed's kube-apiserver as a process the test can freeze, thaw, kill and start again
/// (same flags, port and etcd).
pub struct Apiserver {
    pid: u32,
    argv: Vec<String>,
    log: PathBuf,
    pki: PathBuf,
    url: String,
    restarts: u32,
}

impl Apiserver {
    pub fn of(cp: &ControlPlane) -> Result<Self> {
        let pid: u32 = cp.var("PID_KUBE_APISERVER")?.parse()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .context("reading kube-apiserver's command line")?;
        let argv = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        Ok(Apiserver {
            pid,
            argv,
            log: cp.dir().join("logs").join("kube-apiserver-restarted.log"),
            pki: cp.dir().join("pki"),
            url: cp.apiserver_url()?.to_owned(),
            restarts: 0,
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Adds flags for the next [`Apiserver::start`] (e.g. `--goaway-chance`).
    pub fn add_args(&mut self, args: &[&str]) {
        self.argv.extend(args.iter().map(|a| (*a).to_owned()));
    }

    /// SIGSTOP: the process keeps its sockets but answers nothing (a hung apiserver).
    pub fn freeze(&self) {
        process::signal(self.pid, "STOP");
    }

    /// SIGCONT.
    pub fn thaw(&self) {
        process::signal(self.pid, "CONT");
    }

    /// SIGKILL (works on a frozen process too); waits until it is gone.
    pub fn kill(&self) -> Result<()> {
        process::signal(self.pid, "KILL");
        let deadline = Instant::now() + Duration::from_secs(10);
        while process::proc_start_time(self.pid).is_some()
            && !std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
                .unwrap_or_default()
                .contains(") Z")
        {
            if Instant::now() > deadline {
                bail!("kube-apiserver {} still there 10 s after SIGKILL", self.pid);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Starts it again with the same command line (a process group of its own, recorded for
    /// the test bed's teardown); returns once its `/readyz` answers, and how long that took.
    pub fn start(&mut self, cp: &ControlPlane) -> Result<Duration> {
        use std::os::unix::process::CommandExt;
        let t0 = Instant::now();
        let logf = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::from(logf.try_clone()?))
            .stderr(Stdio::from(logf))
            .process_group(0);
        for v in [
            "http_proxy",
            "https_proxy",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "all_proxy",
            "ALL_PROXY",
            "no_proxy",
            "NO_PROXY",
        ] {
            cmd.env_remove(v);
        }
        let child = cmd.spawn().context("starting kube-apiserver again")?;
        self.pid = child.id();
        self.restarts += 1;
        cp.record_pid(&format!("kube-apiserver-{}", self.restarts), self.pid)?;
        // The child is reaped by the test bed's teardown (its own process group); dropping
        // the handle does not kill it.
        drop(child);
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let mut curl = Command::new("curl");
            curl.args(["-sf", "--max-time", "2", "--cacert"])
                .arg(self.pki.join("ca.crt"))
                .arg("--cert")
                .arg(self.pki.join("admin.crt"))
                .arg("--key")
                .arg(self.pki.join("admin.key"))
                .arg(format!("{}/readyz", self.url));
            if process::run(&mut curl, None, Duration::from_secs(5))?.success() {
                return Ok(t0.elapsed());
            }
            if Instant::now() > deadline {
                bail!(
                    "kube-apiserver not ready 90 s after its restart; log:\n{}",
                    tail_file(&self.log, 30)
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
