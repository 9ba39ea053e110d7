//! The front door against clients that do not play by the rules (docs/testing.md "Front
//! door", with the figures).
//!
//! - `h2spec_conformance`: h2spec (tests/testbed/tools.sh h2spec) over TLS against paddock's
//!   port, without a client certificate (h2spec cannot present one; paddock answers 401, which
//!   is all h2spec needs). Every generic, HTTP/2 and HPACK test must pass, except the ones in
//!   `H2SPEC_ALLOWED` (front_door/h2spec.rs), each with the RFC clause and why.
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

#[path = "front_door/abuse.rs"]
mod abuse;
#[path = "front_door/h2spec.rs"]
mod h2spec;
use abuse::*;

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
