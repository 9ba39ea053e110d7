//! The front door against clients that do not play by the rules (docs/testing.md "Front
//! door", with the figures).
//!
//! - `h2spec_conformance`: h2spec (tests/testbed/tools.sh h2spec) over TLS against paddock's
//!   port, without a client certificate (h2spec cannot present one; paddock answers 401, which
//!   is all h2spec needs). Every generic, HTTP/2 and HPACK test must pass, except the ones in
//!   [`H2SPEC_ALLOWED`], each with the RFC clause and why.
//! - `http2_abuse_is_bounded`: a raw-frame attacker (tests/e2e/src/h2_attack.rs) runs each of
//!   [`CASES`] once without a client certificate and once with a tenant's, over loopback, each
//!   bounded by frames and seconds. Each must end (the connection, or where stated the
//!   request) within its stated bound, leave no "panicked" line in paddock's log, bring
//!   paddock's RSS back within 10 MiB of where it started, and never hold another tenant's
//!   GETs (a prober beside it) for 2 s.
//!
//! Both run paddock's defaults. For runs by hand, `PADDOCK_E2E_FRONT_ARGS` adds `paddock serve`
//! flags to both, and `PADDOCK_E2E_ABUSE_ONLY=<text>` runs only the abuse cases whose name
//! contains the text.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_e2e::cred::b64decode;
use paddock_e2e::h2_attack::{self, Conn, Limit, Outcome, Seen, flag, header_block, hpack, kind};
use paddock_e2e::process::{self, tail_lines};
use paddock_e2e::{ControlPlane, Paddock, StoreKind, http, tools};

/// One control plane for both tests; they run one at a time so that neither disturbs the
/// other's figures. (The control plane is torn down by the test bed's reaper when the test
/// process exits.)
fn bed() -> Result<(&'static ControlPlane, MutexGuard<'static, ()>)> {
    static CP: OnceLock<std::result::Result<ControlPlane, String>> = OnceLock::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cp = CP.get_or_init(|| ControlPlane::start().map_err(|e| format!("{e:#}")));
    match cp {
        Ok(cp) => Ok((cp, guard)),
        Err(e) => bail!("starting the control plane: {e}"),
    }
}

/// `PADDOCK_E2E_FRONT_ARGS`, split on whitespace.
fn front_args() -> Vec<String> {
    std::env::var("PADDOCK_E2E_FRONT_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// h2spec

/// h2spec tests allowed to fail: (section, description, what the failure must show, the RFC
/// clause and why). Any other failure of h2spec 2.2.1's 145 default tests (generic, RFC 7540,
/// RFC 7541) fails the test, unless it passes when its section is run again (below).
///
/// Empty: every test passes.
const H2SPEC_ALLOWED: &[(&str, &str, &str, &str)] = &[];

/// Times a failed test's section is run again on its own before the failure counts. h2spec
/// cannot present a client certificate, so paddock answers its requests 401 from the headers
/// alone, as kube-apiserver does, without reading a body; in the tests that send a malformed
/// frame right after a request's HEADERS (a second HEADERS, a DATA that does not add up to
/// content-length), the 401 sometimes leaves before the malformed frame arrives (a race on
/// loopback), and h2spec reads the answer where it waits for the reset (seen for one or two
/// such tests a run, a different one each time). A server that does not detect the
/// malformation answers every time, and fails every run.
const H2SPEC_RERUNS: usize = 5;

#[test]
fn h2spec_conformance() -> Result<()> {
    let (cp, _one) = bed()?;
    let h2spec = tools::h2spec().context("building h2spec")?;
    let p = Paddock::start_with_args(cp, StoreKind::Embedded, "paddock-h2spec", &front_args())?;
    let run = |sections: &[&str], name: &str| -> Result<(Vec<H2Case>, String)> {
        let report = p.dir().join(name);
        let mut cmd = std::process::Command::new(&h2spec);
        cmd.args(sections)
            .args(["-t", "-k", "-h", "127.0.0.1", "-p"])
            .arg(p.port().to_string())
            .args(["--timeout", "2", "-j"])
            .arg(&report);
        let out = process::run(&mut cmd, None, Duration::from_secs(300))?;
        ensure!(
            report.is_file(),
            "h2spec wrote no report (exit {:?}):\n{}\n{}",
            out.code,
            tail_lines(&out.stdout, 40),
            tail_lines(&out.stderr, 20)
        );
        Ok((
            parse_junit(&std::fs::read_to_string(&report)?),
            tail_lines(&out.stdout, 40),
        ))
    };
    let t0 = Instant::now();
    let (cases, stdout) = run(&[], "h2spec-report.xml")?;
    let took = t0.elapsed();
    let count = |s: &H2Status| cases.iter().filter(|c| &c.status == s).count();
    let failed: Vec<&H2Case> = cases
        .iter()
        .filter(|c| matches!(c.status, H2Status::Failed(_)))
        .collect();
    eprintln!(
        "h2spec against {}: {} tests, {} passed, {} skipped, {} failed, in {:.1} s",
        p.url(),
        cases.len(),
        count(&H2Status::Passed),
        count(&H2Status::Skipped),
        failed.len(),
        took.as_secs_f64()
    );
    let allowed = |c: &H2Case| {
        H2SPEC_ALLOWED.iter().find(|(sec, desc, shows, _)| {
            *sec == c.section
                && *desc == c.desc
                && matches!(&c.status, H2Status::Failed(why) if why.contains(shows))
        })
    };
    let mut unexpected = Vec::new();
    for c in &failed {
        let H2Status::Failed(why) = &c.status else {
            continue;
        };
        let line = format!("{} {}: {}", c.section, c.desc, why.replace('\n', " | "));
        if let Some((_, _, _, reason)) = allowed(c) {
            eprintln!("  allowed failure: {line} ({reason})");
            continue;
        }
        let mut passed_on = None;
        for i in 1..=H2SPEC_RERUNS {
            let (again, _) = run(&[c.section.as_str()], &format!("h2spec-rerun-{i}.xml"))?;
            if again
                .iter()
                .any(|a| a.desc == c.desc && a.status == H2Status::Passed)
            {
                passed_on = Some(i);
                break;
            }
        }
        match passed_on {
            Some(i) => eprintln!("  failed once, passed on rerun {i} of its section: {line}"),
            None => {
                eprintln!("  FAILED (and in {H2SPEC_RERUNS} reruns of its section): {line}");
                unexpected.push(line);
            }
        }
    }
    for (sec, desc, _, _) in H2SPEC_ALLOWED {
        if cases
            .iter()
            .any(|c| c.section == *sec && c.desc == *desc && c.status == H2Status::Passed)
        {
            eprintln!("  note: allowed exception {sec} {desc:?} passed in this run");
        }
    }
    let has = |prefix: &str| cases.iter().any(|c| c.section.starts_with(prefix));
    ensure!(
        cases.len() >= 140 && has("generic/") && has("http2/") && has("hpack/"),
        "h2spec ran only {} tests (the generic, http2 and hpack groups hold 145):\n{}",
        cases.len(),
        stdout
    );
    ensure!(
        unexpected.is_empty(),
        "{} h2spec test(s) failed (not in H2SPEC_ALLOWED):\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    p.stop();
    Ok(())
}

#[derive(Debug, PartialEq, Eq)]
enum H2Status {
    Passed,
    Skipped,
    Failed(String),
}

/// One test of h2spec's JUnit report: its section (`http2/6.5.3`) and description.
#[derive(Debug)]
struct H2Case {
    section: String,
    desc: String,
    status: H2Status,
}

/// The `<testcase>` elements of h2spec's JUnit report (reporter/junit_report.go: attributes
/// `package` and `classname`, a `<failure>`, `<error>` or `<skipped>` child when not passed).
fn parse_junit(xml: &str) -> Vec<H2Case> {
    let unescape = |s: &str| {
        s.replace("&#34;", "\"")
            .replace("&#39;", "'")
            .replace("&#xA;", "\n")
            .replace("&#x9;", "\t")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
    };
    let attr = |tag: &str, name: &str| -> String {
        let key = format!(" {name}=\"");
        tag.find(&key)
            .map(|i| &tag[i + key.len()..])
            .and_then(|rest| rest.find('"').map(|j| unescape(&rest[..j])))
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for chunk in xml.split("<testcase ").skip(1) {
        let Some(tag_end) = chunk.find('>') else {
            continue;
        };
        let tag = format!(" {}", &chunk[..tag_end]);
        let body = if tag.ends_with('/') {
            ""
        } else {
            chunk[tag_end + 1..]
                .split("</testcase>")
                .next()
                .unwrap_or_default()
        };
        let text = |el: &str| {
            body.split(&format!("<{el}>"))
                .nth(1)
                .and_then(|r| r.split(&format!("</{el}>")).next())
                .map(unescape)
                .unwrap_or_default()
        };
        let status = if body.contains("<failure") {
            H2Status::Failed(text("failure"))
        } else if body.contains("<error") {
            H2Status::Failed(text("error"))
        } else if body.contains("<skipped") {
            H2Status::Skipped
        } else {
            H2Status::Passed
        };
        out.push(H2Case {
            section: attr(&tag, "package"),
            desc: attr(&tag, "classname"),
            status,
        });
    }
    out
}

// ---------------------------------------------------------------------------------------------
// HTTP/2 abuse

/// The deadlines given to paddock for the slow cases: a new connection's first request (its
/// header block included), a request's whole body, and a connection without a request in
/// progress. A header block trickled on a connection that has already served a request is
/// cut by the last one (hyper/h2 has no deadline for one stream's header block).
const HEADER_READ_TIMEOUT: (&str, &str) = ("--header-read-timeout", "2s");
const BODY_READ_TIMEOUT: (&str, &str) = ("--body-read-timeout", "2s");
const IDLE_TIMEOUT: (&str, &str) = ("--idle-timeout", "3s");

/// How long the slow cases may take to be cut: the deadline that applies plus 2 s.
const SLOW_CUT_SECS: f64 = 4.0;
const SLOW_LATER_CUT_SECS: f64 = 5.0;

/// What must end for an attack to count as stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    /// The connection: GOAWAY with an error code, or closed.
    Connection,
    /// The connection, or every stream the attack opened was answered with a 4xx or reset
    /// (the 24,600 names: one oversized header block per stream, answered 431).
    EveryStream,
    /// The connection, or stream 1 was answered or reset (the slow body: the request is cut).
    FirstStream,
}

#[derive(Debug, Clone, Copy)]
enum Attack {
    RapidReset,
    ContinuationFlood,
    HpackBomb,
    ManyNames,
    ResetFloodWindowUpdate,
    ResetFloodData,
    ResetFloodMalformed,
    EmptyFrames,
    OneByteData,
    SlowBody,
    SlowHeaders,
    SlowHeadersLater,
}

/// One abuse case: the attack, when it stops by itself (`limit`), and the bound it must have
/// been stopped within (`max_frames` written, `max_secs` after connecting).
struct Case {
    name: &'static str,
    attack: Attack,
    ends: Ends,
    limit: Limit,
    max_frames: u64,
    max_secs: f64,
    /// Repeated on new connections for [`REPEAT_FOR`] (the floods), or run once.
    repeat: bool,
}

const fn limit(frames: u64, secs: u64) -> Limit {
    Limit {
        frames,
        time: Duration::from_secs(secs),
    }
}

/// The cases, with the bounds asserted (frames written by the time the end was read, which
/// includes what was still in flight; seconds after connecting). hyper/h2 0.4 ends each flood
/// with a GOAWAY in well under 0.1 s (docs/testing.md has the figures): ENHANCE_YOUR_CALM for
/// rapid reset (`too_many_resets`), the CONTINUATION flood (`too_many_continuations`), the HPACK
/// bomb (`header_list_way_too_large`), empty and 1-byte DATA (`too_many_data_frames`) and the
/// malformed-request reset flood (`too_many_internal_resets`); PROTOCOL_ERROR at the first
/// WINDOW_UPDATE 0 or DATA on a half-closed stream (a stream error it may treat as a connection
/// error, RFC 9113 §5.4.1). The bounds are far above those figures and far below what a server
/// without these defences accepts (millions of frames in 5 s).
const CASES: &[Case] = &[
    Case {
        name: "rapid reset (HEADERS + RST_STREAM)",
        attack: Attack::RapidReset,
        ends: Ends::Connection,
        limit: limit(400_000, 5),
        max_frames: 50_000,
        max_secs: 2.0,
        repeat: true,
    },
    Case {
        name: "CONTINUATION flood (empty, no END_HEADERS)",
        attack: Attack::ContinuationFlood,
        ends: Ends::Connection,
        limit: limit(4_000_000, 5),
        max_frames: 100_000,
        max_secs: 2.0,
        repeat: true,
    },
    Case {
        name: "HPACK bomb (4 KB entry x 48,000 per block)",
        attack: Attack::HpackBomb,
        ends: Ends::Connection,
        limit: limit(10_000, 5),
        max_frames: 1_000,
        max_secs: 2.0,
        repeat: true,
    },
    Case {
        name: "24,600 distinct header names (148 KB block)",
        attack: Attack::ManyNames,
        ends: Ends::EveryStream,
        limit: limit(100, 5),
        max_frames: 100,
        max_secs: 3.0,
        repeat: true,
    },
    Case {
        name: "reset flood (WINDOW_UPDATE 0 on a stream)",
        attack: Attack::ResetFloodWindowUpdate,
        ends: Ends::Connection,
        limit: limit(400_000, 5),
        max_frames: 50_000,
        max_secs: 2.0,
        repeat: true,
    },
    Case {
        name: "reset flood (DATA on a half-closed stream)",
        attack: Attack::ResetFloodData,
        ends: Ends::Connection,
        limit: limit(400_000, 5),
        max_frames: 50_000,
        max_secs: 2.0,
        repeat: true,
    },
    Case {
        name: "reset flood (HEADERS with `connection:`)",
        attack: Attack::ResetFloodMalformed,
        ends: Ends::Connection,
        limit: limit(400_000, 5),
        max_frames: 50_000,
        max_secs: 2.0,
        repeat: true,
    },
    Case {
        name: "empty DATA and unknown frames",
        attack: Attack::EmptyFrames,
        ends: Ends::Connection,
        limit: limit(4_000_000, 5),
        max_frames: 100_000,
        max_secs: 2.0,
        repeat: true,
    },
    Case {
        name: "1-byte DATA frames into a request body",
        attack: Attack::OneByteData,
        ends: Ends::Connection,
        limit: limit(4_000_000, 5),
        max_frames: 300_000,
        max_secs: 2.0,
        repeat: true,
    },
    Case {
        name: "slow body (1 byte a second)",
        attack: Attack::SlowBody,
        ends: Ends::FirstStream,
        limit: limit(100, 8),
        max_frames: 10,
        max_secs: SLOW_CUT_SECS,
        repeat: false,
    },
    Case {
        name: "slow headers (a CONTINUATION a second)",
        attack: Attack::SlowHeaders,
        ends: Ends::Connection,
        limit: limit(100, 8),
        max_frames: 10,
        max_secs: SLOW_CUT_SECS,
        repeat: false,
    },
    Case {
        name: "slow headers after a first request",
        attack: Attack::SlowHeadersLater,
        ends: Ends::Connection,
        limit: limit(100, 8),
        max_frames: 10,
        max_secs: SLOW_LATER_CUT_SECS,
        repeat: false,
    },
];

/// The attacking tenant and the bystander (tenant ids are 6 characters).
const ATTACKER: &str = "attack";
const BYSTANDER: &str = "bystnd";

/// The namespace the attacker's requests name, and the bystander's.
const ATTACK_NS: &str = "attack";
const PROBE_NS: &str = "probe";

/// Largest rise of paddock's RSS left once an attack has ended, and how long it may take to
/// come back.
const RSS_SLACK_KIB: u64 = 10 * 1024;
const RSS_SETTLE: Duration = Duration::from_secs(5);

/// How long each flood is repeated on new connections, and how many of the bystander's GETs
/// must have been answered over a case at least.
const REPEAT_FOR: Duration = Duration::from_secs(1);
const MIN_PROBES: u64 = 5;

/// The bystander's GETs must be answered within this throughout.
const PROBE_MAX: Duration = Duration::from_secs(2);

#[test]
fn http2_abuse_is_bounded() -> Result<()> {
    let (cp, _one) = bed()?;
    let mut args = front_args();
    for (flag, value) in [HEADER_READ_TIMEOUT, BODY_READ_TIMEOUT, IDLE_TIMEOUT] {
        args.extend([flag.to_owned(), value.to_owned()]);
    }
    let p = Paddock::start_with_args(cp, StoreKind::Embedded, "paddock-abuse", &args)?;
    p.kubectl_tenant(ATTACKER)?
        .run(&["create", "namespace", ATTACK_NS])?;
    p.kubectl_tenant(BYSTANDER)?
        .run(&["create", "namespace", PROBE_NS])?;
    let attacker = read_kubeconfig(&p.tenant(ATTACKER)?)?;
    let anonymous = h2_attack::tls_config(&attacker.ca, None)?;
    let tenant = h2_attack::tls_config(&attacker.ca, Some((&attacker.cert, &attacker.key)))?;
    let addr: SocketAddr = format!("127.0.0.1:{}", p.port()).parse()?;
    let pid = p.pid().context("paddock has no pid")?;

    let prober = Prober::start(&p.tenant(BYSTANDER)?, pid)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // Warm up both kinds of connection, so that the first case does not pay for first use.
    for tls in [&anonymous, &tenant] {
        rt.block_on(async {
            let c = Conn::open(addr, tls.clone()).await?;
            let mut b = Vec::new();
            header_block(&mut b, 1, &hpack::request("GET", &path()), true);
            c.send(&b, 1).await?;
            c.wait_for(Duration::from_secs(5), |s| s.stream_done(1))
                .await;
            anyhow::Ok(())
        })?;
    }
    prober.take();

    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let t_all = Instant::now();
    // For runs by hand: only the cases whose name contains this.
    let only = std::env::var("PADDOCK_E2E_ABUSE_ONLY").unwrap_or_default();
    for case in CASES.iter().filter(|c| c.name.contains(only.as_str())) {
        for (who, tls) in [("no cert", &anonymous), ("tenant", &tenant)] {
            let panics0 = count_panics(p.log_path());
            let rss0 = rss_kib(pid)?;
            prober.take();
            // The floods again and again on new connections for REPEAT_FOR (each must be
            // stopped within the bound); the slow cases once.
            let t0 = Instant::now();
            let mut runs = Vec::new();
            let r = rt.block_on(async {
                loop {
                    let conn = Conn::open(addr, tls.clone()).await?;
                    runs.push(attack(case, &conn).await);
                    if !case.repeat || t0.elapsed() >= REPEAT_FOR || runs.len() >= 500 {
                        break;
                    }
                }
                anyhow::Ok(())
            });
            if let Err(e) = r {
                failures.push(format!("{} / {who}: {e:#}", case.name));
            }
            if runs.is_empty() {
                continue;
            }
            // The attack is over: wait for paddock's RSS to come back, and for the bystander's
            // GETs to have covered the attack.
            let settle = Instant::now();
            let mut rss1 = rss_kib(pid)?;
            while (rss1 > rss0 + RSS_SLACK_KIB || prober.count() < MIN_PROBES)
                && settle.elapsed() < RSS_SETTLE
            {
                std::thread::sleep(Duration::from_millis(50));
                rss1 = rss_kib(pid)?;
            }
            let probes = prober.take();
            let panics = count_panics(p.log_path()).saturating_sub(panics0);
            let row = Row {
                case,
                who,
                t0,
                runs,
                rss0,
                rss_peak: probes.rss_peak.max(rss1),
                rss1,
                probes,
                panics,
            };
            eprintln!("{}", row.line());
            failures.extend(row.failures());
            rows.push(row);
            if let Some(status) = p.exited() {
                bail!(
                    "paddock exited ({status}) during {} / {who}; log tail:\n{}",
                    case.name,
                    process::tail_file(p.log_path(), 40)
                );
            }
        }
    }
    prober.stop();
    eprintln!(
        "\n{} abuse runs in {:.1} s:\n{}",
        rows.len(),
        t_all.elapsed().as_secs_f64(),
        rows.iter().map(Row::line).collect::<Vec<_>>().join("\n")
    );
    if count_panics(p.log_path()) > 0 {
        let log = std::fs::read_to_string(p.log_path()).unwrap_or_default();
        let first: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("panicked"))
            .take(3)
            .collect();
        failures.push(format!("paddock's log has panics:\n{}", first.join("\n")));
    }
    ensure!(
        failures.is_empty(),
        "{} abuse check(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    p.stop();
    Ok(())
}

fn path() -> String {
    format!("/api/v1/namespaces/{ATTACK_NS}/configmaps")
}

/// A POST's header block: `content-type` and, when given, `content-length`.
fn post_block(content_length: Option<usize>) -> Vec<u8> {
    let mut b = hpack::request("POST", &path());
    hpack::literal_name(&mut b, 31, b"application/json"); // content-type
    if let Some(n) = content_length {
        hpack::literal_name(&mut b, 28, n.to_string().as_bytes()); // content-length
    }
    b
}

/// Odd stream ids from 1.
fn sid(n: u64) -> u32 {
    u32::try_from(2 * n + 1).unwrap_or(u32::MAX) & 0x7fff_ffff
}

/// Runs `case`'s attack on `conn` until its limit or its end.
async fn attack(case: &Case, conn: &Conn) -> Outcome {
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
fn stopped(case: &Case, o: &Outcome) -> Option<(f64, u64)> {
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
struct Row {
    case: &'static Case,
    who: &'static str,
    /// When the case started.
    t0: Instant,
    runs: Vec<Outcome>,
    rss0: u64,
    rss_peak: u64,
    rss1: u64,
    probes: Probes,
    panics: usize,
}

impl Row {
    /// The run stopped last (or not at all), with when.
    fn worst(&self) -> (&Outcome, Option<(f64, u64)>) {
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

    fn line(&self) -> String {
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

    fn failures(&self) -> Vec<String> {
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
struct Prober {
    stop: Arc<AtomicBool>,
    probes: Arc<Mutex<Probes>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug, Clone, Default)]
struct Probes {
    count: u64,
    max: Duration,
    /// The slowest GET: when it started, and whether on a new connection.
    slowest: Option<(Instant, bool)>,
    errors: Vec<String>,
    rss_peak: u64,
}

impl Prober {
    fn start(kubeconfig: &Path, pid: u32) -> Result<Prober> {
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
    fn count(&self) -> u64 {
        self.probes.lock().map(|p| p.count).unwrap_or(0)
    }

    /// What was seen since the last call.
    fn take(&self) -> Probes {
        self.probes
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }

    fn stop(mut self) {
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
fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS")
}

fn count_panics(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|s| s.lines().filter(|l| l.contains("panicked")).count())
        .unwrap_or(0)
}

/// A kubeconfig's CA, client certificate and key (PEM).
struct KubeCred {
    ca: Vec<u8>,
    cert: Vec<u8>,
    key: Vec<u8>,
}

fn read_kubeconfig(path: &Path) -> Result<KubeCred> {
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
