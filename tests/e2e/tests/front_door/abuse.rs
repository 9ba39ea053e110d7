//! The HTTP/2 abuse harness of front_door.rs's `http2_abuse_is_bounded`: each case's attack,
//! whether it stopped within its bound, the prober of the bystander tenant, RSS and panics.

use super::*;

pub(super) fn path() -> String {
    format!("/api/v1/namespaces/{ATTACK_NS}/configmaps")
}

/// A POST's header block: `content-type` and, when given, `content-length`.
pub(super) fn post_block(content_length: Option<usize>) -> Vec<u8> {
    let mut b = hpack::request("POST", &path());
    hpack::literal_name(&mut b, 31, b"application/json"); // content-type
    if let Some(n) = content_length {
        hpack::literal_name(&mut b, 28, n.to_string().as_bytes()); // content-length
    }
    b
}

/// Odd stream ids from 1.
pub(super) fn sid(n: u64) -> u32 {
    u32::try_from(2 * n + 1).unwrap_or(u32::MAX) & 0x7fff_ffff
}

/// Runs `case`'s attack on `conn` until its limit or its end.
pub(super) async fn attack(case: &Case, conn: &Conn) -> Outcome {
    let lim = case.limit;
    let get = hpack::request("GET", &path());
    let ends = case.ends;
    let done = move |s: &Seen| match ends {
        Ends::Connection => false,
        Ends::EveryStream => false,
        Ends::FirstStream => s.stream_done(1),
    };
    match case.attack {
        Attack::RapidReset => {
            h2_attack::run(conn, lim, None, done, |i, b| {
                for k in 0..100 {
                    let id = sid(i * 100 + k);
                    header_block(b, id, &get, true);
                    h2_attack::frame(
                        b,
                        kind::RST_STREAM,
                        0,
                        id,
                        &h2_attack::code::CANCEL.to_be_bytes(),
                    );
                }
                200
            })
            .await
        }
        Attack::ContinuationFlood => {
            h2_attack::run(conn, lim, None, done, |i, b| {
                let mut n = 0;
                if i == 0 {
                    h2_attack::frame(b, kind::HEADERS, flag::END_STREAM, 1, &get);
                    n += 1;
                }
                while n < 200 {
                    h2_attack::frame(b, kind::CONTINUATION, 0, 1, &[]);
                    n += 1;
                }
                n
            })
            .await
        }
        Attack::HpackBomb => {
            h2_attack::run(conn, lim, None, done, |i, b| {
                let mut block = get.clone();
                if i == 0 {
                    hpack::literal_indexed(&mut block, b"x-bomb", &[b'a'; 4000]);
                }
                for _ in 0..48_000 {
                    hpack::indexed(&mut block, 62);
                }
                header_block(b, sid(i), &block, true)
            })
            .await
        }
        Attack::ManyNames => {
            const ALNUM: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";
            let mut block = get.clone();
            for n in 0..24_600usize {
                let name = [ALNUM[n / 1296], ALNUM[n / 36 % 36], ALNUM[n % 36]];
                hpack::literal(&mut block, &name, b"");
            }
            let mut opened = 0u64;
            let mut o = h2_attack::run(conn, lim, None, done, |i, b| {
                if i >= 10 {
                    return 0;
                }
                opened += 1;
                header_block(b, sid(i), &block, true)
            })
            .await;
            // Every stream answered or reset, or the connection ended.
            let all = |s: &Seen| s.ended.is_some() || (0..opened).all(|k| s.stream_done(sid(k)));
            conn.wait_for(Duration::from_secs(3), all).await;
            o.seen = conn.seen();
            o.streams = opened;
            o
        }
        Attack::ResetFloodWindowUpdate => {
            h2_attack::run(conn, lim, None, done, |i, b| {
                for k in 0..100 {
                    let id = sid(i * 100 + k);
                    header_block(b, id, &get, true);
                    h2_attack::frame(b, kind::WINDOW_UPDATE, 0, id, &0u32.to_be_bytes());
                }
                200
            })
            .await
        }
        Attack::ResetFloodData => {
            h2_attack::run(conn, lim, None, done, |i, b| {
                for k in 0..100 {
                    let id = sid(i * 100 + k);
                    header_block(b, id, &get, true);
                    h2_attack::frame(b, kind::DATA, 0, id, b"x");
                }
                200
            })
            .await
        }
        Attack::ResetFloodMalformed => {
            // A malformed request (RFC 9113 §8.2.2: no connection-specific fields) is a stream
            // error: the server resets the stream and the connection lives on.
            let mut bad = get.clone();
            hpack::literal(&mut bad, b"connection", b"keep-alive");
            h2_attack::run(conn, lim, None, done, |i, b| {
                for k in 0..100 {
                    header_block(b, sid(i * 100 + k), &bad, true);
                }
                100
            })
            .await
        }
        Attack::EmptyFrames => {
            let post = post_block(None);
            h2_attack::run(conn, lim, None, done, |i, b| {
                let mut n = 0;
                if i == 0 {
                    header_block(b, 1, &post, false);
                    n += 1;
                }
                while n < 200 {
                    h2_attack::frame(b, kind::DATA, 0, 1, &[]);
                    h2_attack::frame(b, 0xfa, 0, 0, &[]);
                    n += 2;
                }
                n
            })
            .await
        }
        Attack::OneByteData => {
            let post = post_block(None);
            h2_attack::run(conn, lim, None, done, |i, b| {
                let mut n = 0;
                if i == 0 {
                    header_block(b, 1, &post, false);
                    n += 1;
                }
                while n < 500 {
                    h2_attack::frame(b, kind::DATA, 0, 1, b" ");
                    n += 1;
                }
                n
            })
            .await
        }
        Attack::SlowBody => {
            let post = post_block(Some(64));
            h2_attack::run(conn, lim, Some(Duration::from_secs(1)), done, |i, b| {
                if i == 0 {
                    header_block(b, 1, &post, false);
                    h2_attack::frame(b, kind::DATA, 0, 1, b"{");
                    return 2;
                }
                h2_attack::frame(b, kind::DATA, 0, 1, b" ");
                1
            })
            .await
        }
        Attack::SlowHeaders | Attack::SlowHeadersLater => {
            // The later variant first has a GET on stream 1 answered, then starts stream 3 slowly:
            // the header deadline must hold for every request, not only a connection's first.
            let first = if matches!(case.attack, Attack::SlowHeadersLater) {
                let mut b = Vec::new();
                header_block(&mut b, 1, &get, true);
                if conn.send(&b, 1).await.is_ok() {
                    conn.wait_for(Duration::from_secs(5), |s| s.stream_done(1))
                        .await;
                }
                3
            } else {
                1
            };
            h2_attack::run(conn, lim, Some(Duration::from_secs(1)), done, |i, b| {
                if i == 0 {
                    h2_attack::frame(b, kind::HEADERS, flag::END_STREAM, first, &get);
                    return 1;
                }
                let mut field = Vec::new();
                hpack::literal(&mut field, format!("x-slow-{i}").as_bytes(), b"1");
                h2_attack::frame(b, kind::CONTINUATION, 0, first, &field);
                1
            })
            .await
        }
    }
}

/// When an attack was stopped (time since connecting, frames written by then), if it was by
/// the case's measure.
pub(super) fn stopped(case: &Case, o: &Outcome) -> Option<(f64, u64)> {
    let s = &o.seen;
    if let Some((t, f)) = s.ended {
        return Some((t.as_secs_f64(), f));
    }
    match case.ends {
        Ends::Connection => None,
        Ends::FirstStream => s
            .stream_ends
            .get(&1)
            .map(|(t, _)| (t.as_secs_f64(), o.frames)),
        Ends::EveryStream => {
            let refused = |what: &str| what.starts_with('4') || what.starts_with("RST");
            let n = s.stream_ends.len() as u64;
            (n > 0 && n >= o.streams && s.stream_ends.values().all(|(_, w)| refused(w))).then(
                || {
                    let t = s.stream_ends.values().map(|(t, _)| t.as_secs_f64());
                    (t.fold(0.0, f64::max), o.frames)
                },
            )
        }
    }
}

/// A case run with or without a certificate (on one or more connections), and its verdict.
pub(super) struct Row {
    pub(super) case: &'static Case,
    pub(super) who: &'static str,
    /// When the case started.
    pub(super) t0: Instant,
    pub(super) runs: Vec<Outcome>,
    pub(super) rss0: u64,
    pub(super) rss_peak: u64,
    pub(super) rss1: u64,
    pub(super) probes: Probes,
    pub(super) panics: usize,
}

impl Row {
    /// The run stopped last (or not at all), with when.
    pub(super) fn worst(&self) -> (&Outcome, Option<(f64, u64)>) {
        let key = |st: &Option<(f64, u64)>| match st {
            None => (1, 0.0, 0),
            Some((t, f)) => (0, *t, *f),
        };
        self.runs
            .iter()
            .map(|o| (o, stopped(self.case, o)))
            .max_by(|a, b| {
                let (ka, kb) = (key(&a.1), key(&b.1));
                (ka.0, ka.2).cmp(&(kb.0, kb.2)).then(ka.1.total_cmp(&kb.1))
            })
            .unwrap_or((&self.runs[0], None))
    }

    pub(super) fn line(&self) -> String {
        let (o, st) = self.worst();
        let stopped = match st {
            Some((t, f)) => format!("stopped after {f} frames, {t:.2} s"),
            None => format!(
                "NOT stopped ({} frames, {:.1} s sent)",
                o.frames,
                o.elapsed.as_secs_f64()
            ),
        };
        let conns = self.runs.len();
        format!(
            "{:<44} {:<7} | {conns:>3} conn, worst {stopped}: {} | RSS {:.1} -> peak {:.1} -> {:.1} MiB ({:+.1}) | {} probes, max {} ms{}{} | panics {}",
            self.case.name,
            self.who,
            o.seen.summary(),
            self.rss0 as f64 / 1024.0,
            self.rss_peak as f64 / 1024.0,
            self.rss1 as f64 / 1024.0,
            (self.rss1 as f64 - self.rss0 as f64) / 1024.0,
            self.probes.count,
            self.probes.max.as_millis(),
            match self.probes.slowest {
                Some((at, fresh)) if self.probes.max >= Duration::from_millis(200) => format!(
                    " (at {:+.2} s{})",
                    at.saturating_duration_since(self.t0).as_secs_f64()
                        - self.t0.saturating_duration_since(at).as_secs_f64(),
                    if fresh { ", new connection" } else { "" }
                ),
                _ => String::new(),
            },
            if self.probes.errors.is_empty() {
                String::new()
            } else {
                format!(", {} errors", self.probes.errors.len())
            },
            self.panics
        )
    }

    pub(super) fn failures(&self) -> Vec<String> {
        let name = format!("{} / {}", self.case.name, self.who);
        let mut f = Vec::new();
        let (o, st) = self.worst();
        match st {
            None => f.push(format!(
                "{name}: not stopped within {} frames / {:?} ({})",
                self.case.limit.frames,
                self.case.limit.time,
                o.seen.summary()
            )),
            Some((t, frames)) => {
                if t > self.case.max_secs || frames > self.case.max_frames {
                    f.push(format!(
                        "{name}: stopped after {frames} frames and {t:.2} s, over the bound of {} frames / {} s ({})",
                        self.case.max_frames,
                        self.case.max_secs,
                        o.seen.summary()
                    ));
                }
            }
        }
        if self.panics > 0 {
            f.push(format!(
                "{name}: {} \"panicked\" line(s) in paddock's log",
                self.panics
            ));
        }
        if self.rss1 > self.rss0 + RSS_SLACK_KIB {
            f.push(format!(
                "{name}: RSS {} KiB -> {} KiB after {RSS_SETTLE:?} (more than {} MiB above)",
                self.rss0,
                self.rss1,
                RSS_SLACK_KIB / 1024
            ));
        }
        if self.probes.max >= PROBE_MAX {
            f.push(format!(
                "{name}: a bystander's GET took {:?}",
                self.probes.max
            ));
        }
        if let Some(e) = self.probes.errors.first() {
            f.push(format!(
                "{name}: {} bystander GET(s) failed, first: {e}",
                self.probes.errors.len()
            ));
        }
        if self.probes.count < MIN_PROBES {
            f.push(format!(
                "{name}: only {} bystander GET(s) completed",
                self.probes.count
            ));
        }
        f
    }
}

/// The bystander: another tenant's GETs every 50 ms on a thread of its own, alternately on a
/// kept connection and on a new one, and paddock's RSS sampled with each.
pub(super) struct Prober {
    pub(super) stop: Arc<AtomicBool>,
    pub(super) probes: Arc<Mutex<Probes>>,
    pub(super) thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Probes {
    pub(super) count: u64,
    pub(super) max: Duration,
    /// The slowest GET: when it started, and whether on a new connection.
    pub(super) slowest: Option<(Instant, bool)>,
    pub(super) errors: Vec<String>,
    pub(super) rss_peak: u64,
}

impl Prober {
    pub(super) fn start(kubeconfig: &Path, pid: u32) -> Result<Prober> {
        let kubeconfig = kubeconfig.to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let probes = Arc::new(Mutex::new(Probes::default()));
        let (s, pr) = (stop.clone(), probes.clone());
        let thread = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let path = format!("/api/v1/namespaces/{PROBE_NS}/configmaps");
            let Ok(kept) = http::Tls::from_kubeconfig(&kubeconfig, None) else {
                return;
            };
            let mut n = 0u64;
            while !s.load(Ordering::Relaxed) {
                n += 1;
                let new_conn = n.is_multiple_of(2);
                let fresh;
                let client = if new_conn {
                    fresh = http::Tls::from_kubeconfig(&kubeconfig, None);
                    match &fresh {
                        Ok(c) => c,
                        Err(_) => &kept,
                    }
                } else {
                    &kept
                };
                let t0 = Instant::now();
                let r = rt.block_on(client.send(
                    ::http::Method::GET,
                    &path,
                    None,
                    Duration::from_secs(10),
                ));
                let took = t0.elapsed();
                let rss = rss_kib(pid).unwrap_or(0);
                if let Ok(mut p) = pr.lock() {
                    p.count += 1;
                    if took >= Duration::from_millis(300) {
                        eprintln!(
                            "  [prober] a GET took {} ms ({})",
                            took.as_millis(),
                            if new_conn {
                                "new connection"
                            } else {
                                "kept connection"
                            }
                        );
                    }
                    if took > p.max {
                        p.max = took;
                        p.slowest = Some((t0, new_conn));
                    }
                    p.rss_peak = p.rss_peak.max(rss);
                    match r {
                        Ok((st, _)) if st.is_success() => {}
                        Ok((st, body)) => p
                            .errors
                            .push(format!("{st}: {}", String::from_utf8_lossy(&body))),
                        Err(e) => p.errors.push(e.to_string()),
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Ok(Prober {
            stop,
            probes,
            thread: Some(thread),
        })
    }

    /// GETs completed since the last [`Prober::take`].
    pub(super) fn count(&self) -> u64 {
        self.probes.lock().map(|p| p.count).unwrap_or(0)
    }

    /// What was seen since the last call.
    pub(super) fn take(&self) -> Probes {
        self.probes
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }

    pub(super) fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// paddock's resident set (VmRSS), KiB.
pub(super) fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS")
}

pub(super) fn count_panics(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|s| s.lines().filter(|l| l.contains("panicked")).count())
        .unwrap_or(0)
}

/// A kubeconfig's CA, client certificate and key (PEM).
pub(super) struct KubeCred {
    pub(super) ca: Vec<u8>,
    pub(super) cert: Vec<u8>,
    pub(super) key: Vec<u8>,
}

pub(super) fn read_kubeconfig(path: &Path) -> Result<KubeCred> {
    let v: serde_json::Value = serde_norway::from_str(&std::fs::read_to_string(path)?)?;
    let field = |v: &serde_json::Value, k: &str| -> Result<Vec<u8>> {
        b64decode(
            v[k].as_str()
                .with_context(|| format!("no {k} in {}", path.display()))?,
        )
    };
    Ok(KubeCred {
        ca: field(&v["clusters"][0]["cluster"], "certificate-authority-data")?,
        cert: field(&v["users"][0]["user"], "client-certificate-data")?,
        key: field(&v["users"][0]["user"], "client-key-data")?,
    })
}
